/// How the connections behind an engine's requests are pooled.
///
/// The shared queue decides how many requests run at once (its width); the pool decides how many
/// connections carry them to one host and how long an unused one stays open. Engines whose connection
/// settings are equal (``NetworkEngine/Configuration/trust``, ``NetworkEngine/Configuration/proxy``,
/// ``NetworkEngine/Configuration/httpVersions``, timeouts, decompression and these) share one pool of
/// the transport, however many engines there are; engines that differ in any of them get a pool each.
///
/// ```swift
/// configuration.connectionPool = ConnectionPoolSettings(maximumConnectionsPerHost: 2, idleTimeout: .seconds(15))
/// ```
public struct ConnectionPoolSettings: Sendable, Hashable {
    /// The most HTTP/1.1 connections open to one host (scheme, host and port) at once; requests beyond
    /// wait for one to be free (their timeouts run meanwhile). `nil`, the default, leaves it to the
    /// transport (``AsyncHTTPClientTransport/init(eventLoopGroup:maximumConnectionsPerHost:)``: 64, above
    /// any queue width). Over HTTP/2 one connection carries every request to a host as streams.
    public var maximumConnectionsPerHost: Int?
    /// How long a connection nobody uses stays open for the next request (60 s by default); after that it
    /// is closed, and the next request opens a new one.
    public var idleTimeout: Duration

    /// The default: the transport's connection limit, connections kept 60 s.
    public static let standard = ConnectionPoolSettings()

    /// Creates settings.
    /// - Parameters:
    ///   - maximumConnectionsPerHost: The most connections to one host; the transport's limit when `nil`.
    ///     Values below 1 count as 1 (here and when the property is set).
    ///   - idleTimeout: How long an unused connection stays open; 60 s by default. Values below 10 ms
    ///     count as 10 ms (here and when the property is set).
    public init(maximumConnectionsPerHost: Int? = nil, idleTimeout: Duration = .seconds(60)) {
        self.maximumConnectionsPerHost = maximumConnectionsPerHost.map { max(1, $0) }
        self.idleTimeout = max(.milliseconds(10), idleTimeout)
    }
}
