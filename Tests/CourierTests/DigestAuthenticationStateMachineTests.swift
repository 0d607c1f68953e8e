import Foundation
import Testing
@testable import Courier

/// The Digest state machine across protection spaces (origins and realms) and with several requests in
/// flight, event by event. Tier 1, pure.
@Suite("DigestAuthenticationStateMachine")
struct DigestAuthenticationStateMachineTests {
    typealias Machine = DigestAuthenticationStateMachine
    static let origin = "http://api.example.org:80"

    static func target(_ path: String, origin: String = origin) -> Machine.Target {
        Machine.Target(origin: origin, path: path)
    }

    static func challenge(realm: String, nonce: String, algorithm: String = "SHA-256", stale: Bool = false, extra: String = "") -> [AuthenticationChallenge] {
        var value = #"Digest realm="\#(realm)", qop="auth", algorithm=\#(algorithm), nonce="\#(nonce)""#
        if stale { value += ", stale=true" }
        return AuthenticationChallenge.parse(value + extra)
    }

    /// Sends a request to `path` and returns what it carried (`nil`: no credentials).
    static func send(_ machine: inout Machine, _ path: String, origin: String = origin) -> Machine.Sent? {
        Machine.Sent(authorization: machine.authorization(for: target(path, origin: origin), method: "GET", requestTarget: path, clientNonce: "c"))
    }

    static func nc(_ machine: inout Machine, _ path: String) -> String? {
        let value = machine.authorization(for: target(path), method: "GET", requestTarget: path, clientNonce: "c")
        return DigestAuthenticationTests.parameters(value)["nc"]
    }

    // MARK: Protection spaces

    @Test func twoRealmsOfOneOriginKeepTheirOwnNonceAndCount() {
        var machine = Machine(credentials: DigestAuthenticationTests.mufasa)
        #expect(Self.send(&machine, "/r1/a") == nil)
        #expect(machine.receivedChallenges(Self.challenge(realm: "one", nonce: "n1"), for: Self.target("/r1/a"), sent: nil) == .retry)
        let first = Self.send(&machine, "/r1/a")
        #expect(first == Machine.Sent(realm: "one", nonce: "n1"))
        machine.receivedSuccess(for: Self.target("/r1/a"), sent: first!)
        // /r2 has not been challenged: realm one is the origin's only realm yet, and is answered.
        let guess = Self.send(&machine, "/r2/a")
        #expect(guess?.realm == "one")
        // A challenge for another realm than the one answered is that realm's first: not a wrong password.
        #expect(machine.receivedChallenges(Self.challenge(realm: "two", nonce: "m1"), for: Self.target("/r2/a"), sent: guess) == .retry)
        let second = Self.send(&machine, "/r2/a")
        #expect(second == Machine.Sent(realm: "two", nonce: "m1"))
        machine.receivedSuccess(for: Self.target("/r2/a"), sent: second!)
        // From now on each path goes to its realm, each counting its own nonce.
        #expect(Self.nc(&machine, "/r1/b") == "00000003", "n1 was used by /r1/a and the guess for /r2/a")
        #expect(Self.nc(&machine, "/r2/b") == "00000002")
        #expect(Self.send(&machine, "/r1/c")?.realm == "one")
        #expect(Self.send(&machine, "/r2/c/d")?.realm == "two")
        #expect(machine.currentNonce(in: .init(origin: Self.origin, realm: "one")) == "n1")
        #expect(machine.currentNonce(in: .init(origin: Self.origin, realm: "two")) == "m1")
    }

    @Test func aServerBouncingBetweenRealmsIsAnsweredABoundedNumberOfTimes() {
        // A wrong password against a server whose 401s alternate between two realms, a new nonce each time.
        var machine = Machine(credentials: DigestAuthenticationTests.mufasa)
        var sent = Self.send(&machine, "/x")
        var answers = 0
        var last: Machine.ChallengeAction = .retry
        for round in 0..<16 {
            last = machine.receivedChallenges(Self.challenge(realm: "realm-\(round % 2)", nonce: "n\(round)"), for: Self.target("/x"), sent: sent)
            guard last == .retry else { break }
            answers += 1
            sent = Self.send(&machine, "/x")
        }
        #expect(last == .fail(.credentialsRejected))
        #expect(answers <= 2 + 2 * Machine.maximumRenewalsWithoutSuccess, "\(answers) answers")
    }

    @Test func aRejectionInOneRealmLeavesTheOtherAlone() {
        var machine = Machine(credentials: DigestAuthenticationTests.mufasa)
        _ = machine.receivedChallenges(Self.challenge(realm: "one", nonce: "n1"), for: Self.target("/r1/a"), sent: nil)
        _ = machine.receivedChallenges(Self.challenge(realm: "two", nonce: "m1"), for: Self.target("/r2/a"), sent: nil)
        let two = Self.send(&machine, "/r2/a")
        #expect(machine.receivedChallenges(Self.challenge(realm: "two", nonce: "m1"), for: Self.target("/r2/a"), sent: two) == .fail(.credentialsRejected))
        let one = Self.send(&machine, "/r1/a")
        #expect(one == Machine.Sent(realm: "one", nonce: "n1"))
        machine.receivedSuccess(for: Self.target("/r1/a"), sent: one!)
    }

    @Test func theDomainParameterNamesThePathsOfARealm() {
        var machine = Machine(credentials: DigestAuthenticationTests.mufasa)
        let domain = #", domain="/admin/ http://api.example.org/reports/ http://elsewhere.example/x/""#
        _ = machine.receivedChallenges(Self.challenge(realm: "staff", nonce: "s1", extra: domain), for: Self.target("/login"), sent: nil)
        _ = machine.receivedChallenges(Self.challenge(realm: "public", nonce: "p1"), for: Self.target("/items/1"), sent: nil)
        #expect(machine.realm(for: Self.target("/admin/users")) == "staff")
        #expect(machine.realm(for: Self.target("/reports/2024")) == "staff")
        #expect(machine.realm(for: Self.target("/items/2")) == "public")
        #expect(machine.realm(for: Self.target("/x/1")) == "public", "another origin's URI in domain is not this origin's")
    }

    @Test func credentialsStayWithTheOriginThatChallenged() {
        var machine = Machine(credentials: DigestAuthenticationTests.mufasa)
        _ = machine.receivedChallenges(Self.challenge(realm: "api", nonce: "n1"), for: Self.target("/a"), sent: nil)
        #expect(Self.send(&machine, "/a") != nil)
        for other in ["http://api.example.org:8080", "https://api.example.org:443", "http://other.example.org:80"] {
            #expect(Self.send(&machine, "/a", origin: other) == nil, "\(other)")
        }
    }

    // MARK: Several requests at once

    @Test func requestsInFlightWhenTheNonceIsRenewedRetryWithTheNewOneWithoutCountingARenewal() {
        var machine = Machine(credentials: DigestAuthenticationTests.mufasa)
        _ = machine.receivedChallenges(Self.challenge(realm: "api", nonce: "n1"), for: Self.target("/"), sent: nil)
        let warmUp = Self.send(&machine, "/")!
        machine.receivedSuccess(for: Self.target("/"), sent: warmUp)
        // Five requests under n1; the server restarts; each is challenged with a nonce of its own.
        let sent = (0..<5).map { Self.send(&machine, "/\($0)")! }
        var actions: [Machine.ChallengeAction] = []
        for (index, request) in sent.enumerated() {
            actions.append(machine.receivedChallenges(Self.challenge(realm: "api", nonce: "r\(index)"), for: Self.target("/\(index)"), sent: request))
        }
        #expect(actions == Array(repeating: .retry, count: 5))
        // The first renewal won; the others retry with its nonce.
        #expect(machine.currentNonce(in: .init(origin: Self.origin, realm: "api")) == "r0")
        let retried = (0..<5).map { Self.send(&machine, "/\($0)")! }
        #expect(retried.allSatisfy { $0.nonce == "r0" })
        #expect(Self.nc(&machine, "/next") == "00000006")
    }

    @Test func aRequestSentWithoutCredentialsMeetsTheSessionsNonce() {
        var machine = Machine(credentials: DigestAuthenticationTests.mufasa)
        _ = machine.receivedChallenges(Self.challenge(realm: "api", nonce: "n1"), for: Self.target("/a"), sent: nil)
        let first = Self.send(&machine, "/a")!
        machine.receivedSuccess(for: Self.target("/a"), sent: first)
        // A request that left before the first challenge was answered is refused with the same nonce:
        // the session is kept, with its count.
        #expect(machine.receivedChallenges(Self.challenge(realm: "api", nonce: "n1"), for: Self.target("/b"), sent: nil) == .retry)
        #expect(Self.nc(&machine, "/b") == "00000002")
    }

    @Test func aLateSuccessUnderAnOlderNonceLeavesTheSessionOnTheNewOne() {
        var machine = Machine(credentials: DigestAuthenticationTests.mufasa)
        _ = machine.receivedChallenges(Self.challenge(realm: "api", nonce: "n1"), for: Self.target("/"), sent: nil)
        let slow = Self.send(&machine, "/slow")!
        let quick = Self.send(&machine, "/quick")!
        machine.receivedSuccess(for: Self.target("/quick"), sent: quick, authenticationInfo: #"nextnonce="n2""#)
        machine.receivedSuccess(for: Self.target("/slow"), sent: slow)
        #expect(machine.currentNonce(in: .init(origin: Self.origin, realm: "api")) == "n2")
        #expect(Self.nc(&machine, "/") == "00000001")
    }

    // MARK: Reading what was sent

    @Test func whatAnAuthorizationValueAnswered() {
        #expect(Machine.Sent(authorization: #"Digest username="u", realm="r", nonce="n", uri="/", response="x""#) == Machine.Sent(realm: "r", nonce: "n"))
        #expect(Machine.Sent(authorization: "Bearer abc") == nil)
        #expect(Machine.Sent(authorization: #"Digest username="u""#) == nil)
        #expect(Machine.Sent(authorization: nil) == nil)
    }
}
