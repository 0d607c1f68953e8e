import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// Thread-safe request statistics of one ``TestServer``, updated by the connection
/// handlers and read through the public `TestServer` API.
///
/// Waiters (``wait(for:count:timeout:)``) are stored with their continuations and are
/// resumed by the handler that moves a counter past their target, or by an event-loop
/// timer when their timeout passes.
final class ServerStatistics: Sendable {
    /// The counter a waiter is interested in.
    enum Counter: Sendable {
        case requests
        case abortedRequests
    }

    /// How a request that was in flight ended.
    enum Outcome: Sendable {
        /// The complete response was handed to the connection.
        case completed
        /// The client closed the connection before the response was complete.
        case abortedByClient
        /// The server closed the connection on purpose (e.g. `/drop-mid-body`, shutdown).
        case closedByServer
    }

    /// Identity data of a request returned by ``requestStarted(method:uri:path:headers:)``.
    struct Ticket: Sendable {
        /// Unique id of the request within this server.
        var id: UInt64
        /// The number of requests for the same path since the last reset, this one included.
        var pathCount: Int
    }

    /// Maximum number of body bytes kept per recorded request.
    static let recordedBodyLimit = 1 << 20
    /// Maximum number of recorded requests kept; the oldest are dropped beyond it, so that
    /// long benchmark runs do not grow memory without bound.
    static let recordedRequestLimit = 10_000
    /// Maximum total body bytes kept over all recorded requests (oldest records dropped first).
    static let recordedBodyBytesLimit = 256 << 20

    private struct Waiter: Sendable {
        var counter: Counter
        var target: Int
        var continuation: CheckedContinuation<Bool, Never>
        var timer: Scheduled<Void>?
    }

    private struct State: Sendable {
        var nextRequestID: UInt64 = 0
        var nextWaiterID: UInt64 = 0
        var requestCount = 0
        var pathCounts: [String: Int] = [:]
        var inFlight = 0
        var maxInFlight = 0
        var aborted = 0
        var records = CircularBuffer<(id: UInt64, request: RecordedRequest)>()
        var recordedBodyBytes = 0
        var waiters: [UInt64: Waiter] = [:]

        /// The current value of `counter`.
        func value(of counter: Counter) -> Int {
            switch counter {
            case .requests: requestCount
            case .abortedRequests: aborted
            }
        }

        /// Drops the oldest records while a recording limit is exceeded (keeping the newest).
        mutating func trimRecords() {
            while records.count > 1,
                records.count > ServerStatistics.recordedRequestLimit
                    || recordedBodyBytes > ServerStatistics.recordedBodyBytesLimit
            {
                recordedBodyBytes -= records.removeFirst().request.body.count
            }
        }

        /// Removes and returns every waiter whose target has been reached.
        mutating func takeSatisfiedWaiters() -> [Waiter] {
            var satisfied: [Waiter] = []
            for (id, waiter) in waiters where value(of: waiter.counter) >= waiter.target {
                satisfied.append(waiter)
                waiters[id] = nil
            }
            return satisfied
        }
    }

    /// All mutable state, guarded by a pthread-based lock (NIO's lock is understood by the
    /// thread sanitizer, unlike `Synchronization.Mutex` on Linux).
    private let state = NIOLockedValueBox(State())

    /// Creates empty statistics.
    init() {}

    // MARK: Snapshots

    /// Requests whose head was received since start/reset.
    var requestCount: Int { state.withLockedValue { $0.requestCount } }
    /// Requests received and not yet fully answered.
    var inFlight: Int { state.withLockedValue { $0.inFlight } }
    /// High-water mark of ``inFlight`` since start/reset.
    var maxInFlight: Int { state.withLockedValue { $0.maxInFlight } }
    /// Requests whose connection the client closed before the response was complete.
    var abortedRequestCount: Int { state.withLockedValue { $0.aborted } }
    /// The recorded requests in arrival order.
    var recordedRequests: [RecordedRequest] { state.withLockedValue { $0.records.map(\.request) } }

    /// Requests received for exactly `path` (no query) since start/reset.
    func requestCount(path: String) -> Int {
        state.withLockedValue { $0.pathCounts[path] ?? 0 }
    }

    /// Zeroes the counters and clears the recorded requests; `maxInFlight` becomes `inFlight`.
    func reset() {
        state.withLockedValue { state in
            state.requestCount = 0
            state.pathCounts = [:]
            state.aborted = 0
            state.records.removeAll()
            state.recordedBodyBytes = 0
            state.maxInFlight = state.inFlight
        }
    }

    // MARK: Updates from the handlers

    /// Records the arrival of a request head and marks the request as in flight.
    func requestStarted(
        method: String,
        uri: String,
        path: String,
        headers: [(name: String, value: String)]
    ) -> Ticket {
        let record = RecordedRequest(method: method, uri: uri, path: path, headers: headers)
        let (ticket, satisfied) = state.withLockedValue { state in
            state.nextRequestID &+= 1
            let id = state.nextRequestID
            state.requestCount += 1
            let pathCount = (state.pathCounts[path] ?? 0) + 1
            state.pathCounts[path] = pathCount
            state.inFlight += 1
            state.maxInFlight = max(state.maxInFlight, state.inFlight)
            state.records.append((id: id, request: record))
            state.trimRecords()
            return (Ticket(id: id, pathCount: pathCount), state.takeSatisfiedWaiters())
        }
        Self.resume(satisfied, with: true)
        return ticket
    }

    /// Stores (the first 1 MiB of) the body of the request `id`, if it is still recorded.
    func recordBody(id: UInt64, body: [UInt8]) {
        let kept = body.count > Self.recordedBodyLimit ? Array(body.prefix(Self.recordedBodyLimit)) : body
        state.withLockedValue { state in
            guard let index = state.records.lastIndex(where: { $0.id == id }) else { return }
            state.recordedBodyBytes += kept.count - state.records[index].request.body.count
            state.records[index].request.body = kept
            state.trimRecords()
        }
    }

    /// Marks a request as no longer in flight.
    func requestFinished(_ outcome: Outcome) {
        let satisfied = state.withLockedValue { state in
            state.inFlight = max(0, state.inFlight - 1)
            if outcome == .abortedByClient {
                state.aborted += 1
            }
            return state.takeSatisfiedWaiters()
        }
        Self.resume(satisfied, with: true)
    }

    /// Counts an already answered request as aborted because its final bytes could not be
    /// delivered (the client closed the connection first).
    func responseDeliveryFailed() {
        let satisfied = state.withLockedValue { state in
            state.aborted += 1
            return state.takeSatisfiedWaiters()
        }
        Self.resume(satisfied, with: true)
    }

    // MARK: Waiting

    /// Suspends until `counter >= count` or `timeout` passes; returns whether the count was reached.
    ///
    /// The continuation is resumed by whichever comes first: the update that reaches the
    /// target, the timeout (an event-loop scheduled task) or task cancellation.
    func wait(for counter: Counter, count: Int, timeout: Duration) async -> Bool {
        let waiterID = state.withLockedValue { state in
            state.nextWaiterID &+= 1
            return state.nextWaiterID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let reached = state.withLockedValue { state in
                    if state.value(of: counter) >= count { return true }
                    state.waiters[waiterID] = Waiter(
                        counter: counter, target: count, continuation: continuation, timer: nil
                    )
                    return false
                }
                if reached {
                    continuation.resume(returning: true)
                    return
                }
                if Task.isCancelled || timeout <= .zero {
                    self.resolveWaiter(waiterID, with: false)
                    return
                }
                let timer = MultiThreadedEventLoopGroup.singleton.next().scheduleTask(
                    in: TimeAmount(timeout)
                ) { [self] in
                    self.resolveWaiter(waiterID, with: false)
                }
                let stillWaiting = state.withLockedValue { state in
                    guard state.waiters[waiterID] != nil else { return false }
                    state.waiters[waiterID]?.timer = timer
                    return true
                }
                if !stillWaiting {
                    timer.cancel()
                }
            }
        } onCancel: {
            self.resolveWaiter(waiterID, with: false)
        }
    }

    /// Resumes the waiter `id` with `result` if it is still waiting.
    private func resolveWaiter(_ id: UInt64, with result: Bool) {
        let waiter = state.withLockedValue { state in
            state.waiters.removeValue(forKey: id)
        }
        guard let waiter else { return }
        waiter.timer?.cancel()
        waiter.continuation.resume(returning: result)
    }

    /// Resumes waiters outside of the lock and cancels their timers.
    private static func resume(_ waiters: [Waiter], with result: Bool) {
        for waiter in waiters {
            waiter.timer?.cancel()
            waiter.continuation.resume(returning: result)
        }
    }
}
