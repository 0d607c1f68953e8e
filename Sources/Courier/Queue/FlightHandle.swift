import Synchronization

/// The running task of one flight, cancellable before the task even exists: the queue creates the
/// handle under its lock and starts the task after releasing it.
final class FlightHandle: Sendable {
    let id: QueueStateMachine.FlightID
    /// Inline (a `Mutex`, not a box of its own): one allocation per flight, not two.
    private let state = Mutex<(task: Task<Void, Never>?, isCancelled: Bool)>((nil, false))

    init(id: QueueStateMachine.FlightID) {
        self.id = id
    }

    func attach(_ task: Task<Void, Never>) {
        let cancelNow = state.withLock { state in
            state.task = task
            return state.isCancelled
        }
        if cancelNow { task.cancel() }
    }

    func cancel() {
        let task = state.withLock { state in
            state.isCancelled = true
            return state.task
        }
        task?.cancel()
    }
}
