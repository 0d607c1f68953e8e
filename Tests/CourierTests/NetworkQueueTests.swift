import Foundation
import NIOConcurrencyHelpers
import Testing
@testable import Courier

/// Tier 2: the shared queue's limits, priorities, coalescing and cancellation over a fake transport.
@Suite("NetworkQueue over a fake transport")
struct NetworkQueueTests {
    /// A transport that answers at once and records the last path component of each request, in order.
    static func recordingTransport() -> (FakeTransport, Recorder<String>) {
        let started = Recorder<String>()
        let transport = FakeTransport { request in
            started.append(request.url.lastPathComponent)
            return FakeTransport.reply()
        }
        return (transport, started)
    }

    @Test func coalescesIdenticalGETsAcrossEnginesAndCallsEveryHandlerOnce() async throws {
        let transport = FakeTransport { _ in
            try await Task.sleep(for: .milliseconds(100))
            return FakeTransport.reply(body: "{\"n\":1}")
        }
        let queue = NetworkQueue()
        // Engines that run requests the same way (one transport, one reachability, same limits) share flights.
        let reachability = ManualReachability()
        let engines = (0..<5).map { _ in NetworkEngine.fake(transport, queue: queue) { $0.reachability = reachability } }
        let calls = Counter()
        let ops = (0..<100).map { i in
            engines[i % 5].operation(path: "thumb").onCompletion { _ in calls.hit() }
        }
        for op in ops { engines[0].enqueue(op) }
        for op in ops { _ = try await op.response() }
        for engine in engines { await drain(engine.configuration.callbackQueue) }
        #expect(transport.requestCount == 1)
        #expect(calls.count() == 100)
    }

    @Test func differentHeadersOrOptingOutDoNotCoalesce() async throws {
        let transport = FakeTransport { _ in
            try await Task.sleep(for: .milliseconds(50))
            return FakeTransport.reply()
        }
        let engine = NetworkEngine.fake(transport)
        let a = engine.operation(path: "x")
        let b = engine.operation(path: "x").setHeader("2", forName: "X-Variant")
        let c = engine.operation(path: "x")
        c.allowsCoalescing = false
        let post1 = engine.operation(path: "x", method: .post)
        let post2 = engine.operation(path: "x", method: .post)
        for op in [a, b, c, post1, post2] { engine.enqueue(op) }
        for op in [a, b, c, post1, post2] { _ = try await op.response() }
        #expect(transport.requestCount == 5)
    }

    @Test func cancellingOneSubscriberLeavesTheOthersAndTheLastCancelsTheRequest() async throws {
        let cancellations = Counter()
        let gate = Counter()
        let transport = FakeTransport { _ in
            do {
                while gate.count() == 0 { try await Task.sleep(for: .milliseconds(5)) }
            } catch {
                cancellations.hit()
                throw error
            }
            return FakeTransport.reply()
        }
        let engine = NetworkEngine.fake(transport)
        let ops = (0..<3).map { _ in engine.operation(path: "x") }
        for op in ops { engine.enqueue(op) }
        #expect(await eventually { ops.allSatisfy { $0.state == .executing } })
        ops[0].cancel()
        ops[1].cancel()
        #expect(cancellations.count() == 0)
        gate.hit()
        #expect(try await ops[2].response().statusCode == 200)
        #expect(ops[0].error?.code == .cancelled && ops[1].error?.code == .cancelled)

        let blocking = FakeTransport { _ in
            do { try await Task.sleep(for: .seconds(60)) } catch { cancellations.hit("y"); throw error }
            return FakeTransport.reply()
        }
        let engine2 = NetworkEngine.fake(blocking)
        let pair = (0..<2).map { _ in engine2.operation(path: "y") }
        for op in pair { engine2.enqueue(op) }
        #expect(await eventually { blocking.requestCount == 1 })
        pair[0].cancel()
        pair[1].cancel()
        #expect(await eventually { cancellations.count("y") == 1 })
        #expect(blocking.requestCount == 1)
    }

    @Test func neverRunsMoreThanTheLimitAndRaisingItTakesEffectAtOnce() async throws {
        let transport = FakeTransport { _ in
            try await Task.sleep(for: .milliseconds(30))
            return FakeTransport.reply()
        }
        let queue = NetworkQueue(maximumConcurrentOperations: 2)
        let engine = NetworkEngine.fake(transport, queue: queue) { $0.coalescesRequests = false }
        let ops = (0..<20).map { engine.operation(path: "slow/\($0)") }
        for op in ops { engine.enqueue(op) }
        for op in ops.prefix(6) { _ = try await op.response() }
        #expect(transport.maxConcurrent == 2)
        queue.maximumConcurrentOperations = 6
        #expect(await eventually { transport.maxConcurrent == 6 })
        for op in ops { _ = try await op.response() }
    }

    @Test func suspendedQueueStartsHighPriorityWorkFirst() async throws {
        let (transport, started) = Self.recordingTransport()
        // One slot: with two, the thread that started the second flight may be descheduled before it
        // reports it while the other slot runs through the rest (seen under the thread sanitizer), so
        // no observed order would be the queue's.
        let queue = NetworkQueue(maximumConcurrentOperations: 1, isSuspended: true)
        let engine = NetworkEngine.fake(transport, queue: queue)
        let low = (0..<10).map { engine.operation(path: "low\($0)") }
        let high = (0..<10).map { engine.operation(path: "high\($0)") }
        for op in low { op.priority = .low; engine.enqueue(op) }
        for op in high { op.priority = .high; engine.enqueue(op) }
        #expect(transport.requestCount == 0)
        #expect(queue.operationCount == 20)
        let events = queue.events
        queue.go()
        for op in low + high { _ = try await op.response() }
        var order: [String] = []
        for await event in events {
            if case .started(let op) = event { order.append(op.url?.lastPathComponent ?? "") }
            if order.count == 20 { break }
        }
        #expect(order.prefix(10).allSatisfy { $0.hasPrefix("high") }, "\(order)")
        #expect(started.all.count == 20)
    }

    @Test func oneAtATimeTheOrderIsExactlyPriorityThenFIFO() async throws {
        let (transport, started) = Self.recordingTransport()
        let queue = NetworkQueue(maximumConcurrentOperations: 1, isSuspended: true)
        let engine = NetworkEngine.fake(transport, queue: queue)
        let ops = ["low0", "high0", "low1", "high1", "normal0", "high2"].map { engine.operation(path: $0) }
        for op in ops {
            let name = op.url?.lastPathComponent ?? ""
            op.priority = name.hasPrefix("high") ? .high : name.hasPrefix("low") ? .low : .normal
            engine.enqueue(op)
        }
        queue.go()
        for op in ops { _ = try await op.response() }
        #expect(started.all == ["high0", "high1", "high2", "normal0", "low0", "low1"])
    }

    @Test func priorityCanChangeWhileWaiting() async throws {
        let (transport, started) = Self.recordingTransport()
        let queue = NetworkQueue(maximumConcurrentOperations: 1, isSuspended: true)
        let engine = NetworkEngine.fake(transport, queue: queue)
        let ops = (0..<3).map { engine.operation(path: "op\($0)") }
        for op in ops { engine.enqueue(op) }
        ops[2].priority = .veryHigh
        queue.go()
        for op in ops { _ = try await op.response() }
        #expect(started.all == ["op2", "op0", "op1"])
    }

    @Test func activityPublishesEveryChangeInOrder() async throws {
        let queue = NetworkQueue(isSuspended: true)
        let engine = NetworkEngine.fake(FakeTransport(), queue: queue) { $0.coalescesRequests = false }
        let handlerCounts = Recorder<Int>()
        queue.activityHandler = { handlerCounts.append($0) }
        let stream = queue.activity
        let ops = (0..<3).map { engine.operation(path: "x\($0)") }
        for op in ops { engine.enqueue(op) }
        queue.go()
        for op in ops { _ = try await op.response() }
        var seen: [Int] = []
        for await count in stream {
            seen.append(count)
            if seen.count == 7 { break }
        }
        #expect(seen == [0, 1, 2, 3, 2, 1, 0])
        #expect(await eventually { handlerCounts.all.count == 6 })
        #expect(handlerCounts.all == [1, 2, 3, 2, 1, 0])
    }

    /// Review finding: with the queue's events observed, an operation must not look finished before its
    /// completion handlers are dispatched, or `response()` awaited at that moment resumed before them.
    @Test func aWatchedQueueNeverShowsAnOperationFinishedBeforeItsHandlers() async throws {
        let queue = NetworkQueue()
        let engine = NetworkEngine.fake(FakeTransport { _ in FakeTransport.reply() }, queue: queue)
        let watcher = Task { for await _ in queue.events {} }
        defer { watcher.cancel() }
        var early = 0
        for round in 0..<1000 {
            let ran = NIOLockedValueBox(0)
            let operation = engine.operation(path: "get", params: ["round": .int(round)])
            operation.onCompletion { _ in ran.withLockedValue { $0 += 1 } }
            engine.enqueue(operation)
            while !operation.isFinished { await Task.yield() }
            _ = try await operation.response()
            if ran.withLockedValue({ $0 }) != 1 { early += 1 }
        }
        #expect(early == 0, "response() resumed before the completion handler ran in \(early) of 1000 rounds")
    }

    @Test func queueEventsReportStartsOutcomesAndTheQueueRunningDry() async throws {
        let queue = NetworkQueue()
        let engine = NetworkEngine.fake(FakeTransport { request in
            FakeTransport.reply(status: request.url.path.hasSuffix("bad") ? 500 : 200)
        }, queue: queue)
        let events = queue.events
        try await engine.send(engine.operation(path: "good"))
        _ = try? await engine.send(engine.operation(path: "bad"))
        var log: [String] = []
        for await event in events {
            switch event {
            case .started(let op): log.append("started \(op.url!.lastPathComponent)")
            case .finished(let op, _): log.append("finished \(op.url!.lastPathComponent)")
            case .failed(let op, let error): log.append("failed \(op.url!.lastPathComponent) \(error.code)")
            case .queueFinished: log.append("empty")
            }
            if log.count == 6 { break }
        }
        #expect(log == ["started good", "finished good", "empty", "started bad", "failed bad unacceptableStatus", "empty"])
    }

    @Test func cancellationBySubstringPredicateAndEngine() async {
        let queue = NetworkQueue(isSuspended: true)
        let transport = FakeTransport()
        let photos = NetworkEngine.fake(transport, queue: queue)
        let feed = NetworkEngine.fake(transport, queue: queue)
        let thumbs = (0..<3).map { photos.operation(path: "thumbnails/\($0)") }
        let full = photos.operation(path: "full/1")
        let posts = (0..<2).map { feed.operation(path: "posts/\($0)") }
        let tagged = feed.operation(path: "tagged")
        tagged.tag = 7
        for op in thumbs + [full] + posts + [tagged] { photos.enqueue(op) }
        queue.cancelOperations(containing: "/thumbnails/")
        #expect(thumbs.allSatisfy(\.isCancelled) && !full.isCancelled)
        queue.cancelOperations { $0.tag == 7 }
        #expect(tagged.isCancelled && !posts[0].isCancelled)
        photos.cancelAllOperations()
        #expect(full.isCancelled)
        #expect(!posts[0].isCancelled && !posts[1].isCancelled)
        #expect(queue.operationCount == 2)
        queue.cancelAll()
        #expect(queue.operationCount == 0)
        queue.go()
        for op in thumbs + [full] + posts + [tagged] {
            let error = await #expect(throws: NetworkError.self) { try await op.response() }
            #expect(error?.code == .cancelled)
        }
        #expect(transport.requestCount == 0)
    }
}

/// The queue remembers a submitted operation only until it finishes, however it finishes.
extension NetworkQueueTests {
    // Unchecked: `operation` is assigned once, in `init`, before the object is shared; after that only the
    // runtime changes it (zeroing it when the operation is freed), and weak references are loaded and
    // zeroed atomically, so reading it from any thread is safe.
    final class WeakOperation: @unchecked Sendable {
        weak var operation: NetworkOperation?
        init(_ operation: NetworkOperation) { self.operation = operation }
    }

    @Test func aFinishedOperationIsNotKeptByItsQueue() async throws {
        let transport = FakeTransport { request in
            if request.url.path.hasSuffix("fail") { throw NetworkError(.connectionLost, "dropped") }
            return FakeTransport.reply()
        }
        let queue = NetworkQueue()
        let engine = NetworkEngine.fake(transport, queue: queue)
        var weak: [WeakOperation] = []
        do {
            let answered = engine.operation(path: "ok")
            _ = try await engine.send(answered)
            let failed = engine.operation(path: "fail")
            _ = try? await engine.send(failed)
            let invalid = engine.operation(url: "http://exa mple.com/")
            _ = try? await engine.send(invalid)
            weak += [WeakOperation(answered), WeakOperation(failed), WeakOperation(invalid)]
        }
        let suspended = NetworkQueue(isSuspended: true)
        let waiting = NetworkEngine.fake(transport, queue: suspended)
        do {
            let cancelled = waiting.operation(path: "later")
            waiting.enqueue(cancelled)
            cancelled.cancel()
            _ = try? await cancelled.response()
            weak.append(WeakOperation(cancelled))
        }
        await drain(engine.configuration.callbackQueue)
        await drain(waiting.configuration.callbackQueue)
        #expect(await eventually(timeout: .seconds(5)) { weak.allSatisfy { $0.operation == nil } },
                "operations still alive: \(weak.compactMap { $0.operation?.urlString })")
    }
}
