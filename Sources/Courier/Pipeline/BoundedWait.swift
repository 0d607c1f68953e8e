import NIOConcurrencyHelpers

/// Waits for work that may never end (an interceptor's retry decision, a token refresh) no longer than
/// a deadline, and no longer than the waiting task is not cancelled. The work runs in a task of its own;
/// when the wait ends first, that task is cancelled and not waited for, so work that ignores
/// cancellation cannot hold the caller.
final class BoundedWait<Value: Sendable>: Sendable {
    /// How the wait ended.
    enum Outcome: Sendable {
        case value(Value)
        case timedOut
        case cancelled
    }

    private struct State {
        var continuation: CheckedContinuation<Outcome, Never>?
        var tasks: [Task<Void, Never>] = []
        var outcome: Outcome?
    }

    private let state = NIOLockedValueBox(State())

    private init() {}

    /// Runs `work` until it answers, `deadline` passes (`nil`: no deadline) or the calling task is cancelled.
    static func run(until deadline: ContinuousClock.Instant?, _ work: @escaping @Sendable () async -> Value) async -> Outcome {
        let wait = BoundedWait()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                // Cancelled before it began: the answer is already there.
                if let outcome = wait.state.withLockedValue({ state -> Outcome? in
                    if state.outcome == nil { state.continuation = continuation }
                    return state.outcome
                }) {
                    continuation.resume(returning: outcome)
                    return
                }
                var tasks = [Task { wait.finish(.value(await work())) }]
                if let deadline {
                    tasks.append(Task {
                        guard (try? await Task.sleep(until: deadline, clock: .continuous)) != nil else { return }
                        wait.finish(.timedOut)
                    })
                }
                wait.attach(tasks)
            }
        } onCancel: {
            wait.finish(.cancelled)
        }
    }

    private func attach(_ tasks: [Task<Void, Never>]) {
        let finished = state.withLockedValue { state in
            state.tasks = tasks
            return state.outcome != nil
        }
        if finished { for task in tasks { task.cancel() } }
    }

    /// The first call answers; every contender is then cancelled.
    private func finish(_ outcome: Outcome) {
        let (continuation, tasks) = state.withLockedValue { state -> (CheckedContinuation<Outcome, Never>?, [Task<Void, Never>]) in
            guard state.outcome == nil else { return (nil, []) }
            state.outcome = outcome
            defer { state.continuation = nil }
            return (state.continuation, state.tasks)
        }
        continuation?.resume(returning: outcome)
        for task in tasks { task.cancel() }
    }
}
