import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import Testing
@testable import Courier

/// Tier 2: event monitors over a fake transport: which events, in which order, on which thread.
@Suite("Event monitors over a fake transport")
struct EventMonitorTests {
    /// Records every event as a short line, per operation, and the metrics of each finish. In every
    /// callback it reads the operation's state (which takes the operation's lock: a monitor called under
    /// it would deadlock) and notes whether it runs on the caller's queue.
    final class Tape: EventMonitor {
        // The operations themselves, not their identifiers: an identifier is reused once an operation is gone.
        let lines = Recorder<(operation: NetworkOperation, line: String)>()
        let metrics = Recorder<OperationMetrics>()
        let finishes = Recorder<(operation: NetworkOperation, metrics: OperationMetrics)>()
        let requests = Recorder<HTTPRequest>()
        let onCallerQueue = Counter()
        let callerKey: DispatchSpecificKey<Bool>?
        let react: (@Sendable (String, NetworkOperation) -> Void)?

        init(callerKey: DispatchSpecificKey<Bool>? = nil, react: (@Sendable (String, NetworkOperation) -> Void)? = nil) {
            self.callerKey = callerKey
            self.react = react
        }

        /// The lines of one operation, without body progress (how many chunks is the transport's business).
        func events(of operation: NetworkOperation) -> [String] {
            lines.all.filter { $0.operation === operation && !$0.line.hasPrefix("progress") }.map(\.line)
        }

        func all(of operation: NetworkOperation) -> [String] {
            lines.all.filter { $0.operation === operation }.map(\.line)
        }

        private func note(_ line: String, _ operation: NetworkOperation) {
            _ = operation.state
            _ = operation.description
            if let callerKey, DispatchQueue.getSpecific(key: callerKey) == true { onCallerQueue.hit() }
            lines.append((operation, line))
            react?(line, operation)
        }

        func operationDidEnqueue(_ operation: NetworkOperation) { note("enqueued", operation) }
        func operation(_ operation: NetworkOperation, didLookUpCache result: CacheLookupResult) { note("cache \(result.rawValue)", operation) }
        func operation(_ operation: NetworkOperation, didStartRequest request: HTTPRequest) {
            requests.append(request)
            note("start \(request.method.rawValue) \(request.url?.path ?? "?")", operation)
        }
        func operation(_ operation: NetworkOperation, didReceiveInterimResponse response: InformationalResponse) {
            note("interim \(response.status.code)", operation)
        }
        func operation(_ operation: NetworkOperation, didReceiveResponseHead response: HTTPResponse) {
            note("head \(response.status.code)", operation)
        }
        func operation(_ operation: NetworkOperation, didSendBody progress: TransferProgress) { note("progress up", operation) }
        func operation(_ operation: NetworkOperation, didReceiveBody progress: TransferProgress) { note("progress down", operation) }
        func operation(_ operation: NetworkOperation, willFollowRedirectTo url: URL) { note("redirect \(url.path)", operation) }
        func operation(_ operation: NetworkOperation, willRetry attempt: Int, after delay: Duration, failure: NetworkError) {
            note("retry \(attempt) after \(delay) \(failure.code) \(failure.response?.statusCode ?? 0)", operation)
        }
        func operation(_ operation: NetworkOperation, didFreeze entry: OutboxEntry) {
            note(entry.id == operation.outboxID ? "frozen" : "frozen elsewhere", operation)
        }
        func operation(_ operation: NetworkOperation, willReplay entry: OutboxEntry) { note("replay \(entry.method.rawValue)", operation) }
        func operation(_ operation: NetworkOperation, didFinish result: Result<NetworkResponse, NetworkError>, metrics: OperationMetrics) {
            self.metrics.append(metrics)
            finishes.append((operation, metrics))
            switch result {
            case .success(let response): note("finished \(response.statusCode)\(response.cacheOutcome.map { " \($0.rawValue)" } ?? "")", operation)
            case .failure(let error): note("failed \(error.code)", operation)
            }
        }
    }

    /// Retries every failure once, at once.
    struct RetryOnce: RequestInterceptor {
        func retry(_ request: HTTPRequest, after failure: NetworkError, attempt: Int) async -> RetryDecision {
            attempt == 1 ? .retry(after: .milliseconds(1)) : .doNotRetry
        }
    }

    func settle(_ engine: NetworkEngine) async {
        await engine.context.monitors?.drain()
    }

    @Test func aPlainGetInOrderWithProgressBetweenHeadAndFinish() async throws {
        let tape = Tape()
        let transport = FakeTransport { _ in FakeTransport.reply(body: "{\"a\":1}", parts: 3) }
        let engine = NetworkEngine.fake(transport) { $0.eventMonitors = [tape] }
        let op = engine.operation(path: "/x")
        _ = try await engine.send(op)
        await settle(engine)
        #expect(tape.events(of: op) == ["enqueued", "start GET /v1/x", "head 200", "finished 200"])
        let all = tape.all(of: op)
        let head = try #require(all.firstIndex(of: "head 200"))
        #expect(all[head + 1 ..< all.count - 1].allSatisfy { $0 == "progress down" } && all.count > head + 2)
        #expect(tape.metrics.all.count == 1, "each event once")
    }

    @Test func aRedirectIsEachHopsStartAndHeadThenTheRedirect() async throws {
        let tape = Tape()
        let transport = FakeTransport { request in
            request.url.path == "/v1/old"
                ? FakeTransport.reply(status: 302, headers: [.location: "/v1/new"], body: "")
                : FakeTransport.reply()
        }
        let engine = NetworkEngine.fake(transport) { $0.eventMonitors = [tape] }
        let op = engine.operation(path: "/old")
        _ = try await engine.send(op)
        await settle(engine)
        #expect(tape.events(of: op) == [
            "enqueued", "start GET /v1/old", "head 302", "redirect /v1/new", "start GET /v1/new", "head 200", "finished 200",
        ])
    }

    @Test func aRetryIsAnnouncedWithItsAttemptDelayAndFailure() async throws {
        let tape = Tape()
        let calls = Counter()
        let transport = FakeTransport { _ in
            calls.hit()
            return FakeTransport.reply(status: calls.count() == 1 ? 503 : 200)
        }
        let engine = NetworkEngine.fake(transport) {
            $0.eventMonitors = [tape]
            $0.interceptors = [RetryOnce()]
        }
        let op = engine.operation(path: "/flaky")
        _ = try await engine.send(op)
        await settle(engine)
        #expect(tape.events(of: op) == [
            "enqueued", "start GET /v1/flaky", "head 503", "retry 2 after 0.001 seconds unacceptableStatus 503",
            "start GET /v1/flaky", "head 200", "finished 200",
        ])
        let metrics = try #require(tape.metrics.all.first)
        #expect(metrics.attempts == 2)
    }

    @Test func aCacheHitNeverStartsARequestAndARevalidationGoesConditional() async throws {
        let tape = Tape()
        let transport = FakeTransport { request in
            if request.url.path == "/v1/fresh" {
                return FakeTransport.reply(status: 200, headers: [.cacheControl: "max-age=600", .contentType: "text/plain"], body: "f")
            }
            let headers: HTTPFields = [.cacheControl: "no-cache", .eTag: "\"v1\"", .contentType: "text/plain"]
            if request.headers[.ifNoneMatch] == "\"v1\"" { return FakeTransport.reply(status: 304, headers: headers, data: Data()) }
            return FakeTransport.reply(status: 200, headers: headers, body: "r")
        }
        let engine = NetworkEngine.fake(transport) {
            $0.eventMonitors = [tape]
            $0.cache = ResponseCache(directory: nil)
        }
        let first = engine.operation(path: "/fresh"), hit = engine.operation(path: "/fresh")
        _ = try await engine.send(first)
        _ = try await engine.send(hit)
        let stored = engine.operation(path: "/validated"), revalidated = engine.operation(path: "/validated")
        _ = try await engine.send(stored)
        #expect(try await engine.send(revalidated).string == "r")
        await settle(engine)
        #expect(tape.events(of: first) == ["enqueued", "cache miss", "start GET /v1/fresh", "head 200", "finished 200 miss"])
        #expect(tape.events(of: hit) == ["enqueued", "cache hit", "finished 200 hit"])
        #expect(tape.events(of: revalidated) == [
            "enqueued", "cache revalidate", "start GET /v1/validated", "head 304", "finished 200 revalidated",
        ])
        #expect(tape.requests.all.last?.headerFields[.ifNoneMatch] == "\"v1\"", "the request as sent, validators included")
        let hitMetrics = try #require(tape.metrics.all.dropFirst().first)
        #expect(hitMetrics.startedAt == nil && hitMetrics.timeToFirstByte == nil && hitMetrics.attempts == 0)
    }

    @Test func aFrozenOperationThenItsReplay() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-monitor-test-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let tape = Tape()
        let reachability = ManualReachability(.unreachable)
        let transport = FakeTransport { _ in FakeTransport.reply(status: 201) }
        let engine = NetworkEngine.fake(transport) {
            $0.eventMonitors = [tape]
            $0.reachability = reachability
            $0.dataDirectory = directory
        }
        let op = engine.operation(path: "/posts", method: .post, body: .text("hello"))
        op.isFreezable = true
        engine.enqueue(op)
        #expect(await eventually { op.state == .frozen })
        reachability.setStatus(.reachable(via: .wifi))
        #expect(try await op.response().statusCode == 201)
        await settle(engine)
        #expect(tape.events(of: op) == ["enqueued", "frozen", "finished 201"])
        let replayID = try #require(tape.lines.all.first { $0.line == "replay POST" }?.operation)
        let replay = tape.lines.all.filter { $0.operation === replayID && !$0.line.hasPrefix("progress") }.map(\.line)
        #expect(replay == ["replay POST", "enqueued", "start POST /v1/posts", "head 201", "finished 201"])
    }

    @Test func everyMonitorHearsEveryEventInTheOrderGiven() async throws {
        let first = Tape(), second = Tape()
        let order = Recorder<String>()
        struct Marker: EventMonitor {
            let name: String
            let order: Recorder<String>
            func operationDidEnqueue(_ operation: NetworkOperation) { order.append(name) }
        }
        let engine = NetworkEngine.fake(FakeTransport()) {
            $0.eventMonitors = [first, Marker(name: "a", order: order), second, Marker(name: "b", order: order)]
        }
        let op = engine.operation(path: "/x")
        _ = try await engine.send(op)
        await settle(engine)
        #expect(first.events(of: op) == ["enqueued", "start GET /v1/x", "head 200", "finished 200"])
        #expect(second.all(of: op) == first.all(of: op))
        #expect(order.all == ["a", "b"])
    }

    @Test func monitorsRunOffTheCallersQueueAndMayCallBackIntoTheOperation() async throws {
        let key = DispatchSpecificKey<Bool>()
        let caller = DispatchQueue(label: "test.caller")
        caller.setSpecific(key: key, value: true)
        // Cancels the operation from inside a monitor as soon as its request starts: under a lock, this deadlocks.
        let tape = Tape(callerKey: key) { line, operation in
            if line.hasPrefix("start") { operation.cancel() }
        }
        let transport = FakeTransport { _ in
            try await Task.sleep(for: .seconds(30))
            return FakeTransport.reply()
        }
        let engine = NetworkEngine.fake(transport) { $0.eventMonitors = [tape] }
        let op = engine.operation(path: "/slow")
        let never = engine.operation(path: "/never")
        caller.sync {
            engine.enqueue(op)
            never.cancel()   // finishes at once, on this queue: its monitors are called elsewhere
        }
        let error = await failure(of: op)
        #expect(error?.code == .cancelled)
        await settle(engine)
        #expect(tape.events(of: op) == ["enqueued", "start GET /v1/slow", "failed cancelled"])
        #expect(tape.events(of: never) == ["failed cancelled"])
        #expect(tape.onCallerQueue.count() == 0)
        // Looked up by operation: `op` may finish first (its start, and the cancel, can run before `never.cancel()`).
        let metrics = try #require(tape.finishes.all.first { $0.operation === never }?.metrics)
        #expect(metrics.enqueuedAt == nil && metrics.totalDuration == .zero && metrics.attempts == 0, "never enqueued")
    }

    @Test func timingsAreOrderedAndConsistent() async throws {
        let tape = Tape()
        let transport = FakeTransport { _ in
            try await Task.sleep(for: .milliseconds(30))
            return FakeTransport.reply(status: 200, headers: [:], data: Data("body".utf8), delay: .milliseconds(20))
        }
        let engine = NetworkEngine.fake(transport) { $0.eventMonitors = [tape] }
        let op = engine.operation(path: "/timed")
        _ = try await engine.send(op)
        await settle(engine)
        let metrics = try #require(tape.metrics.all.first)
        let (queued, ttfb) = (try #require(metrics.queuedDuration), try #require(metrics.timeToFirstByte))
        #expect(queued >= .zero)
        #expect(ttfb >= .milliseconds(30))
        #expect(ttfb <= metrics.totalDuration)
        #expect(queued + ttfb <= metrics.totalDuration)
        #expect(metrics.totalDuration >= .milliseconds(50), "the body's time counts in the total, not in the first byte")
        #expect(metrics.attempts == 1)
    }

    @Test func operationsSharingARequestEachHearItsEvents() async throws {
        let tape = Tape()
        let queue = NetworkQueue(isSuspended: true)
        let transport = FakeTransport()
        let engine = NetworkEngine.fake(transport, queue: queue) { $0.eventMonitors = [tape] }
        let a = engine.operation(path: "/same"), b = engine.operation(path: "/same")
        engine.enqueue(a)
        engine.enqueue(b)
        queue.go()
        _ = try await a.response()
        _ = try await b.response()
        await settle(engine)
        #expect(transport.requestCount == 1)
        #expect(tape.events(of: a) == ["enqueued", "start GET /v1/same", "head 200", "finished 200"])
        #expect(tape.events(of: b) == tape.events(of: a))
    }

    @Test func aRevalidatedRedirectedRetriedRequestInOneSequence() async throws {
        let tape = Tape()
        let stage = Counter()   // 0: first fetch of /old; then /old moved, /new fails once, then answers 304
        let transport = FakeTransport { request in
            let headers: HTTPFields = [.cacheControl: "no-cache", .eTag: "\"v1\"", .contentType: "text/plain"]
            if stage.count() == 0 { return FakeTransport.reply(status: 200, headers: headers, body: "v1") }
            if request.url.path == "/v1/old" { return FakeTransport.reply(status: 302, headers: [.location: "/v1/new"], body: "") }
            stage.hit("new")
            if stage.count("new") == 1 { return FakeTransport.reply(status: 503) }
            #expect(request.headers[.ifNoneMatch] == "\"v1\"", "the cache's validator follows the redirect")
            return FakeTransport.reply(status: 304, headers: headers, data: Data())
        }
        let engine = NetworkEngine.fake(transport) {
            $0.eventMonitors = [tape]
            $0.cache = ResponseCache(directory: nil)
            $0.interceptors = [RetryOnce()]
        }
        _ = try await engine.send(engine.operation(path: "/old"))
        stage.hit()
        let op = engine.operation(path: "/old")
        #expect(try await engine.send(op).string == "v1")
        await settle(engine)
        #expect(tape.events(of: op) == [
            "enqueued", "cache revalidate",
            "start GET /v1/old", "head 302", "redirect /v1/new", "start GET /v1/new", "head 503",
            "retry 2 after 0.001 seconds unacceptableStatus 503",
            "start GET /v1/old", "head 302", "redirect /v1/new", "start GET /v1/new", "head 304",
            "finished 200 revalidated",
        ])
    }

    /// Blocks the monitors' queue in its first progress event until released, and counts what it hears.
    final class Stuck: EventMonitor {
        let release = DispatchSemaphore(value: 0)
        let progress = Counter()
        let finished = Counter()
        func operation(_ operation: NetworkOperation, didReceiveBody progress: TransferProgress) {
            if self.progress.count() == 0 { release.wait() }
            self.progress.hit()
        }
        func operation(_ operation: NetworkOperation, didFinish result: Result<NetworkResponse, NetworkError>, metrics: OperationMetrics) {
            finished.hit()
        }
    }

    @Test func aStuckMonitorDropsProgressButNeverAnOutcome() async throws {
        let stuck = Stuck()
        let hub = try #require(EventMonitorHub.make([stuck]))
        let progress = TransferProgress(completedBytes: 1, totalBytes: nil)
        let engine = NetworkEngine.fake(FakeTransport())
        let op = engine.operation(path: "/big")
        let metrics = OperationMetrics(enqueuedAt: nil, startedAt: nil, firstResponseAt: nil, finishedAt: .now, attempts: 0)
        // While the first event blocks the monitor, the hub takes at most 1024 progress events in its
        // batch and holds 1024 more: 3,000 always overflow.
        for round in 0..<5 {
            for _ in 0..<(round == 0 ? 3_000 : 1_750) { hub.emit(isProgress: true) { $0.operation(op, didReceiveBody: progress) } }
            hub.emit { $0.operation(op, didFinish: .failure(.cancelled(url: nil)), metrics: metrics) }
            if round == 0 { stuck.release.signal() }
        }
        await hub.drain()
        #expect(stuck.finished.count() == 5, "every outcome is delivered")
        let dropped = hub.droppedProgressEvents.load(ordering: .relaxed)
        #expect(dropped > 0)
        #expect(stuck.progress.count() + dropped == 10_000)
        #expect(stuck.progress.count() >= EventMonitorHub.progressBacklogLimit)
    }

    @Test func aHeadOrRetryBeforeTheStartIsRecordedNeverBackwards() {
        // An operation that joins a running request can hear its head (or retry) before its own start.
        let t0 = ContinuousClock.now
        var timeline = OperationTimeline()
        timeline.enqueued(at: t0)
        timeline.receivedHead(at: t0 + .milliseconds(5))
        timeline.started(at: t0 + .milliseconds(6))
        let metrics = timeline.metrics(finishedAt: t0 + .milliseconds(10))
        #expect(metrics.timeToFirstByte == .zero)
        #expect(metrics.queuedDuration == .milliseconds(5))
        var retried = OperationTimeline()
        retried.enqueued(at: t0)
        retried.retrying(at: t0 + .milliseconds(1))
        retried.started(at: t0 + .milliseconds(2))
        #expect(retried.metrics(finishedAt: t0 + .milliseconds(3)).attempts == 2, "the first attempt, and the retry")
    }
}
