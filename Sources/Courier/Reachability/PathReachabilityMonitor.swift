#if canImport(Network)
import Network
import NIOConcurrencyHelpers

/// ``SystemReachability``'s monitor on Apple platforms: an `NWPathMonitor` for any interface type.
///
/// The path monitor answers for the device's default path, not for one host: a satisfied path is
/// reported as reachable for every host (probes, when on, check the host itself).
final class PathReachabilityMonitor: PlatformReachabilityMonitor {
    private let onEvent: @Sendable (ReachabilityMonitorEvent) -> Void
    /// The task that reads the path monitor; `nil` before start and after stop.
    private let task = NIOLockedValueBox<(task: Task<Void, Never>?, isStopped: Bool)>((nil, false))

    /// - Parameter onEvent: Receives each path's status, in order.
    init(onEvent: @escaping @Sendable (ReachabilityMonitorEvent) -> Void) {
        self.onEvent = onEvent
    }

    deinit {
        stop()
    }

    func start() {
        let onEvent = onEvent
        // The monitor lives inside the task (NWPathMonitor is an AsyncSequence of paths): iterating
        // starts it, and cancelling the task ends the iteration and cancels the monitor.
        let reader = Task {
            for await path in NWPathMonitor() {
                onEvent(.path(Self.status(of: path)))
            }
        }
        let isStopped = task.withLockedValue { state in
            if !state.isStopped { state.task = reader }
            return state.isStopped
        }
        if isStopped { reader.cancel() }
    }

    func stop() {
        let reader = task.withLockedValue { state in
            state.isStopped = true
            defer { state.task = nil }
            return state.task
        }
        reader?.cancel()
    }

    /// The status a path gives: reachable when satisfied, over the first kind of link the path uses
    /// (Wi-Fi, cellular, wired Ethernet; anything else is `.other`).
    static func status(of path: NWPath) -> ReachabilityStatus {
        guard path.status == .satisfied else { return .unreachable }
        if path.usesInterfaceType(.wifi) { return .reachable(via: .wifi) }
        if path.usesInterfaceType(.cellular) { return .reachable(via: .cellular) }
        if path.usesInterfaceType(.wiredEthernet) { return .reachable(via: .wired) }
        return .reachable(via: .other)
    }
}
#endif
