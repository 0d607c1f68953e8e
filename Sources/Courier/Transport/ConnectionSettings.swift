/// What decides which connections a request may use: its trust policy, proxies, HTTP versions and pool.
///
/// One immutable box, made once per engine and shared by all its requests, so ``TransportOptions``
/// (copied into every request and into the frames of every step that carries one) stays a few words,
/// and comparing or hashing it for the coalescing key and the transport's client table costs an
/// identity check and a stored hash instead of a walk over pins and host lists.
final class ConnectionSettings: Sendable, Hashable {
    let trust: TrustPolicy
    let httpVersions: HTTPVersions
    let proxy: ProxySettings
    let pool: ConnectionPoolSettings
    /// The system's trust and no proxy: the transport's shared client, with nothing to resolve per host.
    let isPlain: Bool
    private let hash: Int

    /// The settings of an engine that changed none of them.
    static let standard = ConnectionSettings(trust: .system, httpVersions: .automatic, proxy: .none, pool: .standard)

    init(trust: TrustPolicy, httpVersions: HTTPVersions, proxy: ProxySettings, pool: ConnectionPoolSettings) {
        self.trust = trust
        self.httpVersions = httpVersions
        self.proxy = proxy
        self.pool = pool
        isPlain = trust == .system && proxy == .none
        var hasher = Hasher()
        hasher.combine(trust)
        hasher.combine(httpVersions)
        hasher.combine(proxy)
        hasher.combine(pool)
        hash = hasher.finalize()
    }

    /// The shared ``standard`` box when these are its values, else a new one.
    static func make(trust: TrustPolicy, httpVersions: HTTPVersions, proxy: ProxySettings, pool: ConnectionPoolSettings) -> ConnectionSettings {
        if trust == .system, httpVersions == .automatic, proxy == .none, pool == .standard { return standard }
        return ConnectionSettings(trust: trust, httpVersions: httpVersions, proxy: proxy, pool: pool)
    }

    /// A copy with `change` applied to its values.
    func with(_ change: (inout (trust: TrustPolicy, httpVersions: HTTPVersions, proxy: ProxySettings, pool: ConnectionPoolSettings)) -> Void) -> ConnectionSettings {
        var values = (trust: trust, httpVersions: httpVersions, proxy: proxy, pool: pool)
        change(&values)
        return .make(trust: values.trust, httpVersions: values.httpVersions, proxy: values.proxy, pool: values.pool)
    }

    static func == (lhs: ConnectionSettings, rhs: ConnectionSettings) -> Bool {
        lhs === rhs
            || (lhs.hash == rhs.hash && lhs.trust == rhs.trust && lhs.httpVersions == rhs.httpVersions && lhs.proxy == rhs.proxy
                && lhs.pool == rhs.pool)
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(hash)
    }
}
