import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import Testing
@testable import Courier

/// Tier 2: interceptors, retries and the bearer authenticator over a fake transport.
@Suite("Pipeline over a fake transport")
struct PipelineTests {
    /// Sets a header naming the attempt; records each context it saw.
    final class Stamp: RequestInterceptor {
        let name: String
        let contexts = Recorder<InterceptorContext>()
        init(_ name: String) { self.name = name }
        func adapt(_ request: HTTPRequest, context: InterceptorContext) async throws -> HTTPRequest {
            contexts.append(context)
            var request = request
            let previous = request.headerFields[HTTPField.Name("X-Chain")!].map { $0 + "," } ?? ""
            request.headerFields[HTTPField.Name("X-Chain")!] = previous + "\(name)\(context.attempt)"
            return request
        }
    }

    /// Retries every failure a fixed number of times after `delay`.
    struct RetryAll: RequestInterceptor {
        var times: Int
        var delay: Duration = .zero
        func retry(_ request: HTTPRequest, after failure: NetworkError, attempt: Int) async -> RetryDecision {
            attempt <= times ? .retry(after: delay) : .doNotRetry
        }
    }

    struct Failing: RequestInterceptor {
        struct Broken: Error {}
        func adapt(_ request: HTTPRequest, context: InterceptorContext) async throws -> HTTPRequest { throw Broken() }
    }

    struct Injecting: RequestInterceptor {
        func adapt(_ request: HTTPRequest, context: InterceptorContext) async throws -> HTTPRequest {
            var request = request
            request.headerFields[HTTPField.Name("X-Evil")!] = "a\r\nInjected: yes"
            return request
        }
    }

    @Test func engineThenOperationInterceptorsAdaptEveryAttemptInOrder() async throws {
        let calls = Counter()
        let transport = FakeTransport { _ in
            calls.hit()
            return FakeTransport.reply(status: calls.count() < 3 ? 503 : 200)
        }
        let engineStamp = Stamp("e"), operationStamp = Stamp("o")
        let engine = NetworkEngine.fake(transport) { $0.interceptors = [engineStamp, RetryAll(times: 5)] }
        let response = try await engine.send(engine.operation(path: "/x").intercepted(by: operationStamp))
        #expect(response.statusCode == 200)
        #expect(transport.requests.map { $0.headers[HTTPField.Name("X-Chain")!] } == ["e1,o1", "e2,o2", "e3,o3"])
        #expect(operationStamp.contexts.all.map(\.attempt) == [1, 2, 3])
        #expect(operationStamp.contexts.all.allSatisfy { !$0.isCrossOrigin && $0.redirectCount == 0 })
        #expect(engine.operation(path: "/x").headers[HTTPField.Name("X-Chain")!] == nil, "nothing of it is stored in the operation")
    }

    @Test func aThrowingAdapterFailsTypedAndSendsNothing() async throws {
        let transport = FakeTransport()
        let engine = NetworkEngine.fake(transport) { $0.interceptors = [Failing()] }
        let op = engine.operation(path: "/x")
        engine.enqueue(op)
        let error = await failure(of: op)
        #expect(error?.code == .interceptorFailed)
        #expect(error?.underlying is Failing.Broken)
        #expect(transport.requestCount == 0)
        // A value with CR LF cannot add a header line: the field types turn control characters into spaces.
        let injected = NetworkEngine.fake(transport) { $0.interceptors = [Injecting()] }
        _ = try await injected.send(injected.operation(path: "/y"))
        let sent = try #require(transport.requests.last)
        #expect(sent.headers[HTTPField.Name("Injected")!] == nil)
        #expect(sent.headers[HTTPField.Name("X-Evil")!]?.contains(where: { $0 == "\r" || $0 == "\n" }) == false)
    }

    @Test func aRetryWaitsOutsideTheQueueSoOtherWorkRunsMeanwhile() async throws {
        let attempts = Counter()
        let transport = FakeTransport { request in
            if request.url.path.hasSuffix("/flaky") {
                attempts.hit()
                return FakeTransport.reply(status: attempts.count() == 1 ? 503 : 200)
            }
            return FakeTransport.reply()
        }
        let queue = NetworkQueue(maximumConcurrentOperations: 1)
        let engine = NetworkEngine.fake(transport, queue: queue) { $0.interceptors = [RetryAll(times: 1, delay: .milliseconds(300))] }
        let flaky = engine.operation(path: "/flaky")
        engine.enqueue(flaky)
        #expect(await eventually { attempts.count() == 1 })
        // The only slot is free during the backoff: another request gets through before the retry.
        let other = try await engine.send(engine.operation(path: "/other"))
        #expect(other.statusCode == 200)
        #expect(attempts.count() == 1, "the retry is still waiting")
        #expect(try await flaky.response().statusCode == 200)
        #expect(transport.requests.map(\.url.path) == ["/v1/flaky", "/v1/other", "/v1/flaky"])
    }

    @Test func aRetriedOperationKeepsItsPlaceInLine() async throws {
        let attempts = Counter()
        let transport = FakeTransport { request in
            if request.url.path.hasSuffix("/first") {
                attempts.hit()
                return FakeTransport.reply(status: attempts.count() == 1 ? 503 : 200)
            }
            try await Task.sleep(for: .milliseconds(50))
            return FakeTransport.reply()
        }
        let queue = NetworkQueue(maximumConcurrentOperations: 1, isSuspended: true)
        let engine = NetworkEngine.fake(transport, queue: queue) { $0.interceptors = [RetryAll(times: 1)] }
        let first = engine.operation(path: "/first")
        let later = (0..<3).map { engine.operation(path: "/later\($0)") }
        for op in [first] + later { engine.enqueue(op) }
        queue.go()
        for op in [first] + later { _ = try await op.response() }
        // The retry came back while /later0 ran and went before /later1 and /later2, enqueued after it.
        #expect(transport.requests.map(\.url.path) == ["/v1/first", "/v1/later0", "/v1/first", "/v1/later1", "/v1/later2"])
    }

    @Test func cancellingDuringTheBackoffEndsItAtOnce() async throws {
        let transport = FakeTransport { _ in FakeTransport.reply(status: 503) }
        let engine = NetworkEngine.fake(transport) { $0.interceptors = [RetryAll(times: 3, delay: .seconds(30))] }
        let op = engine.operation(path: "/x")
        engine.enqueue(op)
        #expect(await eventually { transport.requestCount == 1 })
        try await Task.sleep(for: .milliseconds(50))
        let started = ContinuousClock.now
        op.cancel()
        #expect(await failure(of: op)?.code == .cancelled)
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(await eventually { engine.queue.operationCount == 0 })
        #expect(transport.requestCount == 1)
    }

    @Test func operationsWithTheirOwnInterceptorsDoNotShareARequest() async throws {
        let transport = FakeTransport { _ in
            try await Task.sleep(for: .milliseconds(100))
            return FakeTransport.reply()
        }
        let engine = NetworkEngine.fake(transport)
        let plain = (0..<3).map { _ in engine.operation(path: "/same") }
        let own = (0..<2).map { _ in engine.operation(path: "/same").intercepted(by: Stamp("x")) }
        for op in plain + own { engine.enqueue(op) }
        for op in plain + own { _ = try await op.response() }
        #expect(transport.requestCount == 3, "the three plain ones share one; each with its own interceptor runs alone")
        // Two engines with interceptors never share a request either.
        let a = NetworkEngine.fake(transport, queue: engine.queue) { $0.interceptors = [Stamp("a")] }
        let b = NetworkEngine.fake(transport, queue: engine.queue) { $0.interceptors = [Stamp("b")] }
        let pair = [a.operation(path: "/pair"), b.operation(path: "/pair")]
        a.enqueue(pair[0]); b.enqueue(pair[1])
        for op in pair { _ = try await op.response() }
        #expect(Set(transport.requests.suffix(2).compactMap { $0.headers[HTTPField.Name("X-Chain")!] }) == ["a1", "b1"])
    }

    @Test func manyRefusalsCauseOneRefreshAndAllSucceedWithTheNewToken() async throws {
        let refreshes = Counter()
        let transport = FakeTransport { request in
            try await Task.sleep(for: .milliseconds(5))
            return FakeTransport.reply(status: request.headers[.authorization] == "Bearer fresh" ? 200 : 401)
        }
        let auth = BearerTokenAuthenticator(token: "stale") { refused in
            #expect(refused == "stale")
            refreshes.hit()
            try await Task.sleep(for: .milliseconds(100))
            return "fresh"
        }
        let engine = NetworkEngine.fake(transport, queue: NetworkQueue(maximumConcurrentOperations: 6)) { $0.interceptors = [auth] }
        let ops = (0..<50).map { engine.operation(path: "/me", params: ["n": .int($0)]) }
        for op in ops { engine.enqueue(op) }
        for op in ops { #expect(try await op.response().statusCode == 200) }
        #expect(refreshes.count() == 1)
        #expect(auth.token == "fresh")
        #expect(transport.requests.filter { $0.headers[.authorization] == "Bearer fresh" }.count == 50)
    }

    @Test func aFailedRefreshFailsEveryRefusedRequestWithOneError() async throws {
        struct Offline: Error {}
        let refreshes = Counter()
        let transport = FakeTransport { _ in FakeTransport.reply(status: 401) }
        let auth = BearerTokenAuthenticator(token: "stale") { _ in
            refreshes.hit()
            try await Task.sleep(for: .milliseconds(100))
            throw Offline()
        }
        let engine = NetworkEngine.fake(transport) { $0.interceptors = [auth] }
        let ops = (0..<50).map { engine.operation(path: "/me", params: ["n": .int($0)]) }
        for op in ops { engine.enqueue(op) }
        for op in ops {
            let error = await failure(of: op)
            #expect(error?.code == .authenticationFailed)
            #expect(error?.underlying is Offline)
        }
        #expect(refreshes.count() == 1)
        #expect(transport.requestCount == 50, "each sent once, none retried after the refresh failed")
    }

    @Test func theRefreshedTokenRefusedTooFailsInsteadOfLooping() async throws {
        let refreshes = Counter()
        let transport = FakeTransport { _ in FakeTransport.reply(status: 401) }
        let auth = BearerTokenAuthenticator(token: nil) { _ in
            refreshes.hit()
            return "t\(refreshes.count())"
        }
        let engine = NetworkEngine.fake(transport) { $0.interceptors = [auth] }
        let op = engine.operation(path: "/me")
        engine.enqueue(op)
        #expect(await failure(of: op)?.code == .authenticationFailed)
        #expect(refreshes.count() == 1)
        #expect(transport.requests.map { $0.headers[.authorization] } == [nil, "Bearer t1"])
    }

    @Test func credentialsNeverFollowARedirectToAnotherOrigin() async throws {
        let transport = FakeTransport { request in
            if request.url.host == "api.example.com" {
                return FakeTransport.reply(status: 302, headers: [.location: "https://cdn.example.net/file"])
            }
            return FakeTransport.reply()
        }
        let engine = NetworkEngine.fake(transport) {
            $0.interceptors = [BearerTokenAuthenticator(token: "secret") { _ in "other" }, BasicAuthenticator(user: "u", password: "p")]
        }
        _ = try await engine.send(engine.operation(path: "/download"))
        #expect(transport.requests.count == 2)
        #expect(transport.requests[0].headers[.authorization] == "Basic dTpw")
        #expect(transport.requests[1].url.host == "cdn.example.net")
        #expect(transport.requests[1].headers[.authorization] == nil)
    }
}
