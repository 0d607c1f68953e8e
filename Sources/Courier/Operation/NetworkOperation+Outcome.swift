import Foundation

// An operation's outcome: set once, then told to handlers, awaiting tasks, streams and observers.
extension NetworkOperation {
    typealias Observer = @Sendable (Result<NetworkResponse, NetworkError>) -> Void

    /// Calls `observer` once with the outcome: now, if the operation already finished.
    func whenFinished(_ observer: @escaping Observer) {
        let outcome: Result<NetworkResponse, NetworkError>? = storage.withLockedValue { storage in
            if let outcome = storage.machine.outcome { return outcome }
            storage.observers.append(observer)
            return nil
        }
        if let outcome { observer(outcome) }
    }

    /// Sets the outcome (once) and tells it, in one step under the lock: nothing can see the operation
    /// finished before its handlers are dispatched.
    func finish(_ result: Result<NetworkResponse, NetworkError>) {
        let (observers, tracked) = storage.withLockedValue { storage in
            storage.machine.finish(result) ? (publishOutcome(&storage), storage.isTracked) : (.none, false)
        }
        if tracked { context.queue.untrack(id) }
        notify(observers)
    }

    /// Marks the operation as remembered by its queue (``NetworkQueue/track(_:)``), which it then
    /// leaves when it finishes. Under the same lock as its outcome, so exactly one side forgets it.
    /// - Returns: `false` when it already finished (the queue forgets it at once).
    func markTracked() -> Bool {
        storage.withLockedValue { storage in
            storage.isTracked = true
            return storage.machine.outcome == nil
        }
    }

    /// Who hears of an outcome once the operation's lock is released (``notify(_:)``): its internal
    /// observers, then the task awaiting ``response()``.
    struct OutcomeNotice {
        var outcome: Result<NetworkResponse, NetworkError>?
        var observers: [Observer] = []
        var waiter: OutcomeWaiter?
        var hadHandlers = false

        /// Nobody to tell.
        static var none: OutcomeNotice { OutcomeNotice() }
    }

    /// Dispatches the outcome to handlers and streams (under the lock, for ordering), clears every
    /// handler, and returns who else to tell once the lock is released.
    func publishOutcome(_ storage: inout Storage) -> OutcomeNotice {
        guard let outcome = storage.machine.outcome else { return .none }
        // A body stream ends with the operation, however it ended (a flight that never ran included);
        // after a flight's own ending this changes nothing.
        if let channel = storage.transfer.channel {
            switch outcome {
            case .success: channel.finish(nil)
            case .failure(let error): channel.finish(error)
            }
        }
        let handlers = storage.handlers
        let queue = context.configuration.callbackQueue
        switch outcome {
        case .success(let response):
            if !handlers.completion.isEmpty || !handlers.stateChange.isEmpty {
                queue.async {
                    for handler in handlers.stateChange { handler(.finished) }
                    for handler in handlers.completion { handler(response) }
                }
            }
        case .failure(let error):
            if !handlers.error.isEmpty || !handlers.stateChange.isEmpty {
                queue.async {
                    for handler in handlers.stateChange { handler(.finished) }
                    for handler in handlers.error { handler(error) }
                }
            }
        }
        monitorFinish(outcome, in: &storage)
        let event: Event = switch outcome {
        case .success(let response): .response(response)
        case .failure(let error): .failure(error)
        }
        for stream in storage.streams.values {
            stream.yield(event)
            stream.finish()
        }
        storage.streams = [:]
        let notice = OutcomeNotice(outcome: outcome, observers: storage.observers, waiter: storage.waiter, hadHandlers: storage.hasHadHandlers)
        storage.handlers = Handlers()
        storage.dependencies = []
        storage.observers = []
        storage.waiter = nil
        return notice
    }

    func notify(_ notice: OutcomeNotice) {
        guard let outcome = notice.outcome else { return }
        for observer in notice.observers { observer(outcome) }
        if let waiter = notice.waiter { resume(waiter, with: outcome, hadHandlers: notice.hadHandlers) }
    }

    func dispatchStateChange(_ state: State, in storage: Storage) {
        let handlers = storage.handlers.stateChange
        guard !handlers.isEmpty else { return }
        context.configuration.callbackQueue.async { for handler in handlers { handler(state) } }
    }

    /// An outcome decided and not yet set: ``deliver()`` sets it and tells the handlers, awaiting tasks
    /// and streams (``finish(_:)``). The queue publishes its own events before that, so whoever watches
    /// the queue hears of an outcome before the code it wakes can enqueue more work, and nothing sees the
    /// operation finished before its handlers are dispatched.
    struct PendingOutcome {
        /// The operation; `nil` when there is nothing to deliver (it froze instead).
        let operation: NetworkOperation?
        /// Its outcome, validated by its own rules.
        let result: Result<NetworkResponse, NetworkError>?

        func deliver() {
            if let operation, let result { operation.finish(result) }
        }
    }
}
