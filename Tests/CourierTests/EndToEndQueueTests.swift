import CourierTestServer
import Foundation
import Testing
@testable import Courier

/// Tier 3: the queue's promises, checked at a real server on 127.0.0.1.
@Suite("End to end: queue")
struct EndToEndQueueTests {
    @Test func twoHundredIdenticalGETsThroughFiveEnginesMakeOneRequest() async throws {
        try await withServer { server, engine in
            let engines = [engine] + (0..<4).map { _ in
                NetworkEngine(host: "127.0.0.1", port: server.port, isSecure: false, configuration: engine.configuration, queue: engine.queue)
            }
            let calls = Counter()
            let ops = (0..<200).map { i in
                engines[i % 5].operation(path: "/delay/200")
                    .onCompletion { _ in calls.hit("completion") }
                    .onError { _ in calls.hit("error") }
            }
            for (i, op) in ops.enumerated() { engines[i % 5].enqueue(op) }
            for op in ops {
                let response = try await op.response()
                #expect(response.statusCode == 200)
            }
            await drain(engine.configuration.callbackQueue)
            #expect(server.requestCount(path: "/delay/200") == 1)
            #expect(calls.all == ["completion": 200])
        }
    }

    @Test func theServerNeverSeesMoreThanTheLimitAndSeesARaiseAtOnce() async throws {
        try await withServer(maximumConcurrent: 2) { server, engine in
            // Requests of three seconds: long enough that those started together overlap at the server even
            // on a loaded machine (under the thread sanitizer), and fourteen so that a queue ignoring the
            // limit would put more than six in flight.
            let ops = (0..<14).map { engine.operation(path: "/delay/3000", params: ["n": .int($0)]) }
            for op in ops { engine.enqueue(op) }
            for op in ops.prefix(2) { _ = try await op.response() }
            #expect(server.maxInFlight == 2)
            engine.queue.maximumConcurrentOperations = 6
            // Raising the limit starts waiting work at once: six requests overlap at the server. (The
            // high-water mark, not a snapshot, so a slow machine cannot miss the moment.)
            #expect(await eventually { server.maxInFlight == 6 })
            for op in ops { _ = try await op.response() }
            #expect(server.maxInFlight == 6)
        }
    }

    @Test func afterGoEveryHighPriorityOperationStartsBeforeAnyLowOne() async throws {
        try await withServer(maximumConcurrent: 1, isSuspended: true) { server, engine in
            let starts = Recorder<String>()
            let events = engine.queue.events
            let low = (0..<10).map { engine.operation(path: "/get", params: ["p": "low", "n": .int($0)]) }
            let high = (0..<10).map { engine.operation(path: "/get", params: ["p": "high", "n": .int($0)]) }
            for op in low { op.priority = .low; engine.enqueue(op) }
            for op in high { op.priority = .high; engine.enqueue(op) }
            #expect(server.requestCount == 0)
            engine.queue.go()
            for op in low + high { _ = try await op.response() }
            for await event in events {
                if case .started(let op) = event { starts.append(op.url?.query ?? "") }
                if starts.all.count == 20 { break }
            }
            #expect(starts.all.prefix(10).allSatisfy { $0.contains("p=high") })
            let arrivals = server.recordedRequests.map(\.uri)
            #expect(arrivals.prefix(10).allSatisfy { $0.contains("p=high") }, "\(arrivals)")
            #expect(arrivals.suffix(10).allSatisfy { $0.contains("p=low") })
        }
    }

    @Test func cancelWhileWaitingSendsNothing() async throws {
        try await withServer(isSuspended: true) { server, engine in
            let op = engine.operation(path: "/get")
            engine.enqueue(op)
            op.cancel()
            engine.queue.go()
            #expect(await failure(of: op)?.code == .cancelled)
            _ = try await engine.send(engine.operation(path: "/delay/1"))
            #expect(server.requestCount(path: "/get") == 0)
        }
    }

    @Test func cancelWhileRunningClosesTheConnectionAndReportsCancelled() async throws {
        try await withServer { server, engine in
            let op = engine.operation(path: "/stall")
            engine.enqueue(op)
            #expect(await server.waitForRequests(count: 1, timeout: .seconds(20)))
            op.cancel()
            #expect(await failure(of: op)?.code == .cancelled)
            #expect(await server.waitForAbortedRequests(count: 1, timeout: .seconds(20)))
            #expect(await eventually { engine.queue.operationCount == 0 })
        }
    }

    @Test func cancellingTheLastCoalescedSubscriberClosesTheSharedConnection() async throws {
        try await withServer { server, engine in
            let ops = (0..<5).map { _ in engine.operation(path: "/stall") }
            for op in ops { engine.enqueue(op) }
            #expect(await server.waitForRequests(count: 1, timeout: .seconds(20)))
            for op in ops.dropLast() { op.cancel() }
            #expect(server.abortedRequestCount == 0)
            ops.last?.cancel()
            #expect(await server.waitForAbortedRequests(count: 1, timeout: .seconds(20)))
            #expect(server.requestCount(path: "/stall") == 1)
        }
    }

    @Test func dependenciesHoldOperationsAcrossRealRequests() async throws {
        try await withServer { server, engine in
            let login = engine.operation(path: "/delay/100", params: ["step": "login"])
            let fetch = engine.operation(path: "/get", params: ["step": "fetch"])
            fetch.addDependency(login)
            engine.enqueue(fetch)
            engine.enqueue(login)
            _ = try await fetch.response()
            #expect(server.recordedRequests.map(\.path) == ["/delay/100", "/get"])
        }
    }
}
