import Logging

extension EngineConnectivity {
    /// The reachability an engine uses unless its configuration gives one.
    static func systemReachability(host: String, port: Int?, logger: Logger) -> any Reachability {
        // Until SystemReachability lands: always reachable.
        ManualReachability(.reachable(via: .other))
    }
}
