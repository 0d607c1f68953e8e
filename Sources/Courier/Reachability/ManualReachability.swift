import NIOConcurrencyHelpers

/// A ``Reachability`` that reports what it is told: for tests, for apps that learn about the network
/// their own way, and for turning an engine's reachability off (`ManualReachability()` stays
/// reachable over Wi-Fi forever).
///
/// ```swift
/// let reachability = ManualReachability(.reachable(via: .cellular))
/// let engine = NetworkEngine(host: "api.example.com", configuration: .init { $0.reachability = reachability })
/// reachability.setStatus(.unreachable)
/// ```
public final class ManualReachability: Reachability {
    private struct State {
        var status: ReachabilityStatus
        var streams: [Int: AsyncStream<ReachabilityStatus>.Continuation] = [:]
        var nextKey = 0
    }

    private let state: NIOLockedValueBox<State>

    /// Creates a reachability with a starting status.
    /// - Parameter status: The status until ``setStatus(_:)`` changes it; reachable over Wi-Fi by default.
    public init(_ status: ReachabilityStatus = .reachable(via: .wifi)) {
        state = NIOLockedValueBox(State(status: status))
    }

    public var status: ReachabilityStatus { state.withLockedValue { $0.status } }

    /// Changes the status; readers of ``statusUpdates()`` hear it if it differs from the last one.
    /// - Parameter status: The new status.
    public func setStatus(_ status: ReachabilityStatus) {
        state.withLockedValue { state in
            guard state.status != status else { return }
            state.status = status
            // Yielding never calls reader code synchronously, so it is safe under the lock and keeps order.
            for stream in state.streams.values { stream.yield(status) }
        }
    }

    public func statusUpdates() -> AsyncStream<ReachabilityStatus> {
        let (stream, continuation) = AsyncStream.makeStream(of: ReachabilityStatus.self, bufferingPolicy: .bufferingNewest(16))
        state.withLockedValue { state in
            continuation.yield(state.status)
            let key = state.nextKey
            state.nextKey += 1
            state.streams[key] = continuation
            continuation.onTermination = { [weak self] _ in _ = self?.state.withLockedValue { $0.streams.removeValue(forKey: key) } }
        }
        return stream
    }
}
