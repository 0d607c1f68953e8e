import Courier
import CourierTestServer
import Foundation

extension Demo {
    /// Scene 11: the request pipeline. Ten requests go out with an expired token; those refused wait
    /// while the token is refreshed once, and all ten succeed with the new one. A link to another origin
    /// that redirects to the API arrives there without the token. Then a retry policy rides out a server
    /// answering 503.
    nonisolated func pipeline(_ server: TestServer) async throws {
        say("11. Interceptors: a token refresh and retries")
        let tokens = NetworkEngine(host: "127.0.0.1", port: server.port, isSecure: false, queue: NetworkQueue())
        let auth = BearerTokenAuthenticator(token: "expired") { refused in
            // The refresh goes through an engine without the authenticator.
            _ = try await tokens.send(tokens.operation(path: "/anything/token", method: .post))
            return "fresh"
        }
        let engine = NetworkEngine(host: "127.0.0.1", port: server.port, isSecure: false, configuration: .init {
            $0.dataDirectory = nil
            $0.interceptors = [RetryPolicy(maximumAttempts: 3, backoff: RetryBackoff(base: .milliseconds(50))), auth]
        }, queue: NetworkQueue())
        server.resetStatistics()
        let ops = (0..<10).map { engine.operation(path: "/bearer/fresh", params: ["n": .int($0)]) }
        for op in ops { engine.enqueue(op) }
        var succeeded = 0
        for op in ops where (try? await op.response().statusCode) == 200 { succeeded += 1 }
        say("   10 requests with an expired token, refused with 401: \(server.requestCount(path: "/anything/token")) token refresh, "
            + "\(succeeded) succeeded with the new token (\(server.requestCount(path: "/bearer/fresh")) requests in all)")
        // Credentials follow the chain: a link elsewhere that bounces to the API gets no token there.
        let elsewhere = try await TestServer.start()
        let target = server.url("/anything/account")
        let bounce = elsewhere.url("/redirect-to?url=\(target.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? target)&status=307")
        _ = try? await engine.send(engine.operation(url: bounce, method: .post, body: .json(["transfer": 100])))
        let arrived = server.recordedRequests.last { $0.path == "/anything/account" }
        say("   a POST to a link elsewhere that redirects to the API: it arrives "
            + (arrived?.header("Authorization") == nil ? "without the token" : "WITH the token"))
        try await elsewhere.shutdown()
        let flaky = engine.operation(path: "/respond/busy")
            .setHeader("503", forName: "X-Respond-Status")
            .setHeader(Data("Retry-After: 0".utf8).base64EncodedString(), forName: "X-Respond-Headers")
        let started = ContinuousClock.now
        do throws(NetworkError) {
            _ = try await engine.send(flaky)
        } catch {
            say("   a server answering 503 with Retry-After: 0: \(server.requestCount(path: "/respond/busy")) attempts "
                + "in \((ContinuousClock.now - started).formatted(.units(allowed: [.milliseconds]))), then \(error.code) \(error.response?.statusCode ?? 0)\n")
        }
    }
}
