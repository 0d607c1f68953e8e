import Foundation
import Testing
@testable import Courier

/// Digest authentication (RFC 7616): the challenge arithmetic and the state machine, event by event,
/// for one request after another to one protection space (several at once, several realms and origins:
/// `DigestAuthenticationStateMachineTests`). Tier 1, pure: no sockets, the cnonce injected.
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

    /// Where the requests of these tests go (the RFC's examples leave the origin out).
    static let target = DigestAuthenticationStateMachine.Target(origin: "http://example.org:80", path: "/dir/index.html")

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
        var machine = DigestClient(credentials: Self.mufasa)
        #expect(machine.authorization(for: Self.target, method: "GET", requestTarget: "/dir/index.html", clientNonce: Self.cnonce) == nil)
        #expect(machine.challenge(Self.challenges(Self.challenge(algorithm: "SHA-256"), Self.challenge(algorithm: "MD5"))) == .retry)
        let value = machine.authorization(for: Self.target, method: "GET", requestTarget: "/dir/index.html", clientNonce: Self.cnonce)
        #expect(value == """
            Digest username="Mufasa", realm="http-auth@example.org", uri="/dir/index.html", algorithm=SHA-256, \
            nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", nc=00000001, \
            cnonce="f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ", qop=auth, \
            response="753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1", \
            opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS"
            """)
    }

    @Test func theRFCExampleWithMD5() {
        var machine = DigestClient(credentials: Self.mufasa)
        #expect(machine.challenge(Self.challenges(Self.challenge(algorithm: "MD5"))) == .retry)
        let parameters = Self.parameters(machine.authorization(for: Self.target, method: "GET", requestTarget: "/dir/index.html", clientNonce: Self.cnonce))
        #expect(parameters["response"] == "8ca523f5e9506fed4657c9700eebdbec")
        #expect(parameters["algorithm"] == "MD5")
        #expect(parameters["nc"] == "00000001")
        #expect(parameters["qop"] == "auth")
        #expect(parameters["opaque"] == Self.opaque)
        #expect(parameters["uri"] == "/dir/index.html")
    }

    @Test func sha256IsPreferredToMD5WhateverTheServersOrder() {
        for offered in [["MD5", "SHA-256"], ["MD5-sess", "MD5", "SHA-256-sess"], ["SHA-256", "MD5"]] {
            var machine = DigestClient(credentials: Self.mufasa)
            let challenges = AuthenticationChallenge.parse(offered.map { Self.challenge(algorithm: $0) })
            #expect(machine.challenge(challenges) == .retry)
            let parameters = Self.parameters(machine.authorization(for: Self.target, method: "GET", requestTarget: "/dir/index.html", clientNonce: Self.cnonce))
            #expect(parameters["algorithm"] == offered.first { $0.hasPrefix("SHA-256") }, "\(offered)")
        }
        // Among supported SHA-256 ones, the server's order.
        #expect(DigestAuthenticationStateMachine.preferred(AuthenticationChallenge.parse(
            ["SHA-256-sess", "SHA-256"].map { Self.challenge(algorithm: $0) }))?.algorithm == .sha256Session)
    }

    @Test func noAlgorithmMeansMD5AndIsNotEchoed() {
        var machine = DigestClient(credentials: Self.mufasa)
        #expect(machine.challenge(Self.challenges(Self.challenge(algorithm: nil))) == .retry)
        let parameters = Self.parameters(machine.authorization(for: Self.target, method: "GET", requestTarget: "/dir/index.html", clientNonce: Self.cnonce))
        #expect(parameters["response"] == "8ca523f5e9506fed4657c9700eebdbec")
        #expect(parameters["algorithm"] == nil)
    }

    @Test func sessionAlgorithmsKeepTheirFirstClientNonce() {
        for (algorithm, expected) in [("MD5-sess", "e783283f46242139c486a698fec7211d"),
                                      ("SHA-256-sess", "2fd51b3a77ad75bad6afad6003e818d767133c46d9e2749e7f5232ae1ea3efd7")] {
            var machine = DigestClient(credentials: Self.mufasa)
            #expect(machine.challenge(Self.challenges(Self.challenge(algorithm: algorithm))) == .retry)
            let first = Self.parameters(machine.authorization(for: Self.target, method: "GET", requestTarget: "/dir/index.html", clientNonce: Self.cnonce))
            #expect(first["response"] == expected, "\(algorithm)")
            machine.success()
            let second = Self.parameters(machine.authorization(for: Self.target, method: "GET", requestTarget: "/dir/index.html", clientNonce: "other"))
            #expect(second["cnonce"] == Self.cnonce, "\(algorithm): the session key's cnonce is kept")
            #expect(second["nc"] == "00000002")
        }
    }

    @Test func anRFC2069ChallengeWithoutQop() {
        var machine = DigestClient(credentials: Self.mufasa)
        #expect(machine.challenge(Self.challenges(Self.challenge(algorithm: "MD5", qop: nil))) == .retry)
        let value = machine.authorization(for: Self.target, method: "GET", requestTarget: "/dir/index.html", clientNonce: Self.cnonce)
        let parameters = Self.parameters(value)
        #expect(parameters["response"] == "7b2cc3b30e75b4777ea31027084363fd")
        #expect(parameters["nc"] == nil && parameters["cnonce"] == nil && parameters["qop"] == nil)
    }

    @Test func userhashSendsTheHashedName() {
        var machine = DigestClient(credentials: Self.mufasa)
        _ = machine.challenge(Self.challenges(Self.challenge(algorithm: "SHA-256") + ", userhash=true"))
        let parameters = Self.parameters(machine.authorization(for: Self.target, method: "GET", requestTarget: "/dir/index.html", clientNonce: Self.cnonce))
        #expect(parameters["username"] == "a947aad205e80e429958a387394944c6b496301e79f89d35a4cc23b6ee12b5b6")
        #expect(parameters["userhash"] == "true")
        // The response is still computed over the plain user name.
        #expect(parameters["response"] == "753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1")
    }

    @Test func aNonASCIIUserGoesInUsernameStar() {
        var machine = DigestClient(credentials: PasswordCredentials(user: "J\u{00E4}s\u{00F8}n Doe", password: "Secret, or not?"))
        _ = machine.challenge(Self.challenges(Self.challenge(algorithm: "SHA-256") + ", charset=UTF-8"))
        let value = machine.authorization(for: Self.target, method: "GET", requestTarget: "/doe.json", clientNonce: "c")
        #expect(value?.contains("username*=UTF-8''J%C3%A4s%C3%B8n%20Doe") == true)
        #expect(Self.parameters(value)["username"] == nil)
    }

    @Test func quotesInTheUserNameAreEscaped() {
        var machine = DigestClient(credentials: PasswordCredentials(user: #"a"b\c"#, password: "p"))
        _ = machine.challenge(Self.challenges(Self.challenge(algorithm: "MD5")))
        let value = machine.authorization(for: Self.target, method: "GET", requestTarget: "/", clientNonce: "c")
        #expect(Self.parameters(value)["username"] == #"a"b\c"#)
    }

    // MARK: Nonce counting

    @Test func theNonceCountIncrementsPerRequestAndResetsWithANewNonce() {
        var machine = DigestClient(credentials: Self.mufasa)
        _ = machine.challenge(Self.challenges(Self.challenge(algorithm: "MD5")))
        var counts: [String?] = []
        for _ in 0..<3 {
            counts.append(Self.parameters(machine.authorization(for: Self.target, method: "GET", requestTarget: "/dir/index.html", clientNonce: Self.cnonce))["nc"])
            machine.success()
        }
        #expect(counts == ["00000001", "00000002", "00000003"])
        // nc=2 changes the response as RFC 7616 computes it.
        var again = DigestClient(credentials: Self.mufasa)
        _ = again.challenge(Self.challenges(Self.challenge(algorithm: "MD5")))
        _ = again.authorization(for: Self.target, method: "GET", requestTarget: "/dir/index.html", clientNonce: Self.cnonce)
        again.success()
        let second = Self.parameters(again.authorization(for: Self.target, method: "GET", requestTarget: "/dir/index.html", clientNonce: Self.cnonce))
        #expect(second["response"] == "4b5d595ecf2db9df612ea5b45cd97101")

        // A stale challenge brings a new nonce: the count starts again.
        #expect(machine.challenge(Self.challenges(Self.challenge(algorithm: "MD5", nonce: "new-nonce-123", stale: true))) == .retry)
        let afterStale = Self.parameters(machine.authorization(for: Self.target, method: "GET", requestTarget: "/dir/index.html", clientNonce: "c2"))
        #expect(afterStale["nc"] == "00000001")
        #expect(afterStale["nonce"] == "new-nonce-123")
        #expect(afterStale["response"] == "00748c434c4a527833dfffb7e42f5864")
    }

    @Test func nextnonceFromAuthenticationInfoIsAdopted() {
        var machine = DigestClient(credentials: Self.mufasa)
        _ = machine.challenge(Self.challenges(Self.challenge(algorithm: "MD5")))
        _ = machine.authorization(for: Self.target, method: "GET", requestTarget: "/", clientNonce: "c")
        machine.success(authenticationInfo: #"qop=auth, rspauth="x", cnonce="c", nc=00000001, nextnonce="n2""#)
        #expect(machine.currentNonce == "n2")
        let parameters = Self.parameters(machine.authorization(for: Self.target, method: "GET", requestTarget: "/", clientNonce: "c"))
        #expect(parameters["nonce"] == "n2")
        #expect(parameters["nc"] == "00000001")
    }

    // MARK: Stale and giving up

    @Test func staleRetriesWithTheNewNonceWithoutBlamingThePassword() {
        var machine = DigestClient(credentials: Self.mufasa)
        #expect(machine.challenge(Self.challenges(Self.challenge(algorithm: "SHA-256"))) == .retry)
        _ = machine.authorization(for: Self.target, method: "GET", requestTarget: "/dir/index.html", clientNonce: "c1")
        #expect(machine.challenge(Self.challenges(Self.challenge(algorithm: "SHA-256", nonce: "fresh", stale: true))) == .retry)
        let value = machine.authorization(for: Self.target, method: "GET", requestTarget: "/dir/index.html", clientNonce: "c2")
        #expect(Self.parameters(value)["nonce"] == "fresh")
        machine.success()
        #expect(machine.currentNonce == "fresh")
    }

    @Test func aSecondChallengeForTheSameNonceGivesUp() {
        var machine = DigestClient(credentials: PasswordCredentials(user: "Mufasa", password: "wrong"))
        let challenge = Self.challenges(Self.challenge(algorithm: "SHA-256"))
        #expect(machine.challenge(challenge) == .retry)
        #expect(machine.authorization(for: Self.target, method: "GET", requestTarget: "/", clientNonce: "c") != nil)
        #expect(machine.challenge(challenge) == .fail(.credentialsRejected))
        // The next request answers once more (a server may refuse one path and not another) and fails
        // the same way: one answer per request, never a loop.
        #expect(machine.authorization(for: Self.target, method: "GET", requestTarget: "/", clientNonce: "c") != nil)
        #expect(machine.challenge(challenge) == .fail(.credentialsRejected))
        // A stale challenge says the password was right: answered (at most twice in a row without a success).
        _ = machine.authorization(for: Self.target, method: "GET", requestTarget: "/", clientNonce: "c")
        #expect(machine.challenge(Self.challenges(Self.challenge(algorithm: "SHA-256", nonce: "other", stale: true))) == .retry)
    }

    @Test func aFreshNonStaleNonceAfterSendingIsAlsoAWrongPassword() {
        // Servers such as httpbin issue a new nonce with every challenge: it must not loop.
        var machine = DigestClient(credentials: Self.mufasa)
        _ = machine.challenge(Self.challenges(Self.challenge(algorithm: "MD5", nonce: "n1")))
        _ = machine.authorization(for: Self.target, method: "GET", requestTarget: "/", clientNonce: "c")
        #expect(machine.challenge(Self.challenges(Self.challenge(algorithm: "MD5", nonce: "n2"))) == .fail(.credentialsRejected))
        // The next request starts from the newest nonce.
        #expect(Self.parameters(machine.authorization(for: Self.target, method: "GET", requestTarget: "/", clientNonce: "c"))["nonce"] == "n2")
    }

    @Test func staleWithTheNonceJustSentGivesUp() {
        var machine = DigestClient(credentials: Self.mufasa)
        _ = machine.challenge(Self.challenges(Self.challenge(algorithm: "MD5")))
        _ = machine.authorization(for: Self.target, method: "GET", requestTarget: "/", clientNonce: "c")
        #expect(machine.challenge(Self.challenges(Self.challenge(algorithm: "MD5", stale: true))) == .fail(.credentialsRejected))
    }

    @Test func endlessStaleNoncesAreNotBelievedForever() {
        var machine = DigestClient(credentials: Self.mufasa)
        _ = machine.challenge(Self.challenges(Self.challenge(algorithm: "MD5")))
        var actions: [DigestAuthenticationStateMachine.ChallengeAction] = []
        for round in 0..<10 {
            _ = machine.authorization(for: Self.target, method: "GET", requestTarget: "/", clientNonce: "c")
            actions.append(machine.challenge(Self.challenges(Self.challenge(algorithm: "MD5", nonce: "n\(round)", stale: true))))
        }
        let retries = actions.prefix { $0 == .retry }.count
        #expect(retries == DigestAuthenticationStateMachine.maximumRenewalsWithoutSuccess)
        #expect(actions.dropFirst(retries).allSatisfy { $0 == .fail(.credentialsRejected) })
    }

    @Test func anAcceptedNonceThatExpiresSilentlyIsRenewedOnce() {
        var machine = DigestClient(credentials: Self.mufasa)
        _ = machine.challenge(Self.challenges(Self.challenge(algorithm: "MD5", nonce: "n1")))
        _ = machine.authorization(for: Self.target, method: "GET", requestTarget: "/a", clientNonce: "c")
        machine.success()
        // A later request reuses n1; the server forgot it and answers without stale.
        _ = machine.authorization(for: Self.target, method: "GET", requestTarget: "/b", clientNonce: "c")
        #expect(machine.challenge(Self.challenges(Self.challenge(algorithm: "MD5", nonce: "n2"))) == .retry)
        _ = machine.authorization(for: Self.target, method: "GET", requestTarget: "/b", clientNonce: "c")
        #expect(machine.challenge(Self.challenges(Self.challenge(algorithm: "MD5", nonce: "n3"))) == .fail(.credentialsRejected))
    }

    @Test func aServerThatForgetsEveryNonceAfterTwoUsesIsFollowedForever() {
        var machine = DigestClient(credentials: Self.mufasa)
        _ = machine.challenge(Self.challenges(Self.challenge(algorithm: "SHA-256", nonce: "n0")))
        var nonces: [String?] = []
        for round in 1...10 {
            nonces.append(Self.parameters(machine.authorization(for: Self.target, method: "GET", requestTarget: "/", clientNonce: "c"))["nonce"])
            machine.success()
            nonces.append(Self.parameters(machine.authorization(for: Self.target, method: "GET", requestTarget: "/", clientNonce: "c"))["nonce"])
            machine.success()
            // The third use finds the nonce forgotten: a new one, without stale.
            _ = machine.authorization(for: Self.target, method: "GET", requestTarget: "/", clientNonce: "c")
            #expect(machine.challenge(Self.challenges(Self.challenge(algorithm: "SHA-256", nonce: "n\(round)"))) == .retry, "round \(round)")
        }
        #expect(nonces == (0..<10).flatMap { ["n\($0)", "n\($0)"] })
    }

    // MARK: Choosing a challenge

    @Test func unsupportedChallengesAreRefused() {
        for value in [
            Self.challenge(algorithm: "SHA-512-256"),
            Self.challenge(algorithm: "MD5", qop: "auth-int"),
            #"Digest realm="r""#,  // no nonce
        ] {
            var machine = DigestClient(credentials: Self.mufasa)
            #expect(machine.challenge(Self.challenges(value)) == .fail(.unsupportedChallenge), "\(value)")
            #expect(machine.authorization(for: Self.target, method: "GET", requestTarget: "/", clientNonce: "c") == nil)
        }
        var machine = DigestClient(credentials: Self.mufasa)
        // No Digest challenge at all (another authenticator's, or none): not this machine's business.
        #expect(machine.challenge([]) == .ignore)
        #expect(machine.challenge(Self.challenges(#"Basic realm="r""#, "Bearer")) == .ignore)
        // Why, challenge by challenge.
        let parse = { (value: String) in AuthenticationChallenge.parse(value)[0] }
        #expect(throws: DigestChallenge.Unusable.unsupportedQualityOfProtection) {
            try DigestChallenge(parse(Self.challenge(algorithm: "MD5", qop: "auth-int")))
        }
        #expect(throws: DigestChallenge.Unusable.unsupportedAlgorithm) { try DigestChallenge(parse(Self.challenge(algorithm: "SHA-512-256"))) }
        #expect(throws: DigestChallenge.Unusable.malformed) { try DigestChallenge(parse(#"Digest realm="r", nonce="""#)) }
        #expect(throws: DigestChallenge.Unusable.malformed) { try DigestChallenge(parse(#"Basic realm="r""#)) }
    }

    @Test func theFirstSupportedChallengeIsUsedWhenNoneIsSHA256() {
        var machine = DigestClient(credentials: Self.mufasa)
        let action = machine.challenge(Self.challenges(
            #"Basic realm="r""#, Self.challenge(algorithm: "SHA-512-256"), Self.challenge(algorithm: "MD5", qop: "auth-int"),
            Self.challenge(algorithm: "md5"), Self.challenge(algorithm: "MD5-sess")))
        #expect(action == .retry)
        let parameters = Self.parameters(machine.authorization(for: Self.target, method: "GET", requestTarget: "/dir/index.html", clientNonce: Self.cnonce))
        #expect(parameters["algorithm"] == "md5", "echoed as the server spelled it")
        #expect(parameters["response"] == "8ca523f5e9506fed4657c9700eebdbec")
    }

    @Test func theFirstSupportedChallengeIsUsed() {
        var machine = DigestClient(credentials: Self.mufasa)
        let action = machine.challenge(Self.challenges(
            #"Basic realm="r""#, Self.challenge(algorithm: "SHA-512-256"), Self.challenge(algorithm: "MD5", qop: "auth-int"),
            Self.challenge(algorithm: "sha-256")))
        #expect(action == .retry)
        let parameters = Self.parameters(machine.authorization(for: Self.target, method: "GET", requestTarget: "/dir/index.html", clientNonce: Self.cnonce))
        #expect(parameters["algorithm"] == "sha-256", "echoed as the server spelled it")
        #expect(parameters["response"] == "753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1")
    }
}

/// The state machine as one client sending one request after another: each event names the target and
/// the `Authorization` value of the last ``authorization(for:method:requestTarget:clientNonce:)``, as
/// ``DigestAuthenticator`` does with the request it sent.
struct DigestClient {
    var machine: DigestAuthenticationStateMachine
    var lastTarget = DigestAuthenticationTests.target
    var lastAuthorization: String?

    init(credentials: PasswordCredentials) {
        machine = DigestAuthenticationStateMachine(credentials: credentials)
    }

    var sent: DigestAuthenticationStateMachine.Sent? { DigestAuthenticationStateMachine.Sent(authorization: lastAuthorization) }

    /// The nonce of the space the last target belongs to.
    var currentNonce: String? {
        machine.realm(for: lastTarget).flatMap { machine.currentNonce(in: .init(origin: lastTarget.origin, realm: $0)) }
    }

    mutating func authorization(for target: DigestAuthenticationStateMachine.Target, method: String, requestTarget: String, clientNonce: String) -> String? {
        lastTarget = target
        lastAuthorization = machine.authorization(for: target, method: method, requestTarget: requestTarget, clientNonce: clientNonce)
        return lastAuthorization
    }

    mutating func challenge(_ challenges: [AuthenticationChallenge]) -> DigestAuthenticationStateMachine.ChallengeAction {
        machine.receivedChallenges(challenges, for: lastTarget, sent: sent)
    }

    mutating func success(authenticationInfo: String? = nil) {
        guard let sent else { return }
        machine.receivedSuccess(for: lastTarget, sent: sent, authenticationInfo: authenticationInfo)
    }
}
