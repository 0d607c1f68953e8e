import Foundation
import NIOConcurrencyHelpers
import Testing
@testable import Courier

/// MKNetworkKit's "cached now, fresh later", over a fake transport with an injected clock.
@Suite("CachePolicy.cachedThenFresh")
struct CachedThenFreshTests {
    let clock = TestClock()

    /// Serves `body` with an ETag derived from it; answers 304 when the client has that ETag.
    func origin(_ body: NIOLockedValueBox<String>, fail: NIOLockedValueBox<Bool> = NIOLockedValueBox(false)) -> FakeTransport {
        FakeTransport { [clock] request in
            if fail.withLockedValue({ $0 }) { throw NetworkError(.cannotConnect, "down") }
            let current = body.withLockedValue { $0 }
            let etag = "\"\(current)\""
            let headers: HTTPFields = [.cacheControl: "max-age=60", .eTag: etag, .date: HTTPDate.format(clock.now), .contentType: "text/plain"]
            if request.headers[.ifNoneMatch] == etag { return FakeTransport.reply(status: 304, headers: headers, data: Data()) }
            return FakeTransport.reply(status: 200, headers: headers, body: current)
        }
    }

    func engine(_ transport: FakeTransport, queue: NetworkQueue = NetworkQueue()) -> NetworkEngine {
        let cache = ResponseCache(directory: nil, clock: { [clock] in clock.now })
        return NetworkEngine.fake(transport, queue: queue) {
            $0.cache = cache
            $0.cachePolicy = .cachedThenFresh
        }
    }

    func updates(_ operation: NetworkOperation) async -> (names: [String], bodies: [String], error: NetworkError?) {
        var names: [String] = []
        var bodies: [String] = []
        do {
            for try await update in operation.cacheUpdates() {
                switch update {
                case .cached(let response): names.append("cached"); bodies.append(response.string ?? "")
                case .fresh(let response): names.append("fresh"); bodies.append(response.string ?? "")
                case .notModified(let response): names.append("notModified"); bodies.append(response.string ?? "")
                }
            }
            return (names, bodies, nil)
        } catch {
            return (names, bodies, error)
        }
    }

    @Test func nothingStoredGivesJustTheFreshAnswer() async {
        let engine = engine(origin(NIOLockedValueBox("v1")))
        let result = await updates(engine.operation(path: "timeline"))
        #expect(result.names == ["fresh"] && result.bodies == ["v1"])
    }

    @Test func storedThenNotModified() async throws {
        let transport = origin(NIOLockedValueBox("v1"))
        let engine = engine(transport)
        _ = await updates(engine.operation(path: "timeline"))
        let result = await updates(engine.operation(path: "timeline"))
        #expect(result.names == ["cached", "notModified"])
        #expect(result.bodies == ["v1", "v1"])
        #expect(transport.requestCount == 2, "the server is asked even though the stored response is fresh")
        #expect(transport.requests.last?.headers[.ifNoneMatch] == "\"v1\"")
    }

    @Test func storedThenFreshWhenTheServerHasNews() async throws {
        let body = NIOLockedValueBox("v1")
        let engine = engine(origin(body))
        _ = await updates(engine.operation(path: "timeline"))
        body.withLockedValue { $0 = "v2" }
        let result = await updates(engine.operation(path: "timeline"))
        #expect(result.names == ["cached", "fresh"])
        #expect(result.bodies == ["v1", "v2"])
        let third = await updates(engine.operation(path: "timeline"))
        #expect(third.bodies.first == "v2", "the fresh answer was stored")
    }

    @Test func completionHandlersHearBothAnswersOnceEachAndAreToldApart() async throws {
        let engine = engine(origin(NIOLockedValueBox("v1")))
        _ = try await engine.send(engine.operation(path: "timeline"))
        let heard = Recorder<String>()
        let op = engine.operation(path: "timeline")
            .onCompletion { heard.append("\($0.isCachedResponse ? "cached" : "network") \($0.cacheOutcome?.rawValue ?? "-")") }
            .onError { heard.append("error \($0.code)") }
        let final = try await engine.send(op)
        await drain(engine.configuration.callbackQueue)
        #expect(heard.all == ["cached hit", "cached revalidated"])
        #expect(final.cacheOutcome == .revalidated)
    }

    @Test func aNetworkFailureAfterTheCachedAnswerIsReported() async throws {
        let fail = NIOLockedValueBox(false)
        let engine = engine(origin(NIOLockedValueBox("v1"), fail: fail))
        _ = await updates(engine.operation(path: "timeline"))
        fail.withLockedValue { $0 = true }
        let result = await updates(engine.operation(path: "timeline"))
        #expect(result.names == ["cached"])
        #expect(result.error?.code == .cannotConnect)
    }

    @Test func identicalOperationsShareOneRequestAndEachHearsEachAnswerOnce() async throws {
        let transport = origin(NIOLockedValueBox("v1"))
        let queue = NetworkQueue()
        let engine = engine(transport, queue: queue)
        _ = await updates(engine.operation(path: "timeline"))
        let ops = (0..<10).map { _ in engine.operation(path: "timeline") }
        // Held until all ten are in the queue: identical work enqueued together is one request (one that
        // finished before the last was enqueued would rightly be another).
        queue.suspend()
        let results = await withTaskGroup(of: [String].self) { group in
            for op in ops { group.addTask { await updates(op).names } }
            #expect(await eventually { queue.operationCount == 10 })
            queue.go()
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.allSatisfy { $0 == ["cached", "notModified"] }, "\(results)")
        #expect(transport.requestCount == 2)
    }
}
