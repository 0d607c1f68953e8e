/// Whether a host can be reached, and over what kind of link.
public enum ReachabilityStatus: Sendable, Hashable, CustomStringConvertible {
    /// The kind of link a host is reached over.
    public enum Interface: String, Sendable, Hashable, CaseIterable {
        /// A Wi-Fi link.
        case wifi
        /// A cellular (mobile data) link.
        case cellular
        /// A wired link (Ethernet and anything that is neither Wi-Fi nor cellular, such as a VPN tunnel or a veth).
        case wired
        /// A link of unknown kind (including the loopback interface for a host on this machine).
        case other
    }

    /// No route to the host over an interface that is up.
    case unreachable
    /// The host can be reached over this kind of link.
    case reachable(via: Interface)

    /// Whether the host can be reached.
    public var isReachable: Bool {
        if case .reachable = self { return true }
        return false
    }

    /// The link, or `nil` when unreachable.
    public var interface: Interface? {
        if case .reachable(let interface) = self { return interface }
        return nil
    }

    public var description: String {
        switch self {
        case .unreachable: "unreachable"
        case .reachable(let interface): "reachable via \(interface.rawValue)"
        }
    }
}

/// Something that knows whether a host can be reached: the system's network monitor
/// (``SystemReachability``), or one the app or a test drives (``ManualReachability``).
///
/// An engine follows its reachability: it sets the shared queue's width for its work, fails or holds
/// requests while the host is unreachable, and replays its outbox when the host comes back.
/// Implementations must be safe to use from any thread.
public protocol Reachability: AnyObject, Sendable {
    /// The status now.
    var status: ReachabilityStatus { get }

    /// The status now, then each change, in order, until the reader stops reading.
    /// Each call makes a new, independent sequence.
    func statusUpdates() -> AsyncStream<ReachabilityStatus>
}
