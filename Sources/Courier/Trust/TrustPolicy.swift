public import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#elseif canImport(Musl)
import Musl
#endif

/// Which servers an engine trusts over TLS, and how it proves who it is: AFNetworking's security policy,
/// on Linux as well as on Apple platforms.
///
/// The default, ``system``, trusts what the operating system trusts. A policy may add roots (a company
/// CA), replace them (only your own CA: in effect, pinning the CA), pin servers' public keys, present a
/// client certificate (mutual TLS), and, for development hosts only, skip verification by name:
/// ```swift
/// let engine = NetworkEngine(host: "api.example.com", configuration: .init {
///     $0.trust = try TrustPolicy(
///         pins: [CertificatePin(host: "api.example.com",
///                               ["sha256/7HIpactkIAq2Y49orFOOQKurWxmmSFZhBCoQYcRhJ3Y=",   // current key
///                                "sha256/YLh1dUR9y6Kja30RrAn7JKnbQG/uEtLMkBgFF2Fuihg="])]) // backup key
/// })
/// ```
///
/// The policy is part of what makes two requests the same: engines with different policies never
/// share a connection or a coalesced flight. A pin or verification failure is a ``NetworkError`` with
/// code ``NetworkError/Code/tls`` whose message names the host and, for a pin, the keys the server
/// showed.
public struct TrustPolicy: Sendable, Hashable {
    /// The certificates a server's chain must lead to.
    public enum Roots: Sendable, Hashable {
        /// The operating system's trust store.
        case system
        /// The operating system's trust store and these certificates (a company or test CA).
        case systemAnd([TrustCertificate])
        /// These certificates only: a server whose chain does not lead to one of them is refused, even
        /// with a certificate any browser accepts.
        case only([TrustCertificate])
    }

    /// The roots; ``Roots/system`` by default.
    public var roots: Roots
    /// Public-key pins, by host pattern; a host that matches a pattern must present a certificate whose
    /// key is one of that pattern's pins.
    public var pins: [CertificatePin]
    /// The certificate and key presented to servers that ask for one (mutual TLS), on connections to
    /// ``identityHosts`` only.
    public var clientIdentity: ClientIdentity?
    /// The hosts ``clientIdentity`` is presented to: a certificate identifies its holder, so a redirect or
    /// an absolute URL to another host does not get it. Empty (the default) means the engine's own host:
    /// an engine fills it in when it is created. Exact names, compared without case.
    public var identityHosts: [String] = []
    /// Hosts whose certificates are not verified at all (see ``insecurelyTrusting(hosts:)``), lowercased.
    public private(set) var insecureHosts: Set<String> = []

    /// What the operating system trusts; no pins, no client certificate.
    public static let system = TrustPolicy()

    /// Creates a policy.
    /// - Parameters:
    ///   - roots: The certificates chains must lead to; the system's by default.
    ///   - pins: Public-key pins by host pattern; none by default.
    ///   - clientIdentity: A client certificate for mutual TLS; none by default.
    public init(roots: Roots = .system, pins: [CertificatePin] = [], clientIdentity: ClientIdentity? = nil) {
        self.roots = roots
        self.pins = pins
        self.clientIdentity = clientIdentity
    }

    /// This policy, except that the named hosts' certificates are **not verified at all**: any server
    /// that answers for them is believed, including an attacker on the network. For a development
    /// server with a self-signed certificate, never for a production host; it is deliberately a list of
    /// exact host names (no patterns, no "accept everything"). Pins still apply to these hosts.
    /// - Parameter hosts: Exact host names (`"localhost"`, `"dev.internal"`), case-insensitive.
    /// - Returns: The policy with these hosts added to ``insecureHosts``.
    public func insecurelyTrusting(hosts: [String]) -> TrustPolicy {
        var policy = self
        policy.insecureHosts.formUnion(hosts.map(Self.canonicalHost))
        return policy
    }

    /// Whether the client identity is presented on connections to `host`.
    func presentsIdentity(to host: String) -> Bool {
        guard clientIdentity != nil else { return false }
        let host = Self.canonicalHost(host)
        return identityHosts.contains { Self.canonicalHost($0) == host }
    }

    /// Whether `host`'s certificate is not verified (an exact, case-insensitive match).
    func isInsecure(_ host: String) -> Bool {
        !insecureHosts.isEmpty && insecureHosts.contains(Self.canonicalHost(host))
    }

    /// The pins that apply to `host`: those of every pattern it matches (OkHttp's rule), or `nil` when no
    /// pattern matches.
    func pinnedKeys(for host: String) -> Set<Data>? {
        guard !pins.isEmpty else { return nil }
        let host = Self.canonicalHost(host)
        let matching = pins.filter { $0.matches(host: host) }
        guard !matching.isEmpty else { return nil }
        return matching.reduce(into: Set<Data>()) { $0.formUnion($1.hashes) }
    }

    /// A host without IPv6 brackets or a trailing dot.
    static func bare(_ host: String) -> String {
        var host = Substring(host)
        if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        if host.hasSuffix(".") { host = host.dropLast() }
        return String(host)
    }

    /// The one spelling of a host that pins, insecure hosts and proxy bypasses compare: lowercased,
    /// without brackets or a trailing dot, and an IP address in its standard text form (`::1`, not
    /// `0:0:0:0:0:0:0:1` or `[::0:1]`; `127.0.0.1`), so that no spelling of an address escapes a rule.
    static func canonicalHost(_ host: String) -> String {
        let bare = CacheHeaderSyntax.asciiLowercased(bare(host))
        if bare.contains(":") {
            var address = in6_addr()
            return canonicalAddress(bare, family: AF_INET6, into: &address, length: Int(INET6_ADDRSTRLEN)) ?? bare
        }
        var address = in_addr()
        return canonicalAddress(bare, family: AF_INET, into: &address, length: Int(INET_ADDRSTRLEN)) ?? bare
    }

    /// `text` parsed as an address of `family` into `address` and printed back in its one canonical
    /// form (`inet_pton`, then `inet_ntop`), or `nil` when it is not one.
    private static func canonicalAddress<Address>(_ text: String, family: Int32, into address: inout Address, length: Int) -> String? {
        guard inet_pton(family, text, &address) == 1 else { return nil }
        var printed = [CChar](repeating: 0, count: length)
        guard inet_ntop(family, &address, &printed, socklen_t(printed.count)) != nil else { return nil }
        return String(decoding: printed.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
