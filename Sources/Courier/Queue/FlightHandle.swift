import NIOConcurrencyHelpers

/// The running task of one flight, cancellable before the task even exists: the queue creates the
/// handle under its lock and starts the task after releasing it.
final class FlightHandle: Sendable {
    let id: QueueStateMachine.FlightID
    private let state = NIOLockedValueBox<(task: Task<Void, Never>?, isCancelled: Bool)>((nil, false))

    init(id: QueueStateMachine.FlightID) {
        self.id = id
    }

    func attach(_ task: Task<Void, Never>) {
        let cancelNow = state.withLockedValue { state in
            state.task = task
            return state.isCancelled
        }
        if cancelNow { task.cancel() }
    }

    func cancel() {
        let task = state.withLockedValue { state in
            state.isCancelled = true
            return state.task
        }
        task?.cancel()
    }
}
