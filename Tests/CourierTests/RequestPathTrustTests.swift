import CourierTestServer
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import Testing
@testable import Courier

/// Tier 3: the request path's trust defects of issue 24, each the measured scenario through the public
/// API against origins on 127.0.0.1 (two servers: two origins). Redirects, retries and authentication
/// decide about the chain and the request that would be repeated, not the last hop.
@Suite("Request path: redirects, retries and credentials")
struct RequestPathTrustTests {
    private static let quickRetries = RetryPolicy(maximumAttempts: 3, backoff: RetryBackoff(base: .milliseconds(5), maximum: .milliseconds(10)))

    private static func engine(_ server: TestServer, _ configure: (inout NetworkEngine.Configuration) -> Void) -> NetworkEngine {
        var configuration = NetworkEngine.Configuration()
        configuration.reachability = ManualReachability()
        configuration.dataDirectory = nil
        configuration.callbackQueue = DispatchQueue(label: "test.request-path")
        configure(&configuration)
        return NetworkEngine(host: "127.0.0.1", port: server.port, isSecure: false, configuration: configuration, queue: NetworkQueue())
    }

    private static func withServers<T>(_ body: (TestServer, TestServer) async throws -> T) async throws -> T {
        let (api, other) = (try await TestServer.start(), try await TestServer.start())
        defer { Task { try? await api.shutdown(); try? await other.shutdown() } }
        return try await body(api, other)
    }

    private static func query(_ value: String) -> String {
        value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? value
    }

    // MARK: 1. a POST answered 303 is not repeated by a retry of the GET

    @Test(arguments: [false, true])
    func aPostRedirectedBy303IsNotRepeated(withIdempotencyKey: Bool) async throws {
        try await Self.withServers { api, _ in
            let engine = Self.engine(api) { $0.interceptors = [Self.quickRetries] }
            let operation = engine.operation(url: api.url("/redirect-to?url=\(Self.query("/status/503"))&status=303"), method: .post, body: .json(["item": 1]))
            if withIdempotencyKey { operation.setHeader("order-1", forName: "Idempotency-Key") }
            #expect(await failure(of: operation)?.response?.statusCode == 503)
            let posts = api.recordedRequests.filter { $0.method == "POST" }.count
            let gets = api.recordedRequests.filter { $0.method == "GET" }.count
            if withIdempotencyKey {
                #expect(posts == 3 && gets == 3, "a keyed POST may be repeated: \(posts) POSTs, \(gets) GETs")
            } else {
                #expect(posts == 1, "the POST was sent \(posts) times")
                #expect(gets == 1)
            }
        }
    }

    @Test func aBearerRefreshAfterA303DoesNotRepeatThePost() async throws {
        try await Self.withServers { api, _ in
            let auth = BearerTokenAuthenticator(token: "old") { _ in "new" }
            let engine = Self.engine(api) { $0.interceptors = [auth] }
            let operation = engine.operation(url: api.url("/redirect-to?url=\(Self.query("/status/401"))&status=303"), method: .post, body: .json(["item": 1]))
            #expect(await failure(of: operation)?.response?.statusCode == 401)
            #expect(api.recordedRequests.filter { $0.method == "POST" }.count == 1)
        }
    }

    // MARK: 2. a chain that starts at another origin never carries the engine's credentials

    @Test(arguments: ["bearer", "basic"])
    func aForeignRedirectToTheAPIGetsNoCredentials(_ kind: String) async throws {
        try await Self.withServers { api, other in
            let interceptor: any RequestInterceptor = kind == "bearer"
                ? BearerTokenAuthenticator(token: "secret-token") { _ in "secret-token-2" }
                : BasicAuthenticator(user: "ada", password: "secret")
            let engine = Self.engine(api) { $0.interceptors = [interceptor] }
            let target = api.url("/anything/orders")
            let operation = engine.operation(
                url: other.url("/redirect-to?url=\(Self.query(target))&status=307"), method: .post, body: .json(["transfer": 100]))
            let response = try await engine.send(operation)
            #expect(response.statusCode == 200)
            let arrived = try #require(api.recordedRequests.first { $0.path == "/anything/orders" })
            #expect(arrived.method == "POST")
            #expect(arrived.header("Authorization") == nil, "the API got \(arrived.header("Authorization") ?? "") from a chain that began elsewhere")
            #expect(other.recordedRequests.allSatisfy { $0.header("Authorization") == nil })
            // The engine's own requests still carry them.
            _ = try await engine.send(engine.operation(path: "/anything/me"))
            #expect(api.recordedRequests.last?.header("Authorization") != nil)
        }
    }

    @Test func aChainThatLeftTheOriginGetsNoCredentialsWhenItComesBack() async throws {
        try await Self.withServers { api, other in
            let engine = Self.engine(api) { $0.interceptors = [BearerTokenAuthenticator(token: "secret-token") { _ in "x" }] }
            let back = api.url("/anything/back")
            let away = other.url("/redirect-to?url=\(Self.query(back))&status=302")
            _ = try await engine.send(engine.operation(url: api.url("/redirect-to?url=\(Self.query(away))&status=302")))
            #expect(api.recordedRequests.first?.header("Authorization") == "Bearer secret-token", "the first hop is the engine's")
            #expect(other.recordedRequests.first?.header("Authorization") == nil)
            let returned = try #require(api.recordedRequests.first { $0.path == "/anything/back" })
            #expect(returned.header("Authorization") == nil)
        }
    }

    // MARK: 3. an interceptor that rewrites the URL to another host

    struct Rewrite: RequestInterceptor {
        let to: URL
        func adapt(_ request: HTTPRequest, context: InterceptorContext) async throws -> HTTPRequest {
            var request = request
            request.url = to
            return request
        }
    }

    struct SeenURLs: RequestInterceptor {
        let seen: NIOLockedValueBox<[String]>
        func adapt(_ request: HTTPRequest, context: InterceptorContext) async throws -> HTTPRequest {
            seen.withLockedValue { $0.append("\(context.url.absoluteString) cross=\(context.isCrossOrigin)") }
            return request
        }
    }

    @Test(arguments: [true, false])
    func aRewriteToAnotherHostCarriesNeitherTokenNorCookies(rewriteFirst: Bool) async throws {
        try await Self.withServers { api, other in
            let jar = CookieJar()
            let apiURL = try #require(URL(string: api.url("/")))
            jar.setCookies(["session=api-secret; Path=/"], for: apiURL)
            // Another host (cookies ignore ports: 127.0.0.1's would be 127.0.0.1's on any port).
            let mirror = try #require(URL(string: "http://localhost:\(other.port)/anything/mirror"))
            let bearer = BearerTokenAuthenticator(token: "secret-token") { _ in "x" }
            let seen = NIOLockedValueBox<[String]>([])
            let engine = Self.engine(api) {
                $0.cookieJar = jar
                $0.interceptors = rewriteFirst ? [Rewrite(to: mirror), bearer, SeenURLs(seen: seen)] : [bearer, Rewrite(to: mirror), SeenURLs(seen: seen)]
            }
            _ = try await engine.send(engine.operation(path: "/anything/mine"))
            let arrived = try #require(other.recordedRequests.first)
            #expect(arrived.path == "/anything/mirror")
            #expect(arrived.header("Authorization") == nil, "\(arrived.header("Authorization") ?? "")")
            #expect(arrived.header("Cookie") == nil, "\(arrived.header("Cookie") ?? "")")
            #expect(api.recordedRequests.isEmpty)
            #expect(seen.withLockedValue { $0 } == ["\(mirror.absoluteString) cross=true"], "the next interceptor sees the rewritten URL")
        }
    }

    @Test func aRewriteThatSetsItsOwnCredentialKeepsThem() async throws {
        struct Partner: RequestInterceptor {
            let to: URL
            func adapt(_ request: HTTPRequest, context: InterceptorContext) async throws -> HTTPRequest {
                var request = request
                request.url = to
                request.headerFields[.authorization] = "Bearer partner"
                return request
            }
        }
        try await Self.withServers { api, other in
            let mirror = try #require(URL(string: other.url("/anything/partner")))
            let engine = Self.engine(api) { $0.interceptors = [BearerTokenAuthenticator(token: "secret-token") { _ in "x" }, Partner(to: mirror)] }
            _ = try await engine.send(engine.operation(path: "/anything/mine"))
            #expect(other.recordedRequests.first?.header("Authorization") == "Bearer partner")
        }
    }

    // MARK: 4. a 401 from another origin, or to a token that is not the authenticator's

    @Test func aPartnersTokenRefusedElsewhereIsSentOnceAndRefreshesNothing() async throws {
        try await Self.withServers { api, other in
            let auth = BearerTokenAuthenticator(token: "api-token") { _ in "api-token-2" }
            let engine = Self.engine(api) { $0.interceptors = [auth] }
            let operation = engine.operation(url: other.url("/status/401"))
            operation.setHeader("Bearer partner-token", forName: "Authorization")
            #expect(await failure(of: operation)?.response?.statusCode == 401)
            #expect(other.requestCount(path: "/status/401") == 1, "sent \(other.requestCount(path: "/status/401")) times")
            #expect(auth.refreshCount == 0)
        }
    }

    @Test func aPartnersTokenRefusedByTheAPIIsNotRetriedEither() async throws {
        try await Self.withServers { api, _ in
            let auth = BearerTokenAuthenticator(token: nil) { _ in "api-token" }
            let engine = Self.engine(api) { $0.interceptors = [auth] }
            // A token set by hand on the engine's own origin: the authenticator never gave it.
            let operation = engine.operation(path: "/status/401")
            operation.setHeader("Bearer hand-made", forName: "Authorization")
            _ = try? await engine.send(operation)
            #expect(api.requestCount(path: "/status/401") == 1, "sent \(api.requestCount(path: "/status/401")) times")
            #expect(auth.refreshCount == 0)
        }
    }

    @Test func aCDNs401StartsNoRefreshBeforeTheFirstToken() async throws {
        try await Self.withServers { api, other in
            let auth = BearerTokenAuthenticator(token: nil) { _ in "signed-in" }
            let engine = Self.engine(api) { $0.interceptors = [auth] }
            #expect(await failure(of: engine.operation(url: other.url("/status/401")))?.response?.statusCode == 401)
            #expect(auth.refreshCount == 0, "a foreign 401 started the app's sign-in")
            #expect(other.requestCount(path: "/status/401") == 1)
            // The engine's own 401 still does.
            let own = try await engine.send(engine.operation(path: "/bearer/signed-in"))
            #expect(own.statusCode == 200 && auth.refreshCount == 1)
        }
    }

    // MARK: 5. a refresh that never returns

    @Test func aRefreshThatNeverReturnsEndsAtTheTotalTimeout() async throws {
        try await Self.withServers { api, _ in
            let auth = BearerTokenAuthenticator(token: "old") { _ in
                try await Task.sleep(for: .seconds(3600))
                return "never"
            }
            let engine = Self.engine(api) {
                $0.interceptors = [RetryPolicy(maximumTotalTime: .seconds(10)), auth]
                $0.timeouts.total = .milliseconds(600)
            }
            let start = ContinuousClock.now
            let error = await failure(of: engine.operation(path: "/bearer/new"))
            let waited = ContinuousClock.now - start
            #expect(error?.code == .timeout, "\(String(describing: error))")
            #expect(waited < .seconds(30), "waited \(waited)")   // the refresh would take an hour
        }
    }

    @Test func aRefreshThatNeverReturnsEndsWhenTheOperationIsCancelled() async throws {
        try await Self.withServers { api, _ in
            let auth = BearerTokenAuthenticator(token: "old") { _ in
                try await Task.sleep(for: .seconds(3600))
                return "never"
            }
            let engine = Self.engine(api) { $0.interceptors = [auth] }
            let operation = engine.operation(path: "/bearer/new")
            let outcome = Task { await failure(of: operation) }
            #expect(await eventually { auth.refreshCount == 1 })
            let start = ContinuousClock.now
            operation.cancel()
            let error = await outcome.value
            #expect(error?.code == .cancelled, "\(String(describing: error))")
            #expect(ContinuousClock.now - start < .seconds(30))
        }
    }

    @Test func aRefreshThatNeverReturnsFailsAfterItsOwnTimeout() async throws {
        try await Self.withServers { api, _ in
            let calls = NIOLockedValueBox(0)
            let auth = BearerTokenAuthenticator(token: "old", refreshTimeout: .seconds(2)) { _ in   // room for the second, prompt refresh under load
                if calls.withLockedValue({ $0 += 1; return $0 }) == 1 { try await Task.sleep(for: .seconds(3600)) }
                return "new"
            }
            let engine = Self.engine(api) { $0.interceptors = [auth] }
            let start = ContinuousClock.now
            let error = await failure(of: engine.operation(path: "/bearer/new"))
            #expect(error?.code == .authenticationFailed, "\(String(describing: error))")
            #expect(ContinuousClock.now - start < .seconds(30))   // the refresh would take an hour
            auth.setToken("old")   // a new sign-in: the next 401 refreshes again, and this refresh returns
            let response = try await engine.send(engine.operation(path: "/bearer/new"))
            #expect(response.statusCode == 200)
        }
    }

    // MARK: review: a rewrite to another host, then its redirect back

    /// Routes `/redirect-to` requests to another origin (a region router, a mirror).
    struct RouteToOther: RequestInterceptor {
        let authority: String
        func adapt(_ request: HTTPRequest, context: InterceptorContext) async throws -> HTTPRequest {
            guard request.path?.hasPrefix("/redirect-to") == true else { return request }
            var request = request
            request.authority = authority
            return request
        }
    }

    @Test func aHostAnInterceptorRoutedToCannotRedirectBackWithCredentials() async throws {
        try await Self.withServers { api, other in
            let bearer = BearerTokenAuthenticator(token: "secret-token") { _ in "x" }
            let engine = Self.engine(api) { $0.interceptors = [RouteToOther(authority: "127.0.0.1:\(other.port)"), bearer] }
            let headers = ["X-API-Key": "engine-key"]
            let keyed = NetworkEngine(
                host: "127.0.0.1", port: api.port, isSecure: false, headers: headers, configuration: engine.configuration, queue: NetworkQueue())
            let target = api.url("/anything/admin/transfer")
            _ = try? await keyed.send(keyed.operation(url: api.url("/redirect-to?url=\(Self.query(target))&status=307"), method: .post, body: .json(["amount": 100])))
            #expect(other.recordedRequests.first?.path == "/redirect-to", "the interceptor routed it to the other host")
            let arrived = try #require(api.recordedRequests.first { $0.path == "/anything/admin/transfer" })
            #expect(arrived.header("Authorization") == nil, "\(arrived.header("Authorization") ?? "")")
            #expect(arrived.header("X-API-Key") == nil, "\(arrived.header("X-API-Key") ?? "")")
            // A relative Location is the other host's own path.
            _ = try? await engine.send(engine.operation(url: api.url("/redirect-to?url=\(Self.query("/anything/relative"))&status=302")))
            #expect(other.recordedRequests.contains { $0.path == "/anything/relative" })
            #expect(!api.recordedRequests.contains { $0.path == "/anything/relative" })
        }
    }

    // MARK: review: the total timeout is the operation's, retries and refreshes included

    @Test func aTotalTimeoutCoversTheRefreshAndTheRetry() async throws {
        // 2 s for the operation: the refresh takes 1.5 s, the retry with the new token would take 1 s more.
        // Per attempt (as before) the retry had 2 s of its own and succeeded after 2.5 s; within the
        // operation's 2 s it cannot.
        let transport = FakeTransport { request in
            if request.headers[.authorization] == "Bearer new" {
                return FakeTransport.reply(status: 200, headers: [:], data: Data("x".utf8), delay: .seconds(1))
            }
            return FakeTransport.reply(status: 401, headers: [:], data: Data())
        }
        let auth = BearerTokenAuthenticator(token: "old") { _ in
            try await Task.sleep(for: .milliseconds(1500))
            return "new"
        }
        let engine = NetworkEngine.fake(transport) {
            $0.interceptors = [auth]
            $0.timeouts.total = .seconds(2)
        }
        let error = await failure(of: engine.operation(path: "slow"))
        #expect(error?.code == .timeout, "\(String(describing: error))")
    }

    @Test func aTotalTimeoutCoversEveryAttemptOfARetryPolicy() async throws {
        let transport = FakeTransport { _ in
            FakeTransport.reply(status: 503, headers: [:], data: Data("x".utf8), delay: .seconds(1))
        }
        let engine = NetworkEngine.fake(transport) {
            $0.interceptors = [RetryPolicy(maximumAttempts: 5, backoff: RetryBackoff(base: .milliseconds(5), maximum: .milliseconds(10)))]
            $0.timeouts.total = .milliseconds(2500)
        }
        let error = await failure(of: engine.operation(path: "busy"))
        #expect(error?.code == .timeout, "five 503s of a second each would end in the last 503: \(String(describing: error))")
        #expect(transport.requests.count <= 3, "\(transport.requests.count) attempts in 2.5 s of 1 s each")
    }
}
