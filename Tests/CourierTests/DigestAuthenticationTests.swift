import Foundation
import Testing
@testable import Courier

/// Digest authentication (RFC 7616): the challenge arithmetic and the state machine, event by event.
/// Tier 1, pure: no sockets, the cnonce injected.
@Suite("DigestAuthentication")
struct DigestAuthenticationTests {
    static let mufasa = PasswordCredentials(user: "Mufasa", password: "Circle of Life")
    static let nonce = "7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v"
    static let opaque = "FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS"
    static let cnonce = "f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ"

    /// The RFC 7616 §3.9.1 challenge for `algorithm` (nil: no algorithm parameter).
    static func challenge(algorithm: String?, nonce: String = nonce, qop: String? = "auth, auth-int", stale: Bool = false) -> String {
        var value = #"Digest realm="http-auth@example.org""#
        if let qop { value += #", qop="\#(qop)""# }
        if let algorithm { value += ", algorithm=\(algorithm)" }
        value += #", nonce="\#(nonce)", opaque="\#(opaque)""#
        if stale { value += ", stale=true" }
        return value
    }

    static func challenges(_ values: String...) -> [AuthenticationChallenge] {
        AuthenticationChallenge.parse(values)
    }

    /// A value's auth-params, to compare field by field.
    static func parameters(_ authorization: String?) -> [String: String] {
        guard let authorization, let parsed = AuthenticationChallenge.parse(authorization).first else { return [:] }
        return Dictionary(parsed.parameters.map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first })
    }

    // MARK: RFC 7616 §3.9.1

    @Test func theRFCExampleWithSHA256() throws {
        var machine = DigestAuthenticationStateMachine(credentials: Self.mufasa)
        #expect(machine.authorization(method: "GET", requestTarget: "/dir/index.html", clientNonce: Self.cnonce) == nil)
        #expect(machine.receivedChallenges(Self.challenges(Self.challenge(algorithm: "SHA-256"), Self.challenge(algorithm: "MD5"))) == .retry)
        let value = machine.authorization(method: "GET", requestTarget: "/dir/index.html", clientNonce: Self.cnonce)
        #expect(value == """
            Digest username="Mufasa", realm="http-auth@example.org", uri="/dir/index.html", algorithm=SHA-256, \
            nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", nc=00000001, \
            cnonce="f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ", qop=auth, \
            response="753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1", \
            opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS"
            """)
    }

    @Test func theRFCExampleWithMD5() {
        var machine = DigestAuthenticationStateMachine(credentials: Self.mufasa)
        // The server prefers MD5 here (listed first), so MD5 is used.
        #expect(machine.receivedChallenges(Self.challenges(Self.challenge(algorithm: "MD5"), Self.challenge(algorithm: "SHA-256"))) == .retry)
        let parameters = Self.parameters(machine.authorization(method: "GET", requestTarget: "/dir/index.html", clientNonce: Self.cnonce))
        #expect(parameters["response"] == "8ca523f5e9506fed4657c9700eebdbec")
        #expect(parameters["algorithm"] == "MD5")
        #expect(parameters["nc"] == "00000001")
        #expect(parameters["qop"] == "auth")
        #expect(parameters["opaque"] == Self.opaque)
        #expect(parameters["uri"] == "/dir/index.html")
    }

    @Test func noAlgorithmMeansMD5AndIsNotEchoed() {
        var machine = DigestAuthenticationStateMachine(credentials: Self.mufasa)
        #expect(machine.receivedChallenges(Self.challenges(Self.challenge(algorithm: nil))) == .retry)
        let parameters = Self.parameters(machine.authorization(method: "GET", requestTarget: "/dir/index.html", clientNonce: Self.cnonce))
        #expect(parameters["response"] == "8ca523f5e9506fed4657c9700eebdbec")
        #expect(parameters["algorithm"] == nil)
    }

    @Test func sessionAlgorithmsKeepTheirFirstClientNonce() {
        for (algorithm, expected) in [("MD5-sess", "e783283f46242139c486a698fec7211d"),
                                      ("SHA-256-sess", "2fd51b3a77ad75bad6afad6003e818d767133c46d9e2749e7f5232ae1ea3efd7")] {
            var machine = DigestAuthenticationStateMachine(credentials: Self.mufasa)
            #expect(machine.receivedChallenges(Self.challenges(Self.challenge(algorithm: algorithm))) == .retry)
            let first = Self.parameters(machine.authorization(method: "GET", requestTarget: "/dir/index.html", clientNonce: Self.cnonce))
            #expect(first["response"] == expected, "\(algorithm)")
            machine.receivedSuccess()
            let second = Self.parameters(machine.authorization(method: "GET", requestTarget: "/dir/index.html", clientNonce: "other"))
            #expect(second["cnonce"] == Self.cnonce, "\(algorithm): the session key's cnonce is kept")
            #expect(second["nc"] == "00000002")
        }
    }

    @Test func anRFC2069ChallengeWithoutQop() {
        var machine = DigestAuthenticationStateMachine(credentials: Self.mufasa)
        #expect(machine.receivedChallenges(Self.challenges(Self.challenge(algorithm: "MD5", qop: nil))) == .retry)
        let value = machine.authorization(method: "GET", requestTarget: "/dir/index.html", clientNonce: Self.cnonce)
        let parameters = Self.parameters(value)
        #expect(parameters["response"] == "7b2cc3b30e75b4777ea31027084363fd")
        #expect(parameters["nc"] == nil && parameters["cnonce"] == nil && parameters["qop"] == nil)
    }

    @Test func userhashSendsTheHashedName() {
        var machine = DigestAuthenticationStateMachine(credentials: Self.mufasa)
        _ = machine.receivedChallenges(Self.challenges(Self.challenge(algorithm: "SHA-256") + ", userhash=true"))
        let parameters = Self.parameters(machine.authorization(method: "GET", requestTarget: "/dir/index.html", clientNonce: Self.cnonce))
        #expect(parameters["username"] == "a947aad205e80e429958a387394944c6b496301e79f89d35a4cc23b6ee12b5b6")
        #expect(parameters["userhash"] == "true")
        // The response is still computed over the plain user name.
        #expect(parameters["response"] == "753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1")
    }

    @Test func aNonASCIIUserGoesInUsernameStar() {
        var machine = DigestAuthenticationStateMachine(credentials: PasswordCredentials(user: "J\u{00E4}s\u{00F8}n Doe", password: "Secret, or not?"))
        _ = machine.receivedChallenges(Self.challenges(Self.challenge(algorithm: "SHA-256") + ", charset=UTF-8"))
        let value = machine.authorization(method: "GET", requestTarget: "/doe.json", clientNonce: "c")
        #expect(value?.contains("username*=UTF-8''J%C3%A4s%C3%B8n%20Doe") == true)
        #expect(Self.parameters(value)["username"] == nil)
    }

    @Test func quotesInTheUserNameAreEscaped() {
        var machine = DigestAuthenticationStateMachine(credentials: PasswordCredentials(user: #"a"b\c"#, password: "p"))
        _ = machine.receivedChallenges(Self.challenges(Self.challenge(algorithm: "MD5")))
        let value = machine.authorization(method: "GET", requestTarget: "/", clientNonce: "c")
        #expect(Self.parameters(value)["username"] == #"a"b\c"#)
    }

    // MARK: Nonce counting

    @Test func theNonceCountIncrementsPerRequestAndResetsWithANewNonce() {
        var machine = DigestAuthenticationStateMachine(credentials: Self.mufasa)
        _ = machine.receivedChallenges(Self.challenges(Self.challenge(algorithm: "MD5")))
        var counts: [String?] = []
        for _ in 0..<3 {
            counts.append(Self.parameters(machine.authorization(method: "GET", requestTarget: "/dir/index.html", clientNonce: Self.cnonce))["nc"])
            machine.receivedSuccess()
        }
        #expect(counts == ["00000001", "00000002", "00000003"])
        // nc=2 changes the response as RFC 7616 computes it.
        var again = DigestAuthenticationStateMachine(credentials: Self.mufasa)
        _ = again.receivedChallenges(Self.challenges(Self.challenge(algorithm: "MD5")))
        _ = again.authorization(method: "GET", requestTarget: "/dir/index.html", clientNonce: Self.cnonce)
        again.receivedSuccess()
        let second = Self.parameters(again.authorization(method: "GET", requestTarget: "/dir/index.html", clientNonce: Self.cnonce))
        #expect(second["response"] == "4b5d595ecf2db9df612ea5b45cd97101")

        // A stale challenge brings a new nonce: the count starts again.
        #expect(machine.receivedChallenges(Self.challenges(Self.challenge(algorithm: "MD5", nonce: "new-nonce-123", stale: true))) == .retry)
        let afterStale = Self.parameters(machine.authorization(method: "GET", requestTarget: "/dir/index.html", clientNonce: "c2"))
        #expect(afterStale["nc"] == "00000001")
        #expect(afterStale["nonce"] == "new-nonce-123")
        #expect(afterStale["response"] == "00748c434c4a527833dfffb7e42f5864")
    }

    @Test func nextnonceFromAuthenticationInfoIsAdopted() {
        var machine = DigestAuthenticationStateMachine(credentials: Self.mufasa)
        _ = machine.receivedChallenges(Self.challenges(Self.challenge(algorithm: "MD5")))
        _ = machine.authorization(method: "GET", requestTarget: "/", clientNonce: "c")
        machine.receivedSuccess(authenticationInfo: #"qop=auth, rspauth="x", cnonce="c", nc=00000001, nextnonce="n2""#)
        #expect(machine.currentNonce == "n2")
        let parameters = Self.parameters(machine.authorization(method: "GET", requestTarget: "/", clientNonce: "c"))
        #expect(parameters["nonce"] == "n2")
        #expect(parameters["nc"] == "00000001")
    }

    // MARK: Stale and giving up

    @Test func staleRetriesWithTheNewNonceWithoutBlamingThePassword() {
        var machine = DigestAuthenticationStateMachine(credentials: Self.mufasa)
        #expect(machine.receivedChallenges(Self.challenges(Self.challenge(algorithm: "SHA-256"))) == .retry)
        _ = machine.authorization(method: "GET", requestTarget: "/dir/index.html", clientNonce: "c1")
        #expect(machine.receivedChallenges(Self.challenges(Self.challenge(algorithm: "SHA-256", nonce: "fresh", stale: true))) == .retry)
        #expect(machine.failure == nil)
        let value = machine.authorization(method: "GET", requestTarget: "/dir/index.html", clientNonce: "c2")
        #expect(Self.parameters(value)["nonce"] == "fresh")
        machine.receivedSuccess()
        #expect(machine.failure == nil)
    }

    @Test func aSecondChallengeForTheSameNonceGivesUp() {
        var machine = DigestAuthenticationStateMachine(credentials: PasswordCredentials(user: "Mufasa", password: "wrong"))
        let challenge = Self.challenges(Self.challenge(algorithm: "SHA-256"))
        #expect(machine.receivedChallenges(challenge) == .retry)
        #expect(machine.authorization(method: "GET", requestTarget: "/", clientNonce: "c") != nil)
        #expect(machine.receivedChallenges(challenge) == .fail(.credentialsRejected))
        #expect(machine.failure == .credentialsRejected)
        #expect(machine.failure?.error.code == .authenticationFailed)
        // Nothing more is sent, and any later challenge fails the same way.
        #expect(machine.authorization(method: "GET", requestTarget: "/", clientNonce: "c") == nil)
        #expect(machine.receivedChallenges(Self.challenges(Self.challenge(algorithm: "SHA-256", nonce: "other", stale: true))) == .fail(.credentialsRejected))
    }

    @Test func aFreshNonStaleNonceAfterSendingIsAlsoAWrongPassword() {
        // Servers such as httpbin issue a new nonce with every challenge: it must not loop.
        var machine = DigestAuthenticationStateMachine(credentials: Self.mufasa)
        _ = machine.receivedChallenges(Self.challenges(Self.challenge(algorithm: "MD5", nonce: "n1")))
        _ = machine.authorization(method: "GET", requestTarget: "/", clientNonce: "c")
        #expect(machine.receivedChallenges(Self.challenges(Self.challenge(algorithm: "MD5", nonce: "n2"))) == .fail(.credentialsRejected))
    }

    @Test func staleWithTheNonceJustSentGivesUp() {
        var machine = DigestAuthenticationStateMachine(credentials: Self.mufasa)
        _ = machine.receivedChallenges(Self.challenges(Self.challenge(algorithm: "MD5")))
        _ = machine.authorization(method: "GET", requestTarget: "/", clientNonce: "c")
        #expect(machine.receivedChallenges(Self.challenges(Self.challenge(algorithm: "MD5", stale: true))) == .fail(.credentialsRejected))
    }

    @Test func endlessStaleNoncesAreNotBelievedForever() {
        var machine = DigestAuthenticationStateMachine(credentials: Self.mufasa)
        _ = machine.receivedChallenges(Self.challenges(Self.challenge(algorithm: "MD5")))
        var actions: [DigestAuthenticationStateMachine.ChallengeAction] = []
        for round in 0..<10 {
            _ = machine.authorization(method: "GET", requestTarget: "/", clientNonce: "c")
            actions.append(machine.receivedChallenges(Self.challenges(Self.challenge(algorithm: "MD5", nonce: "n\(round)", stale: true))))
        }
        let retries = actions.prefix { $0 == .retry }.count
        #expect(retries == DigestAuthenticationStateMachine.maximumRenewalsWithoutSuccess)
        #expect(actions.dropFirst(retries).allSatisfy { $0 == .fail(.credentialsRejected) })
    }

    @Test func anAcceptedNonceThatExpiresSilentlyIsRenewedOnce() {
        var machine = DigestAuthenticationStateMachine(credentials: Self.mufasa)
        _ = machine.receivedChallenges(Self.challenges(Self.challenge(algorithm: "MD5", nonce: "n1")))
        _ = machine.authorization(method: "GET", requestTarget: "/a", clientNonce: "c")
        machine.receivedSuccess()
        // A later request reuses n1; the server forgot it and answers without stale.
        _ = machine.authorization(method: "GET", requestTarget: "/b", clientNonce: "c")
        #expect(machine.receivedChallenges(Self.challenges(Self.challenge(algorithm: "MD5", nonce: "n2"))) == .retry)
        _ = machine.authorization(method: "GET", requestTarget: "/b", clientNonce: "c")
        #expect(machine.receivedChallenges(Self.challenges(Self.challenge(algorithm: "MD5", nonce: "n3"))) == .fail(.credentialsRejected))
    }

    // MARK: Choosing a challenge

    @Test func unsupportedChallengesAreRefused() {
        for value in [
            Self.challenge(algorithm: "SHA-512-256"),
            Self.challenge(algorithm: "MD5", qop: "auth-int"),
            #"Digest realm="r""#,  // no nonce
            #"Basic realm="r""#,
            "Bearer",
        ] {
            var machine = DigestAuthenticationStateMachine(credentials: Self.mufasa)
            #expect(machine.receivedChallenges(Self.challenges(value)) == .fail(.unsupportedChallenge), "\(value)")
            #expect(machine.authorization(method: "GET", requestTarget: "/", clientNonce: "c") == nil)
        }
        var machine = DigestAuthenticationStateMachine(credentials: Self.mufasa)
        #expect(machine.receivedChallenges([]) == .fail(.unsupportedChallenge))
        // Why, challenge by challenge.
        let parse = { (value: String) in AuthenticationChallenge.parse(value)[0] }
        #expect(throws: DigestChallenge.Unusable.unsupportedQualityOfProtection) {
            try DigestChallenge(parse(Self.challenge(algorithm: "MD5", qop: "auth-int")))
        }
        #expect(throws: DigestChallenge.Unusable.unsupportedAlgorithm) { try DigestChallenge(parse(Self.challenge(algorithm: "SHA-512-256"))) }
        #expect(throws: DigestChallenge.Unusable.malformed) { try DigestChallenge(parse(#"Digest realm="r", nonce="""#)) }
        #expect(throws: DigestChallenge.Unusable.malformed) { try DigestChallenge(parse(#"Basic realm="r""#)) }
    }

    @Test func theFirstSupportedChallengeIsUsed() {
        var machine = DigestAuthenticationStateMachine(credentials: Self.mufasa)
        let action = machine.receivedChallenges(Self.challenges(
            #"Basic realm="r""#, Self.challenge(algorithm: "SHA-512-256"), Self.challenge(algorithm: "MD5", qop: "auth-int"),
            Self.challenge(algorithm: "sha-256")))
        #expect(action == .retry)
        let parameters = Self.parameters(machine.authorization(method: "GET", requestTarget: "/dir/index.html", clientNonce: Self.cnonce))
        #expect(parameters["algorithm"] == "sha-256", "echoed as the server spelled it")
        #expect(parameters["response"] == "753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1")
    }
}
