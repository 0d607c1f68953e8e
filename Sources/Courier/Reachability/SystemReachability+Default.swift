import Logging
import NIOConcurrencyHelpers

extension EngineConnectivity {
    /// A monitor, held weakly: it lives as long as an engine uses it.
    private struct SharedMonitor: Sendable {
        weak var monitor: SystemReachability?
    }

    /// Monitors shared by the engines of one host and port (see ``systemReachability(host:port:logger:)``).
    private static let sharedMonitors = NIOLockedValueBox<[String: SharedMonitor]>([:])

    /// The reachability an engine uses unless its configuration gives one: the system's monitor for its
    /// host (one shared netlink watcher per process on Linux; NWPathMonitor on Apple platforms).
    ///
    /// Engines of one host and port share one monitor, so they always see the same status: engines that
    /// share their reachability (and limits) share a queue group, whose width must follow one source
    /// (see ``LinkGroup``). The monitor lives as long as an engine uses it; the first engine's logger is
    /// the monitor's.
    static func systemReachability(host: String, port: Int?, logger: Logger) -> any Reachability {
        let key = "\(host.lowercased()):\(port.map(String.init) ?? "")"
        return sharedMonitors.withLockedValue { monitors in
            if let monitor = monitors[key]?.monitor { return monitor }
            monitors = monitors.filter { $0.value.monitor != nil }   // forget the ones no engine uses any more
            let monitor = SystemReachability(host: host, port: port, probes: false, logger: logger)
            monitors[key] = SharedMonitor(monitor: monitor)
            return monitor
        }
    }
}
