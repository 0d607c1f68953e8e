public import Logging

/// The system's view of whether a host can be reached: a ``Reachability`` that follows the network.
///
/// - On Linux it listens to the kernel's announcements of link, address and route changes on a
///   `NETLINK_ROUTE` socket (one thread for the whole process, asleep until the kernel speaks) and,
///   at each change, asks the kernel for its route to the host without sending anything. The host is
///   reachable when that route leaves through an interface that is up and running; the kind of link
///   comes from sysfs (Wi-Fi, cellular (`wwan`), loopback as `.other`, anything else wired).
///   A host name that does not resolve counts as unreachable only when no interface but loopback is up,
///   since DNS may simply be down.
/// - On Apple platforms it follows `NWPathMonitor`'s path, which is the same for every host.
/// - Where no monitor can run (a sandbox without netlink sockets, another platform) it reports
///   `.reachable(via: .other)` for good, so that requests are never held back by a missing monitor.
///
/// With `probes` and a port, a route that says reachable is confirmed by opening a TCP connection to the
/// host (2 seconds at most). A failed probe reports `.unreachable` and retries after 0.5 seconds, doubling
/// up to 30 seconds; a change of the network restarts it. A comeback from unreachable is reported once a
/// probe connects. Probing is the only timed activity, and only when asked for.
///
/// The monitor runs until ``stop()`` or until the object is released.
///
/// ```swift
/// let reachability = SystemReachability(host: "api.example.com", port: 443, probes: true)
/// for await status in reachability.statusUpdates() {
///     print(status)  // "reachable via wifi", then "unreachable", ...
/// }
/// ```
public final class SystemReachability: Reachability {
    /// The host this monitor follows.
    public let host: String
    /// The port that probes connect to, if any.
    public let port: Int?

    private let driver: ReachabilityDriver
    private let monitor: any PlatformReachabilityMonitor

    /// Starts following a host.
    ///
    /// On Linux the first answer is known when the initializer returns (for a literal address; a name
    /// is looked up in the background and, until it resolves, counts as reachable whenever a network
    /// interface other than loopback is up). It never waits for DNS or for a probe.
    ///
    /// - Parameters:
    ///   - host: A host name, or a literal IPv4 or IPv6 address (brackets allowed: `[::1]`).
    ///   - port: The TCP port that probes connect to (1...65535).
    ///   - probes: Whether to confirm a reachable route with a TCP connection to `host:port`; ignored
    ///     without a port.
    ///   - logger: Where the monitor logs changes and problems, at debug and trace level; silent when `nil`.
    public convenience init(host: String, port: Int? = nil, probes: Bool = false, logger: Logger? = nil) {
        self.init(host: host, port: port, probes: probes, logger: logger ?? .courierSilent, prober: ReachabilityDriver.tcpProbe) {
            Self.platformMonitor(host: $0, logger: $1, onEvent: $2)
        }
    }

    /// A reachability over any monitor and prober (for tests).
    init(
        host: String, port: Int?, probes: Bool, logger: Logger, prober: @escaping ReachabilityDriver.Prober,
        monitor makeMonitor: (String, Logger, @escaping @Sendable (ReachabilityMonitorEvent) -> Void) -> any PlatformReachabilityMonitor
    ) {
        self.host = host
        self.port = port
        if probes, port == nil {
            logger.debug("reachability probes need a port; not probing", metadata: ["courier-host": "\(host)"])
        }
        // "[::1]", as in a URL, is the address ::1.
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        let driver = ReachabilityDriver(host: bare, port: port, probes: probes, logger: logger, prober: prober)
        self.driver = driver
        monitor = makeMonitor(bare, logger) { event in driver.handle(event) }
        monitor.start()
    }

    deinit {
        monitor.stop()
        driver.stop()
    }

    /// The status now: the last one reported.
    public var status: ReachabilityStatus { driver.status }

    /// The status now, then every change, in order, until the reader stops reading or the monitor stops.
    ///
    /// Each call makes a new, independent sequence. A reader that falls behind keeps the 16 newest
    /// changes.
    /// - Returns: A sequence that starts with the current status.
    public func statusUpdates() -> AsyncStream<ReachabilityStatus> {
        driver.statusUpdates()
    }

    /// The status once the first complete answer is known. On Linux that is at once for a literal
    /// address, and after the first lookup (which may wait for DNS) for a name; with probes, after the
    /// first probe when the route says reachable; on Apple platforms, after the path monitor's first
    /// path. Returns the current status if the monitor was stopped. It does not end early when the
    /// calling task is cancelled.
    ///
    /// ```swift
    /// let reachability = SystemReachability(host: "example.com", port: 443, probes: true)
    /// print(await reachability.settledStatus())  // "reachable via wired"
    /// ```
    /// - Returns: The status.
    public func settledStatus() async -> ReachabilityStatus {
        await driver.settledStatus()
    }

    /// Stops following the network: the monitor releases its resources (on Linux, the shared netlink
    /// thread ends with the last monitor), every sequence from ``statusUpdates()`` ends, and ``status``
    /// keeps its last value. Releasing the object does the same. Calling it again does nothing.
    public func stop() {
        monitor.stop()
        driver.stop()
    }

    /// The monitor for this platform.
    private static func platformMonitor(
        host: String, logger: Logger, onEvent: @escaping @Sendable (ReachabilityMonitorEvent) -> Void
    ) -> any PlatformReachabilityMonitor {
        #if os(Linux) && canImport(Glibc)
        NetlinkReachabilityMonitor(host: host, logger: logger, onEvent: onEvent)
        #elseif canImport(Network)
        PathReachabilityMonitor(onEvent: onEvent)
        #else
        UnavailableReachabilityMonitor(logger: logger, onEvent: onEvent)
        #endif
    }
}

#if !(os(Linux) && canImport(Glibc)) && !canImport(Network)
/// The monitor of a platform that has none: it reports that it is unavailable.
private final class UnavailableReachabilityMonitor: PlatformReachabilityMonitor {
    private let logger: Logger
    private let onEvent: @Sendable (ReachabilityMonitorEvent) -> Void

    init(logger: Logger, onEvent: @escaping @Sendable (ReachabilityMonitorEvent) -> Void) {
        self.logger = logger
        self.onEvent = onEvent
    }

    func start() {
        logger.debug("no reachability monitor on this platform; reporting reachable")
        onEvent(.unavailable)
    }

    func stop() {}
}
#endif
