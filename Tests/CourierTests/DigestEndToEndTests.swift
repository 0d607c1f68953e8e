import Foundation
import Testing
@testable import Courier

/// Tier 3: ``DigestAuthenticator`` through an engine against ``DigestOriginServer``, which checks every
/// answer as RFC 7616 computes it, rotates and forgets nonces, sends `nextnonce`, and has two realms on
/// one origin.
@Suite("Digest end to end")
struct DigestEndToEndTests {
    typealias Realm = DigestOriginServer.Realm

    static func engine(port: Int, _ interceptors: [any RequestInterceptor]) -> NetworkEngine {
        NetworkEngine(
            host: "127.0.0.1", port: port, isSecure: false,
            configuration: .init {
                $0.dataDirectory = nil
                $0.reachability = ManualReachability()
                $0.interceptors = interceptors
            },
            queue: NetworkQueue())
    }

    /// Runs `body` against a server with `options` and an engine with `interceptors` (a Digest
    /// authenticator for ada/secret by default).
    static func withDigestServer(
        _ options: DigestOriginServer.Options, interceptors: [any RequestInterceptor] = [DigestAuthenticator(user: "ada", password: "secret")],
        _ body: (DigestOriginServer, NetworkEngine) async throws -> Void
    ) async throws {
        let server = try await DigestOriginServer.start(options)
        do {
            try await body(server, engine(port: server.port, interceptors))
            try await server.shutdown()
        } catch {
            try? await server.shutdown()
            throw error
        }
    }

    static func get(_ engine: NetworkEngine, _ path: String) async throws -> String {
        let response = try await engine.send(engine.operation(path: path))
        return String(decoding: response.body, as: UTF8.self)
    }

    static func accepted(_ server: DigestOriginServer) -> [DigestOriginServer.LoggedRequest] {
        server.log.filter { $0.verdict == .accepted }
    }

    // MARK: Nonces

    @Test func aNonceTheServerForgetsIsAnsweredOnceWithTheNewOne() async throws {
        // The server forgets each nonce after two uses and challenges again without stale=true.
        try await Self.withDigestServer(.init(realms: [Realm(name: "api", pathPrefix: "/r1", algorithms: ["SHA-256"])], usesPerNonce: 2)) {
            server, engine in
            for index in 0..<6 {
                let body = try await Self.get(engine, "/r1/items/\(index)")
                #expect(body == "api SHA-256")
            }
            let accepted = Self.accepted(server)
            #expect(accepted.map(\.path) == (0..<6).map { "/r1/items/\($0)" })
            #expect(accepted.map { $0.answer["nc"] } == Array(repeating: ["00000001", "00000002"], count: 3).flatMap { $0 })
            #expect(Set(accepted.compactMap { $0.answer["nonce"] }).count == 3, "a new nonce every two requests")
            // The first challenge, then one refused answer per forgotten nonce, each answered once.
            #expect(server.log.map(\.verdict) == [
                .challenged, .accepted, .accepted, .rejected, .accepted, .accepted, .rejected, .accepted, .accepted,
            ])
            #expect(server.log.compactMap(\.reason) == ["unknown nonce", "unknown nonce"])
        }
    }

    @Test func nextnonceIsUsedByTheNextRequest() async throws {
        // Each success carries Authentication-Info: nextnonce, and the nonce just used is forgotten.
        try await Self.withDigestServer(.init(realms: [Realm(name: "api", pathPrefix: "/", algorithms: ["SHA-256"])], sendsNextNonce: true)) {
            server, engine in
            for index in 0..<4 {
                let body = try await Self.get(engine, "/items/\(index)")
                #expect(body == "api SHA-256")
            }
            #expect(server.log.map(\.verdict) == [.challenged, .accepted, .accepted, .accepted, .accepted], "one challenge in all")
            let accepted = Self.accepted(server)
            #expect(accepted.map { $0.answer["nc"] } == Array(repeating: "00000001", count: 4), "nc starts again at 1 with each nextnonce")
            for (previous, next) in zip(accepted, accepted.dropFirst()) {
                #expect(next.answer["nonce"] == previous.issuedNonce)
            }
        }
    }

    // MARK: Protection spaces

    @Test func eachRealmOfAnOriginKeepsItsOwnSession() async throws {
        let options = DigestOriginServer.Options(realms: [
            Realm(name: "one", pathPrefix: "/r1", algorithms: ["SHA-256"]),
            Realm(name: "two", pathPrefix: "/r2", algorithms: ["MD5-sess", "SHA-256-sess"], userhash: true),
        ])
        try await Self.withDigestServer(options) { server, engine in
            for path in ["/r1/a", "/r2/a", "/r1/b", "/r2/b", "/r1/c", "/r2/c"] {
                let body = try await Self.get(engine, path)
                #expect(body == (path.hasPrefix("/r1") ? "one SHA-256" : "two SHA-256-sess"), "\(path)")
            }
            // /r1/a is challenged; /r2/a first answers realm one's challenge (the origin's only one
            // yet) and is challenged for realm two; after that every request is answered at once.
            #expect(server.log.map(\.verdict) == [.challenged, .accepted, .rejected, .accepted, .accepted, .accepted, .accepted, .accepted])
            #expect(server.log.compactMap(\.reason) == ["realm one for two"])
            let accepted = Self.accepted(server)
            #expect(accepted.map { $0.answer["realm"] } == ["one", "two", "one", "two", "one", "two"])
            // Realm one's nc=2 went with the guess for /r2/a.
            #expect(accepted.map { $0.answer["nc"] } == ["00000001", "00000001", "00000003", "00000002", "00000004", "00000003"])
            let two = accepted.filter { $0.answer["realm"] == "two" }
            #expect(two.allSatisfy { $0.answer["userhash"] == "true" && $0.answer["username"] != "ada" })
            #expect(Set(two.compactMap { $0.answer["cnonce"] }).count == 1, "-sess: the session key's cnonce is kept under the nonce")
        }
    }

    @Test func sha256IsPreferredWhenTheServerListsMD5First() async throws {
        try await Self.withDigestServer(.init(realms: [Realm(name: "api", pathPrefix: "/", algorithms: ["MD5", "SHA-256"])])) { server, engine in
            let first = try await Self.get(engine, "/a")
            #expect(first == "api SHA-256")
            let second = try await Self.get(engine, "/b")
            #expect(second == "api SHA-256")
            #expect(Self.accepted(server).map { $0.answer["algorithm"] } == ["SHA-256", "SHA-256"])
        }
    }

    // MARK: Attempts

    static let busyThreeTimes = DigestOriginServer.Options(realms: [Realm(name: "api", pathPrefix: "/", algorithms: ["SHA-256"])], unavailableFirst: 3)

    static func retryingThenDigest(password: String) -> [any RequestInterceptor] {
        [RetryPolicy(maximumAttempts: 6, backoff: RetryBackoff(base: .milliseconds(5))), DigestAuthenticator(user: "ada", password: password)]
    }

    @Test func aFirstChallengeMetAfterRetriesIsAnswered() async throws {
        // Three 503s retried by RetryPolicy: the challenge arrives at the fourth attempt.
        try await Self.withDigestServer(Self.busyThreeTimes, interceptors: Self.retryingThenDigest(password: "secret")) { server, engine in
            let body = try await Self.get(engine, "/a")
            #expect(body == "api SHA-256")
            #expect(server.log.map(\.verdict) == [.unavailable, .unavailable, .unavailable, .challenged, .accepted])
        }
    }

    @Test func aWrongPasswordFailsAfterOneAnsweredChallengeAndNeverLoops() async throws {
        try await Self.withDigestServer(Self.busyThreeTimes, interceptors: Self.retryingThenDigest(password: "wrong")) { server, engine in
            let first = engine.operation(path: "/a")
            engine.enqueue(first)
            let error = await failure(of: first)
            #expect(error?.code == .authenticationFailed)
            #expect(error?.response?.statusCode == 401)
            #expect(server.log.map(\.verdict) == [.unavailable, .unavailable, .unavailable, .challenged, .rejected])
            // The next request answers the newest challenge at once, is refused, and fails: one request.
            let second = engine.operation(path: "/b")
            engine.enqueue(second)
            #expect(await failure(of: second)?.code == .authenticationFailed)
            #expect(server.log.count == 6)
            #expect(server.log.last?.verdict == .rejected)
            #expect(server.log.compactMap(\.reason) == ["response", "response"])
        }
    }

    // MARK: Origins

    @Test func anotherOriginsChallengeIsNeitherAnsweredNorRetried() async throws {
        let options = DigestOriginServer.Options(realms: [Realm(name: "api", pathPrefix: "/", algorithms: ["SHA-256"])])
        let foreign = try await DigestOriginServer.start(options)
        defer { Task { try? await foreign.shutdown() } }
        try await Self.withDigestServer(options) { server, engine in
            let before = try await Self.get(engine, "/a")
            #expect(before == "api SHA-256")
            // An absolute URL to another origin (another port) that challenges with the same realm.
            let away = engine.operation(url: "http://127.0.0.1:\(foreign.port)/private")
            engine.enqueue(away)
            #expect(await failure(of: away)?.response?.statusCode == 401)
            #expect(foreign.log.count == 1, "its challenge is not answered, and not retried")
            #expect(foreign.log.allSatisfy { $0.answer.isEmpty }, "no credentials sent there")
            let after = try await Self.get(engine, "/b")
            #expect(after == "api SHA-256")
            #expect(server.log.map(\.verdict) == [.challenged, .accepted, .accepted])
        }
    }
}
