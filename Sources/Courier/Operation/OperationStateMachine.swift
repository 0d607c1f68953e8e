/// The lifecycle of one ``NetworkOperation``, as a pure value.
///
/// `ready` → `waiting` (enqueued) → `executing` (its request is on the wire) → `finished`, with
/// exactly one outcome. A freezable operation that cannot be sent goes from `waiting` or `executing`
/// to `frozen` (committed to the outbox), and from there to `finished` when its replay has an outcome. The rules of the operation tutorial hold: an operation cancelled before
/// it is enqueued finishes at once without touching the network; cancelling a queued or running
/// one asks the queue to remove it, and it finishes when the queue confirms; an operation in a
/// queue is never marked finished by anyone but the queue.
struct OperationStateMachine {
    private(set) var state: NetworkOperation.State = .ready
    /// The outcome, once known (on the heap: a waiting operation keeps one word for it).
    var outcome: Result<NetworkResponse, NetworkError>? { storedOutcome.value }
    private var storedOutcome = HeapOptional<Result<NetworkResponse, NetworkError>>()
    /// Set as soon as cancellation is asked for, before the queue confirms it.
    private(set) var isCancellationRequested = false
    /// Whether its request ever went out (it reached `executing`).
    private(set) var hasStarted = false

    enum EnqueueAction: Equatable {
        /// Hand the operation to the queue (state is now `waiting`).
        case submit
        /// It cannot run (bad input, or cancelled before it started): it finished with this outcome.
        case finished
        /// Already enqueued or finished: nothing to do.
        case none
    }

    enum CancelAction: Equatable {
        /// It was not enqueued: it finished as cancelled.
        case finished
        /// Ask the queue to remove it; the queue finishes it.
        case removeFromQueue
        /// It is frozen: remove its row from the outbox (it is never frozen again). It finishes when the
        /// outbox confirms: as cancelled, or with the answer of a replay that was already on the wire.
        case dropFromOutbox
        /// Already finished: nothing to do.
        case none
    }

    mutating func enqueue(failingWith error: NetworkError?) -> EnqueueAction {
        guard state == .ready else { return .none }
        if let error {
            _ = finish(.failure(error))
            return .finished
        }
        state = .waiting
        return .submit
    }

    /// The queue started the operation's flight. Returns whether the state changed.
    mutating func start() -> Bool {
        guard state == .waiting else { return false }
        state = .executing
        hasStarted = true
        return true
    }

    /// The operation was written to the outbox. Returns whether the state changed.
    mutating func freeze() -> Bool {
        guard state == .waiting || state == .executing, !isCancellationRequested else { return false }
        state = .frozen
        return true
    }

    /// Whether a progress event may be delivered now.
    var acceptsProgress: Bool { state == .executing }

    /// The operation's outcome is known. Returns `false` if it had already finished.
    mutating func finish(_ result: Result<NetworkResponse, NetworkError>) -> Bool {
        guard state != .finished else { return false }
        state = .finished
        storedOutcome.value = result
        return true
    }

    mutating func cancel(url: String?) -> CancelAction {
        switch state {
        case .ready:
            isCancellationRequested = true
            _ = finish(.failure(.cancelled(url: url)))
            return .finished
        case .waiting, .executing:
            isCancellationRequested = true
            return .removeFromQueue
        case .frozen:
            guard !isCancellationRequested else { return .none }
            isCancellationRequested = true
            return .dropFromOutbox
        case .finished:
            return .none
        }
    }
}
