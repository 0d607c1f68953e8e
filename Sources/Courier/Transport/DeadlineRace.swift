import NIOConcurrencyHelpers
import NIOCore

/// A flight racing its total timeout: whichever ends first answers, once; the other is cancelled and
/// not waited for (a transport that ignores cancellation cannot hold the answer back). The timer is a
/// task scheduled on an event loop, cancelled (and its memory freed) when the flight answers first: a
/// cancelled `Task.sleep` would keep its memory until its deadline (swiftlang/swift#60441), which under
/// sustained load with a 30-second timeout is tens of megabytes.
final class DeadlineRace: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Result<NetworkResponse, NetworkError>, Never>?
        var flight: Task<Void, Never>?
        var timer: Scheduled<Void>?
        var answer: Result<NetworkResponse, NetworkError>?
        var isCancelled = false
    }

    private let state = NIOLockedValueBox(State())
    private let url: String

    init(url: String) {
        self.url = url
    }

    /// Where the answer goes.
    func start(_ continuation: CheckedContinuation<Result<NetworkResponse, NetworkError>, Never>) {
        state.withLockedValue { $0.continuation = continuation }
    }

    /// The two contenders; cancelled at once when the race is already over or cancelled.
    func attach(_ flight: Task<Void, Never>, timer: Scheduled<Void>) {
        let cancelBoth = state.withLockedValue { state in
            state.flight = flight
            state.timer = timer
            return state.answer != nil || state.isCancelled
        }
        if cancelBoth {
            flight.cancel()
            timer.cancel()
        }
    }

    /// The first call answers; the flight and the timer are then cancelled.
    /// - Parameter won: Run only when this call is the first, before the flight is cancelled.
    func finish(_ result: Result<NetworkResponse, NetworkError>, won: (() -> Void)? = nil) {
        let (first, continuation, flight, timer) = state.withLockedValue { state in
            guard state.answer == nil else {
                return (false, nil as CheckedContinuation<Result<NetworkResponse, NetworkError>, Never>?, nil as Task<Void, Never>?, nil as Scheduled<Void>?)
            }
            state.answer = result
            defer { state.continuation = nil }
            return (true, state.continuation, state.flight, state.timer)
        }
        if first { won?() }
        continuation?.resume(returning: result)
        flight?.cancel()
        timer?.cancel()
    }

    /// The task awaiting the race was cancelled: it answers as cancelled at once, and the flight is cancelled.
    func cancel() {
        state.withLockedValue { $0.isCancelled = true }
        finish(.failure(.cancelled(url: url)))
    }
}
