import Dispatch
import NIOConcurrencyHelpers

/// The one queue every engine shares, so the whole program keeps one concurrency limit.
///
/// MKNetworkKit's insight: on a narrow mobile link, a background upload must not starve the
/// thumbnails the user is looking at, so all requests go through one queue with one width and
/// priorities. `NetworkQueue.shared` is that queue; engines use it unless given another (tests
/// give each their own).
///
/// ```swift
/// NetworkQueue.shared.maximumConcurrentOperations = 2      // on a slow link
/// for await count in NetworkQueue.shared.activity { spinner.isHidden = count == 0 }
/// NetworkQueue.shared.cancelOperations(containing: "/thumbnails/")
/// ```
///
/// Identical GET and HEAD operations in the queue at once share one request (coalescing); each
/// still hears its own events exactly once.
public final class NetworkQueue: Sendable {
    /// The process-wide queue.
    public static let shared = NetworkQueue()

    typealias FlightID = QueueStateMachine.FlightID

    struct State {
        var machine: QueueStateMachine
        var operations: [OperationID: NetworkOperation] = [:]
        var flights: [FlightID: FlightHandle] = [:]
        /// The attempt a flight is at, for flights an interceptor retried (absent: the first).
        var attempts: [FlightID: (number: Int, since: ContinuousClock.Instant)] = [:]
        /// Submitted operations not in the state machine: reading their cache entry, held for
        /// connectivity, or being frozen. Cancellation by predicate sees them too.
        var outside: [OperationID: NetworkOperation] = [:]
        var activityStreams: [Int: AsyncStream<Int>.Continuation] = [:]
        var eventStreams: [Int: AsyncStream<QueueEvent>.Continuation] = [:]
        var nextStreamKey = 0
        var activityHandler: (@Sendable (Int) -> Void)?
    }

    let state: NIOLockedValueBox<State>
    /// Serial, so activity callbacks arrive in the order the counts changed.
    let notificationQueue = DispatchQueue(label: "courier.queue.notifications")
    /// The queue's one throttle, its limit changed in place (so prepared and running transfers see a new one).
    private let bandwidth: Throttle
    /// The queue-wide bandwidth limit (without a limit while ``maximumBytesPerSecond`` is `nil`), as the
    /// list of throttles a transfer without one of its own obeys: made once, not an array per request.
    let throttles: [Throttle]

    /// Creates a queue.
    /// - Parameters:
    ///   - maximumConcurrentOperations: How many requests may run at once; 6 by default.
    ///   - isSuspended: Whether the queue starts suspended (accepting but not starting work until ``go()``).
    public init(maximumConcurrentOperations: Int = 6, isSuspended: Bool = false) {
        state = NIOLockedValueBox(State(machine: QueueStateMachine(maximumConcurrent: maximumConcurrentOperations, isSuspended: isSuspended)))
        bandwidth = Throttle(limit: nil)
        throttles = [bandwidth]
    }

    deinit {
        // A private queue that goes away ends its streams, so nobody iterates them forever.
        let (activity, events) = state.withLockedValue { ($0.activityStreams.values, $0.eventStreams.values) }
        for continuation in activity { continuation.finish() }
        for continuation in events { continuation.finish() }
    }

    /// How many requests may run at once. Lowering it never cancels running work; raising it
    /// starts waiting work at once. Coalesced operations count once.
    public var maximumConcurrentOperations: Int {
        get { state.withLockedValue { $0.machine.maximumConcurrent } }
        set { apply { $0.setMaximumConcurrent(newValue) } }
    }

    /// A bandwidth limit, in bytes per second, shared by every transfer of the queue, downloads and
    /// uploads alike (ASIHTTPRequest's throttling); `nil` (the default) for none. A transfer that is over
    /// the limit stops reading (or sending) until it is under again, so TCP slows the peer down. Applies
    /// at once: to transfers running, and to operations already enqueued and waiting, from their next chunk.
    public var maximumBytesPerSecond: Int? {
        get { bandwidth.limit }
        set { bandwidth.setLimit(newValue) }
    }

    /// Whether the queue holds back waiting work.
    public var isSuspended: Bool { state.withLockedValue { $0.machine.isSuspended } }

    /// Stops starting waiting operations; running ones go on. New operations are accepted.
    public func suspend() { apply { $0.suspend() } }

    /// Starts waiting operations, up to the limit (ASINetworkQueue's `go`).
    public func go() { apply { $0.resume() } }

    /// Operations in the queue: waiting for dependencies, waiting for a slot, or running.
    public var operationCount: Int { state.withLockedValue { $0.machine.operationCount } }

    /// The operations in the queue, in no particular order.
    public var operations: [NetworkOperation] { state.withLockedValue { Array($0.operations.values) } }

    /// Called with the operation count whenever it changes (the network activity indicator), in order,
    /// on a private serial queue.
    public var activityHandler: (@Sendable (Int) -> Void)? {
        get { state.withLockedValue { $0.activityHandler } }
        set { state.withLockedValue { $0.activityHandler = newValue } }
    }

    /// The operation count: the current value first, then every change, in order.
    public var activity: AsyncStream<Int> {
        let (stream, continuation) = AsyncStream.makeStream(of: Int.self, bufferingPolicy: .bufferingNewest(64))
        state.withLockedValue { state in
            continuation.yield(state.machine.operationCount)
            let key = state.nextStreamKey
            state.activityStreams[key] = continuation
            state.nextStreamKey += 1
            continuation.onTermination = { [weak self] _ in _ = self?.state.withLockedValue { $0.activityStreams.removeValue(forKey: key) } }
        }
        return stream
    }

    /// Operations starting, finishing and failing, and the queue running dry (ASINetworkQueue's delegate
    /// calls), from the moment of access on, in the order they happen: an operation's outcome (and
    /// `.queueFinished`, when it was the last) is published before its handlers and awaiting tasks hear
    /// of it, so before anything they enqueue starts. At that moment the operation itself may not report
    /// its outcome yet: take the response or error from the event.
    public var events: AsyncStream<QueueEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: QueueEvent.self, bufferingPolicy: .bufferingNewest(1024))
        state.withLockedValue { state in
            let key = state.nextStreamKey
            state.eventStreams[key] = continuation
            state.nextStreamKey += 1
            continuation.onTermination = { [weak self] _ in _ = self?.state.withLockedValue { $0.eventStreams.removeValue(forKey: key) } }
        }
        return stream
    }

    // MARK: Cancellation

    /// Cancels every operation in the queue, including those waiting for connectivity or for their
    /// cache entry to be read. Frozen operations and the outbox's replays are not queue work: they are
    /// what the user asked to keep (cancel one with ``NetworkOperation/cancel()``, or drop it from the
    /// ``Outbox``).
    public func cancelAll() { cancelOperations { _ in true } }

    /// Cancels the operations whose URL contains `substring`.
    /// - Parameter substring: Text to look for in each operation's URL.
    public func cancelOperations(containing substring: String) {
        cancelOperations { $0.urlString.contains(substring) }
    }

    /// Cancels the operations for which `predicate` is true.
    /// - Parameter predicate: Decides, for each operation in the queue, whether to cancel it.
    public func cancelOperations(where predicate: (NetworkOperation) -> Bool) {
        let candidates = state.withLockedValue { state in
            Array(state.operations.values) + state.outside.values.filter { state.operations[$0.id] == nil }
        }
        for operation in candidates where !operation.isKept && !operation.isReplay && predicate(operation) {
            operation.cancel()
        }
    }

    /// Remembers a submitted operation until it finishes, so cancellation finds it wherever it waits.
    /// The operation forgets itself when it finishes (``untrack(_:)``): if it finished before it was
    /// marked tracked, it is forgotten here.
    func track(_ operation: NetworkOperation) {
        state.withLockedValue { $0.outside[operation.id] = operation }
        if !operation.markTracked() { untrack(operation.id) }
    }

    /// Forgets a tracked operation that finished.
    func untrack(_ id: OperationID) {
        state.withLockedValue { _ = $0.outside.removeValue(forKey: id) }
    }
}

/// Something that happened in a ``NetworkQueue``.
public enum QueueEvent: Sendable {
    /// An operation's request started (or it joined an identical one already running).
    case started(NetworkOperation)
    /// An operation succeeded.
    case finished(NetworkOperation, NetworkResponse)
    /// An operation failed or was cancelled.
    case failed(NetworkOperation, NetworkError)
    /// The last operation in the queue finished: the queue is empty.
    case queueFinished
}
