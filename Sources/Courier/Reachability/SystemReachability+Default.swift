import Logging

extension EngineConnectivity {
    /// The reachability an engine uses unless its configuration gives one: the system's monitor for its
    /// host (one shared netlink watcher per process on Linux; NWPathMonitor on Apple platforms).
    static func systemReachability(host: String, port: Int?, logger: Logger) -> any Reachability {
        SystemReachability(host: host, port: port, probes: false, logger: logger)
    }
}
