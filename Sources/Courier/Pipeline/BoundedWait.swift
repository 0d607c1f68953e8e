import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// Waits for work that may never end (an interceptor's retry decision, a token refresh) no longer than
/// a deadline, and no longer than the waiting task is not cancelled. The work runs in a task of its own;
/// when the wait ends first, that task is cancelled and not waited for, so work that ignores
/// cancellation cannot hold the caller. The deadline is a task scheduled on an event loop, like
/// ``DeadlineRace``'s: cancelled and freed when the wait ends first.
package final class BoundedWait<Value: Sendable>: Sendable {
    /// How the wait ended.
    package enum Outcome: Sendable {
        case value(Value)
        case timedOut
        case cancelled
    }

    private struct State {
        var continuation: CheckedContinuation<Outcome, Never>?
        var work: Task<Void, Never>?
        var timer: Scheduled<Void>?
        var outcome: Outcome?
    }

    private let state = NIOLockedValueBox(State())

    private init() {}

    /// Runs `work` until it answers, `deadline` passes (`nil`: no deadline) or the calling task is cancelled.
    package static func run(until deadline: ContinuousClock.Instant?, _ work: @escaping @Sendable () async -> Value) async -> Outcome {
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
                let task = Task { wait.finish(.value(await work())) }
                let timer = deadline.map { deadline in
                    MultiThreadedEventLoopGroup.singleton.any().scheduleTask(deadline: NIODeadline(deadline)) { wait.finish(.timedOut) }
                }
                wait.attach(task, timer: timer)
            }
        } onCancel: {
            wait.finish(.cancelled)
        }
    }

    private func attach(_ work: Task<Void, Never>, timer: Scheduled<Void>?) {
        let finished = state.withLockedValue { state in
            (state.work, state.timer) = (work, timer)
            return state.outcome != nil
        }
        if finished {
            work.cancel()
            timer?.cancel()
        }
    }

    /// The first call answers; every contender is then cancelled.
    private func finish(_ outcome: Outcome) {
        let (continuation, work, timer) = state.withLockedValue { state -> (CheckedContinuation<Outcome, Never>?, Task<Void, Never>?, Scheduled<Void>?) in
            guard state.outcome == nil else { return (nil, nil, nil) }
            state.outcome = outcome
            defer { state.continuation = nil }
            return (state.continuation, state.work, state.timer)
        }
        continuation?.resume(returning: outcome)
        work?.cancel()
        timer?.cancel()
    }
}
