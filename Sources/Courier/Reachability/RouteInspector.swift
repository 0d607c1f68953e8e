#if os(Linux) && canImport(Glibc)
import Glibc

/// Asks the Linux kernel about interfaces, addresses and routes, without sending a packet.
///
/// The route to an address is the kernel's own decision: a UDP socket is connected to the address
/// (which sends nothing) and the local address the kernel picked is matched to an interface.
enum RouteInspector {
    /// An IPv4 or IPv6 address.
    struct Address: Sendable, Hashable, CustomStringConvertible {
        /// `AF_INET` or `AF_INET6`.
        var family: Int32
        /// 4 or 16 bytes, in network order.
        var bytes: [UInt8]
        /// The IPv6 scope (interface index) of a link-local address; 0 otherwise.
        var scopeID: UInt32 = 0

        /// The address in a `sockaddr_in` or `sockaddr_in6`, or `nil` for another family.
        init?(_ address: UnsafePointer<sockaddr>) {
            switch Int32(address.pointee.sa_family) {
            case AF_INET:
                let inet = UnsafeRawPointer(address).loadUnaligned(as: sockaddr_in.self)
                family = AF_INET
                bytes = withUnsafeBytes(of: inet.sin_addr) { Array($0) }
            case AF_INET6:
                let inet6 = UnsafeRawPointer(address).loadUnaligned(as: sockaddr_in6.self)
                family = AF_INET6
                bytes = withUnsafeBytes(of: inet6.sin6_addr) { Array($0) }
                scopeID = inet6.sin6_scope_id
            default:
                return nil
            }
        }

        /// Calls `body` with the address and `port` as a socket address.
        func withSocketAddress<Result>(port: UInt16, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Result) -> Result {
            var storage = sockaddr_storage()
            withUnsafeMutableBytes(of: &storage) { raw in
                if family == AF_INET {
                    var inet = sockaddr_in()
                    inet.sin_family = sa_family_t(AF_INET)
                    inet.sin_port = port.bigEndian
                    withUnsafeMutableBytes(of: &inet.sin_addr) { $0.copyBytes(from: bytes) }
                    raw.storeBytes(of: inet, as: sockaddr_in.self)
                } else {
                    var inet6 = sockaddr_in6()
                    inet6.sin6_family = sa_family_t(AF_INET6)
                    inet6.sin6_port = port.bigEndian
                    inet6.sin6_scope_id = scopeID
                    withUnsafeMutableBytes(of: &inet6.sin6_addr) { $0.copyBytes(from: bytes) }
                    raw.storeBytes(of: inet6, as: sockaddr_in6.self)
                }
            }
            let length = socklen_t(family == AF_INET ? MemoryLayout<sockaddr_in>.size : MemoryLayout<sockaddr_in6>.size)
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
            }
        }

        /// Whether two addresses are the same, ignoring the scope unless both have one.
        func isSame(as other: Address) -> Bool {
            family == other.family && bytes == other.bytes && (scopeID == 0 || other.scopeID == 0 || scopeID == other.scopeID)
        }

        var description: String {
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            _ = bytes.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &text, socklen_t(text.count)) }
            return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }

    /// The interfaces and their addresses at one moment.
    struct Snapshot: Sendable {
        /// Every interface, sorted by name.
        var interfaces: [ReachabilityStateMachine.InterfaceFacts]
        /// Every IPv4 and IPv6 address of this machine, with its interface.
        var addresses: [(address: Address, interface: String)]
    }

    /// The interfaces now (`getifaddrs`), classified by `classifier`.
    static func snapshot(classifier: InterfaceClassifier) -> Snapshot {
        var first: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&first) == 0 else { return Snapshot(interfaces: [], addresses: []) }
        defer { freeifaddrs(first) }
        var flags: [String: UInt32] = [:]
        var addresses: [(address: Address, interface: String)] = []
        var entry = first
        while let current = entry {
            let name = String(cString: current.pointee.ifa_name)
            flags[name, default: 0] |= current.pointee.ifa_flags
            if let socketAddress = current.pointee.ifa_addr, let address = Address(socketAddress) {
                addresses.append((address, name))
            }
            entry = current.pointee.ifa_next
        }
        let upAndRunning = UInt32(IFF_UP) | UInt32(IFF_RUNNING)
        let interfaces = flags.keys.sorted().map { name in
            let interfaceFlags = flags[name] ?? 0
            let isLoopback = interfaceFlags & UInt32(IFF_LOOPBACK) != 0
            return ReachabilityStateMachine.InterfaceFacts(
                name: name,
                isUp: interfaceFlags & upAndRunning == upAndRunning,
                isLoopback: isLoopback,
                kind: classifier.kind(of: name, isLoopback: isLoopback))
        }
        return Snapshot(interfaces: interfaces, addresses: addresses)
    }

    /// The host's addresses in the resolver's preference order, without duplicates; `nil` when it does
    /// not resolve. With `numericOnly`, only a literal address resolves (and nothing blocks).
    static func resolve(_ host: String, numericOnly: Bool) -> [Address]? {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        hints.ai_flags = numericOnly ? AI_NUMERICHOST : 0
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0 else { return nil }
        defer { freeaddrinfo(list) }
        var addresses: [Address] = []
        var entry = list
        while let current = entry {
            if let socketAddress = current.pointee.ai_addr, let address = Address(socketAddress), !addresses.contains(address) {
                addresses.append(address)
            }
            entry = current.pointee.ai_next
        }
        return addresses.isEmpty ? nil : addresses
    }

    /// The kernel's route to `destination`: the interface that traffic would leave through.
    static func hop(to destination: Address, in snapshot: Snapshot) -> ReachabilityStateMachine.Hop {
        let socketType = Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let descriptor = socket(destination.family, socketType, 0)
        guard descriptor >= 0 else { return .none }
        defer { close(descriptor) }
        // Connecting a UDP socket only picks a route and a source address; nothing is sent.
        // An error (ENETUNREACH, EHOSTUNREACH, EINVAL for a link-local address without scope) means no route.
        guard destination.withSocketAddress(port: 9, { connect(descriptor, $0, $1) }) == 0 else { return .none }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard named == 0 else { return .none }
        let source = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Address($0) }
        }
        if snapshot.addresses.contains(where: { $0.address.isSame(as: destination) }) { return .local }
        guard let source, let match = snapshot.addresses.first(where: { $0.address.isSame(as: source) }) else {
            return .none
        }
        return .interface(match.interface)
    }

    /// A public address on the internet, to find the default route (IPv4, then IPv6).
    private static let internetAddresses = ["8.8.8.8", "2001:4860:4860::8888"].compactMap { resolve($0, numericOnly: true)?.first }

    /// The interface of the route to the internet, if there is one.
    static func defaultRouteInterface(in snapshot: Snapshot) -> String? {
        for address in internetAddresses {
            if case .interface(let name) = hop(to: address, in: snapshot) { return name }
        }
        return nil
    }
}
#endif
