import CourierTestServer
import Foundation
import Testing
@testable import Courier

/// Tier 3: the pipeline against the in-process server, and authentication and cookies against httpbin.
@Suite("Pipeline end to end")
struct PipelineEndToEndTests {
    /// Fifty requests enqueued with an expired token, through an authenticator whose refresh POSTs to
    /// `path` through an engine without the authenticator (and answers "fresh" when that succeeds).
    static func fiftyRefusedRequests(_ server: TestServer, refreshingAt path: String) -> (BearerTokenAuthenticator, [NetworkOperation]) {
        let tokens = NetworkEngine(host: "127.0.0.1", port: server.port, isSecure: false, queue: NetworkQueue())
        let auth = BearerTokenAuthenticator(token: "expired") { _ in
            _ = try await tokens.send(tokens.operation(path: path, method: .post))
            return "fresh"
        }
        var configuration = NetworkEngine.Configuration()
        configuration.interceptors = [auth]
        let engine = NetworkEngine(
            host: "127.0.0.1", port: server.port, isSecure: false, configuration: configuration, queue: NetworkQueue())
        let ops = (0..<50).map { engine.operation(path: "/bearer/fresh", params: ["n": .int($0)]) }
        for op in ops { engine.enqueue(op) }
        return (auth, ops)
    }

    @Test func fiftyRefusedRequestsCauseOneCallToTheRefreshEndpoint() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let (auth, ops) = Self.fiftyRefusedRequests(server, refreshingAt: "/anything/token")
        for op in ops { #expect(try await op.response().statusCode == 200) }
        #expect(server.requestCount(path: "/anything/token") == 1)
        #expect(auth.refreshCount == 1)
    }

    @Test func aRefreshEndpointThatFailsFailsAllFiftyWithOneTypedError() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let (_, ops) = Self.fiftyRefusedRequests(server, refreshingAt: "/status/500")
        for op in ops {
            let error = await failure(of: op)
            #expect(error?.code == .authenticationFailed)
            #expect((error?.underlying as? NetworkError)?.response?.statusCode == 500, "the refresh's own failure is kept")
        }
        #expect(server.requestCount(path: "/status/500") == 1)
        #expect(server.requestCount(path: "/bearer/fresh") == 50, "none sent again")
    }

    @Test func aRetryPolicyRidesOutAServerThatFailsTwice() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        var configuration = NetworkEngine.Configuration()
        configuration.interceptors = [RetryPolicy(maximumAttempts: 3, backoff: RetryBackoff(base: .milliseconds(20)))]
        let engine = NetworkEngine(
            host: "127.0.0.1", port: server.port, isSecure: false, configuration: configuration, queue: NetworkQueue())
        // /respond answers what the request asks: 503 with Retry-After 0 twice is seen as two failures.
        let op = engine.operation(path: "/respond/flaky")
            .setHeader("503", forName: "X-Respond-Status")
            .setHeader(Data("Retry-After: 0".utf8).base64EncodedString(), forName: "X-Respond-Headers")
        engine.enqueue(op)
        let error = await failure(of: op)
        #expect(error?.response?.statusCode == 503)
        #expect(server.requestCount(path: "/respond/flaky") == 3, "three attempts in all")
        let post = engine.operation(path: "/respond/post", method: .post).setHeader("503", forName: "X-Respond-Status")
        engine.enqueue(post)
        _ = await failure(of: post)
        #expect(server.requestCount(path: "/respond/post") == 1, "a POST is not repeated")
    }
}

/// Authentication and cookies against httpbin.
@Suite("Interop: httpbin authentication and cookies", .enabled(if: HTTPBin.isAvailable, "HTTPBIN_URL is not set: run scripts/test to start httpbin"))
struct HTTPBinAuthInteropTests {
    func engine(_ configure: (inout NetworkEngine.Configuration) -> Void) throws -> NetworkEngine {
        var configuration = NetworkEngine.Configuration()
        configure(&configuration)
        return NetworkEngine(baseURL: try #require(HTTPBin.url), configuration: configuration, queue: NetworkQueue())
    }

    @Test func basicAuthentication() async throws {
        let good = try engine { $0.interceptors = [BasicAuthenticator(user: "u", password: "p")] }
        let response = try await good.send(good.operation(path: "/basic-auth/u/p"))
        #expect((try response.json() as? [String: Any])?["authenticated"] as? Bool == true)
        let bad = try engine { $0.interceptors = [BasicAuthenticator(user: "u", password: "wrong")] }
        let op = bad.operation(path: "/basic-auth/u/p")
        bad.enqueue(op)
        #expect(await failure(of: op)?.response?.statusCode == 401)
    }

    @Test(arguments: ["MD5", "SHA-256"])
    func digestAuthentication(algorithm: String) async throws {
        let good = try engine { $0.interceptors = [DigestAuthenticator(user: "u", password: "p")] }
        let response = try await good.send(good.operation(path: "/digest-auth/auth/u/p/\(algorithm)"))
        #expect((try response.json() as? [String: Any])?["authenticated"] as? Bool == true)
        // Wrong credentials: one answer to the challenge, then a typed failure, not a loop.
        let bad = try engine { $0.interceptors = [DigestAuthenticator(user: "u", password: "wrong")] }
        let op = bad.operation(path: "/digest-auth/auth/u/p/\(algorithm)")
        bad.enqueue(op)
        #expect(await failure(of: op)?.code == .authenticationFailed)
    }

    @Test func cookiesSetByARedirectAreSentAndSurviveARestart() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-jar-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let jar = CookieJar(persistingIn: directory)
        let engine = try engine { $0.cookieJar = jar }
        // /cookies/set answers 302 to /cookies with Set-Cookie: the jar stores it from the redirect and
        // sends it on the next hop.
        let set = try await engine.send(engine.operation(path: "/cookies/set", params: ["a": "1"]))
        #expect((try set.json() as? [String: Any])?["cookies"] as? [String: String] == ["a": "1"])
        await jar.waitUntilPersisted()

        // Only a persistent cookie survives: give it an expiry, then restart with a new jar.
        _ = try await engine.send(engine.operation(path: "/response-headers", params: ["Set-Cookie": "b=2; Max-Age=3600; Path=/"]))
        await jar.waitUntilPersisted()
        let restarted = try self.engine { $0.cookieJar = CookieJar(persistingIn: directory) }
        let after = try await restarted.send(restarted.operation(path: "/cookies"))
        #expect((try after.json() as? [String: Any])?["cookies"] as? [String: String] == ["b": "2"], "the session cookie a=1 is gone, b=2 kept")
    }
}
