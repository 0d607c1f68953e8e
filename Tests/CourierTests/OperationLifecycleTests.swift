import Foundation
import Testing
@testable import Courier

/// Tier 2: operation lifecycle, handlers and async API over a fake transport.
@Suite("NetworkOperation lifecycle")
struct OperationLifecycleTests {
    /// A transport that never answers until cancelled, and counts cancellations.
    static func hanging(_ cancellations: Counter) -> FakeTransport {
        FakeTransport { _ in
            do {
                try await Task.sleep(for: .seconds(60))
            } catch {
                cancellations.hit()
                throw error
            }
            return FakeTransport.reply()
        }
    }

    @Test func eachHandlerIsCalledExactlyOnceAndLateHandlersHearTheOutcome() async throws {
        let engine = NetworkEngine.fake(FakeTransport { _ in FakeTransport.reply(body: "{\"a\":1}", parts: 4) })
        let calls = Counter()
        let states = Recorder<NetworkOperation.State>()
        let op = engine.operation(path: "x")
            .onCompletion { _ in calls.hit("completion1") }
            .onCompletion { _ in calls.hit("completion2") }
            .onError { _ in calls.hit("error") }
            .onDownloadProgress { _ in calls.hit("progress") }
            .onStateChange { states.append($0) }
        try await engine.send(op)
        op.onCompletion { _ in calls.hit("late") }
        op.onError { _ in calls.hit("late-error") }
        await drain(engine.configuration.callbackQueue)
        // Four chunks at once: progress for the first and for the end; ProgressMeter folds the rest unless
        // a loaded machine spaces them more than 20 ms apart.
        #expect(calls.all.filter { $0.key != "progress" } == ["completion1": 1, "completion2": 1, "late": 1])
        #expect((2...4).contains(calls.count("progress")))
        #expect(states.all == [.waiting, .executing, .finished])
    }

    @Test func cancelledBeforeEnqueueNeverTouchesTheNetwork() async {
        let transport = FakeTransport()
        let engine = NetworkEngine.fake(transport)
        let errors = Recorder<NetworkError.Code>()
        let op = engine.operation(path: "x").onError { errors.append($0.code) }
        op.cancel()
        #expect(op.isFinished && op.isCancelled)
        engine.enqueue(op)
        let error = await #expect(throws: NetworkError.self) { try await op.response() }
        #expect(error?.code == .cancelled)
        await drain(engine.configuration.callbackQueue)
        #expect(errors.all == [.cancelled])
        #expect(transport.requestCount == 0)
    }

    @Test func cancelWhileWaitingLeavesTheQueueAndNothingIsSent() async {
        let transport = FakeTransport()
        let queue = NetworkQueue(isSuspended: true)
        let engine = NetworkEngine.fake(transport, queue: queue)
        let op = engine.operation(path: "x")
        engine.enqueue(op)
        #expect(op.state == .waiting)
        #expect(queue.operationCount == 1)
        op.cancel()
        let error = await #expect(throws: NetworkError.self) { try await op.response() }
        #expect(error?.code == .cancelled)
        queue.go()
        #expect(queue.operationCount == 0)
        #expect(transport.requestCount == 0)
    }

    @Test func cancelWhileRunningCancelsTheTransportAndReportsCancelledOnce() async {
        let cancellations = Counter()
        let transport = Self.hanging(cancellations)
        let engine = NetworkEngine.fake(transport)
        let errors = Counter()
        let op = engine.operation(path: "x").onError { errors.hit($0.code.description) }
        engine.enqueue(op)
        #expect(await eventually { transport.requestCount == 1 })
        op.cancel()
        op.cancel()
        let error = await #expect(throws: NetworkError.self) { try await op.response() }
        #expect(error?.code == .cancelled)
        #expect(await eventually { cancellations.count() == 1 })
        await drain(engine.configuration.callbackQueue)
        #expect(errors.all == ["cancelled": 1])
        #expect(await eventually { engine.queue.operationCount == 0 })
    }

    @Test func clearHandlersAndCancelSilencesHandlersButNotAwaiters() async {
        let engine = NetworkEngine.fake(Self.hanging(Counter()))
        let calls = Counter()
        let op = engine.operation(path: "x").onError { _ in calls.hit() }.onCompletion { _ in calls.hit() }
        engine.enqueue(op)
        op.clearHandlersAndCancel()
        let error = await #expect(throws: NetworkError.self) { try await op.response() }
        #expect(error?.code == .cancelled)
        await drain(engine.configuration.callbackQueue)
        #expect(calls.count() == 0)
    }

    @Test func cancellingTheAwaitingTaskCancelsTheOperation() async {
        let cancellations = Counter()
        let transport = Self.hanging(cancellations)
        let engine = NetworkEngine.fake(transport)
        let op = engine.operation(path: "x")
        let task = Task { try await engine.send(op) }
        #expect(await eventually { transport.requestCount == 1 })
        task.cancel()
        let result = await task.result
        #expect((try? result.get()) == nil)
        #expect(op.error?.code == .cancelled)
        #expect(await eventually { cancellations.count() == 1 })
    }

    @Test func dependenciesRunInOrderWhateverTheirOutcome() async throws {
        let transport = FakeTransport { request in
            try await Task.sleep(for: .milliseconds(request.url.path.hasSuffix("first") ? 50 : 0))
            return FakeTransport.reply(status: request.url.path.hasSuffix("first") ? 500 : 200)
        }
        let engine = NetworkEngine.fake(transport)
        let first = engine.operation(path: "first")
        let second = engine.operation(path: "second")
        let third = engine.operation(path: "third")
        second.addDependency(first)
        third.addDependency(second)
        first.addDependency(third)   // would be a cycle: refused
        #expect(first.dependencies.isEmpty)
        engine.enqueue(third)
        engine.enqueue(second)
        #expect(second.state == .waiting)
        engine.enqueue(first)
        _ = try await third.response()
        #expect(transport.requests.map { $0.url.lastPathComponent } == ["first", "second", "third"])
        #expect(first.error?.code == .unacceptableStatus)
    }

    @Test func eventsStreamProgressThenTheOutcome() async throws {
        let body = Data(repeating: 1, count: 1000)
        let engine = NetworkEngine.fake(FakeTransport { _ in
            FakeTransport.reply(status: 200, headers: [.contentLength: "1000"], data: body, parts: 4)
        })
        let op = engine.operation(path: "x")
        let events = op.events
        engine.enqueue(op)
        var fractions: [Double] = []
        var outcome: Int?
        for await event in events {
            switch event {
            case .downloadProgress(let progress): fractions.append(progress.fractionCompleted ?? -1)
            case .response(let response): outcome = response.statusCode
            case .uploadProgress, .failure, .cached, .frozen: Issue.record("unexpected \(event)")
            }
        }
        // The first chunk and the end are always reported; chunks between may be folded (ProgressMeter).
        #expect(fractions.first == 0.25)
        #expect(fractions.last == 1.0)
        #expect(fractions == fractions.sorted() && Set(fractions).count == fractions.count)
        #expect(outcome == 200)
        // A stream made after the end holds just the outcome.
        var late: [String] = []
        for await event in op.events { late.append("\(event)".prefix(8).description) }
        #expect(late == ["response"])
    }

    @Test func uploadProgressIsReportedForBodies() async throws {
        let transport = FakeTransport { request in
            request.didSendBodyBytes?(Int64(request.body?.count ?? 0) / 2, Int64(request.body?.count ?? 0))
            request.didSendBodyBytes?(Int64(request.body?.count ?? 0), Int64(request.body?.count ?? 0))
            return FakeTransport.reply()
        }
        let engine = NetworkEngine.fake(transport)
        let progress = Recorder<Double>()
        let op = engine.operation(path: "up", method: .post, body: .data(Data(count: 4096)))
            .onUploadProgress { progress.append($0.fractionCompleted ?? -1) }
        try await engine.send(op)
        await drain(engine.configuration.callbackQueue)
        #expect(progress.all == [0.5, 1.0])
    }

    @Test func enqueueingTwiceRunsOnce() async throws {
        let transport = FakeTransport()
        let engine = NetworkEngine.fake(transport)
        let op = engine.operation(path: "x")
        op.allowsCoalescing = false
        engine.enqueue(op)
        engine.enqueue(op)
        try await engine.send(op)
        #expect(transport.requestCount == 1)
    }

    /// The first task awaiting `response()` is resumed through a slot of the operation, later ones as
    /// observers: each hears the one outcome once, after every handler ran, whether they wait before the
    /// answer, while it is under way, or after it.
    @Test(arguments: [false, true]) func everyTaskAwaitingAnOperationHearsItsOutcomeAfterItsHandlers(withHandler: Bool) async throws {
        let release = AsyncStream<Void>.makeStream()
        let engine = NetworkEngine.fake(FakeTransport { _ in
            for await _ in release.stream { break }
            return FakeTransport.reply(body: "done")
        })
        let handled = Counter()
        let op = engine.operation(path: "x")
        if withHandler {
            op.onCompletion { _ in
                Thread.sleep(forTimeInterval: 0.05)   // a slow handler: the awaiters must still come after it
                handled.hit()
            }
        }
        let waiters = (0..<3).map { _ in
            Task { () throws -> (String?, Int) in
                let response = try await op.response()
                return (response.string, handled.count())
            }
        }
        #expect(await eventually { op.state == .executing })
        release.continuation.yield()
        for waiter in waiters {
            let (body, handlersRun) = try await waiter.value
            #expect(body == "done")
            #expect(handlersRun == (withHandler ? 1 : 0))
        }
        let late = try await op.response()
        #expect(late.string == "done")
        #expect(handled.count() == (withHandler ? 1 : 0))

        // Cancelled while three tasks wait: each hears the cancel once.
        let hanging = NetworkEngine.fake(Self.hanging(Counter()))
        let other = hanging.operation(path: "y")
        let cancelled = (0..<3).map { _ in
            Task { () -> NetworkError.Code? in
                do {
                    _ = try await other.response()
                    return nil
                } catch {
                    return (error as? NetworkError)?.code
                }
            }
        }
        #expect(await eventually { other.state == .executing })
        other.cancel()
        for waiter in cancelled {
            let code = await waiter.value
            #expect(code == .cancelled)
        }
    }

    /// A handler attached after the outcome is called at once, on the callback queue: a `response()`
    /// awaited after that returns only once it ran (found by review: an operation that had no handler
    /// before its outcome did not wait for the callback queue).
    @Test(arguments: [false, true]) func aResponseAwaitedAfterALateHandlerReturnsAfterIt(failing: Bool) async throws {
        let engine = NetworkEngine.fake(FakeTransport { _ in FakeTransport.reply(status: failing ? 500 : 200, body: "x") })
        let op = engine.operation(path: "x")
        _ = try? await op.response()
        let ran = Counter()
        let slow: @Sendable () -> Void = {
            Thread.sleep(forTimeInterval: 0.05)
            ran.hit()
        }
        if failing {
            op.onError { _ in slow() }
        } else {
            op.onCompletion { _ in slow() }
        }
        _ = try? await op.response()
        #expect(ran.count() == 1)
    }
}
