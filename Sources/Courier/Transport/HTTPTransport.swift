public import Foundation
public import HTTPTypes
public import NIOCore
public import Logging

/// The seam between Courier and the HTTP client that moves bytes.
///
/// Courier's queue, redirects, limits, progress and validation sit above this protocol; a transport
/// sends exactly one request and streams back exactly one response, following no redirects.
/// ``AsyncHTTPClientTransport`` is the production implementation; tests inject fakes.
///
/// Implementations must:
/// - honour Swift task cancellation by cancelling the request (closing the connection if needed);
/// - throw ``NetworkError`` where they can classify a failure (timeouts, refused connections, TLS);
/// - report upload progress through ``TransportRequest/didSendBodyBytes`` when they send a body.
public protocol HTTPTransport: Sendable {
    /// Sends one request and returns the response head with a body still to be read.
    /// - Parameter request: The request to send.
    /// - Returns: The status, headers and an asynchronous sequence of body parts.
    /// - Throws: ``NetworkError`` (or any error, which Courier wraps) when no response head arrives.
    func execute(_ request: TransportRequest) async throws -> TransportResponse
}

/// One request as a transport sees it: fully composed, validated, with its options.
public struct TransportRequest: Sendable {
    /// The method.
    public var method: HTTPRequest.Method
    /// The absolute URL.
    public var url: URL
    /// The header fields to send, in order.
    public var headers: HTTPFields
    /// The body, if any, when it is bytes in memory.
    public var body: Data?
    /// The body, when it is streamed (a file, a multipart form, a caller's sequence): read part by part
    /// as it is sent, never whole. A transport sends `body` or this, never both.
    public var streamedBody: TransportBody?
    /// Trailer fields to send after ``streamedBody`` (whose length is then `nil`), asked for once its last
    /// part was handed over; the call throws ``NetworkError`` when they cannot be sent, and the exchange
    /// must then be aborted, never completed without them. A transport that cannot send trailers must
    /// fail the request with ``NetworkError/Code/transport`` rather than drop them.
    public var trailers: (@Sendable () async throws -> HTTPFields)?
    /// Timeouts and decompression.
    public var options: TransportOptions
    /// The instant by which the whole exchange must be over, if any.
    public var deadline: ContinuousClock.Instant?
    /// The logger for this request.
    public var logger: Logger
    /// Called as body bytes are handed to the network: bytes sent so far, and the total.
    public var didSendBodyBytes: (@Sendable (_ sent: Int64, _ total: Int64) -> Void)?
    /// Called with each interim (`1xx`, except `101`) response that arrives before the final one, when
    /// someone asked for them (``NetworkOperation/onInformationalResponse(_:)``). A transport that cannot
    /// see interim responses may ignore it; an interim response is never returned as the response.
    public var didReceiveInformational: (@Sendable (_ status: HTTPResponse.Status, _ headers: HTTPFields) -> Void)?

    /// Creates a request.
    /// - Parameters:
    ///   - method: The method.
    ///   - url: The absolute URL.
    ///   - headers: The header fields.
    ///   - body: The body.
    ///   - options: Timeouts and decompression.
    ///   - deadline: The overall deadline.
    ///   - logger: The logger.
    ///   - didSendBodyBytes: The upload progress callback.
    public init(
        method: HTTPRequest.Method,
        url: URL,
        headers: HTTPFields = [:],
        body: Data? = nil,
        options: TransportOptions = TransportOptions(),
        deadline: ContinuousClock.Instant? = nil,
        logger: Logger = Logger.courierSilent,
        didSendBodyBytes: (@Sendable (_ sent: Int64, _ total: Int64) -> Void)? = nil
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.options = options
        self.deadline = deadline
        self.logger = logger
        self.didSendBodyBytes = didSendBodyBytes
    }
}

/// A request body sent as a stream of parts: a file, a multipart form, or a caller's sequence.
public struct TransportBody: Sendable {
    /// The length in bytes, when known (sent as `Content-Length`; otherwise the body is chunked).
    public var length: Int64?
    /// Whether ``parts()`` may be called again for another attempt (a file or a form: yes; a caller's
    /// one-shot sequence: no, a second call's sequence fails with ``NetworkError/Code/bodyNotReplayable``).
    public var isReplayable: Bool
    private let make: @Sendable () -> any AsyncSequence<ByteBuffer, any Error> & Sendable

    /// Creates a body.
    /// - Parameters:
    ///   - length: The length, if known.
    ///   - isReplayable: Whether `parts` may be called again.
    ///   - parts: Makes the sequence of parts for one attempt.
    public init(length: Int64?, isReplayable: Bool, parts: @escaping @Sendable () -> any AsyncSequence<ByteBuffer, any Error> & Sendable) {
        self.length = length
        self.isReplayable = isReplayable
        self.make = parts
    }

    /// The body's parts for one attempt, read as they are sent. Iterating may throw (a file that went
    /// away): the request then fails with that error.
    public func parts() -> any AsyncSequence<ByteBuffer, any Error> & Sendable { make() }
}

/// The per-request settings a transport applies.
public struct TransportOptions: Sendable, Hashable {
    /// How long establishing a connection may take.
    public var connectTimeout: Duration
    /// How long the connection may stay silent while a response is awaited or read.
    public var readTimeout: Duration
    /// Whether and how gzip, deflate and brotli bodies are decompressed.
    public var decompression: Decompression
    /// Which servers are trusted over TLS, and the client certificate presented to them.
    public var trust: TrustPolicy {
        get { connection.trust }
        set { connection = connection.with { $0.trust = newValue } }
    }
    /// Whether HTTP/2 may be negotiated.
    public var httpVersions: HTTPVersions {
        get { connection.httpVersions }
        set { connection = connection.with { $0.httpVersions = newValue } }
    }
    /// The proxies requests go through.
    public var proxy: ProxySettings {
        get { connection.proxy }
        set { connection = connection.with { $0.proxy = newValue } }
    }
    /// How connections are pooled: the most per host, and how long an unused one stays open.
    public var connectionPool: ConnectionPoolSettings {
        get { connection.pool }
        set { connection = connection.with { $0.pool = newValue } }
    }
    /// Trust, HTTP versions, proxies and pool, in one shared box (an engine makes it once).
    var connection: ConnectionSettings

    /// Creates options.
    /// - Parameters:
    ///   - connectTimeout: The connect timeout; 10 s by default.
    ///   - readTimeout: The read timeout; 60 s by default.
    ///   - decompression: The decompression setting; on, with a ratio limit of 100, by default.
    ///   - trust: The TLS trust policy; the system's by default.
    ///   - httpVersions: Whether HTTP/2 may be negotiated; ``HTTPVersions/automatic`` by default.
    ///   - proxy: The proxies; none by default.
    ///   - connectionPool: How connections are pooled; ``ConnectionPoolSettings/standard`` by default.
    public init(
        connectTimeout: Duration = .seconds(10),
        readTimeout: Duration = .seconds(60),
        decompression: Decompression = .enabled(maximumRatio: 100),
        trust: TrustPolicy = .system,
        httpVersions: HTTPVersions = .automatic,
        proxy: ProxySettings = .none,
        connectionPool: ConnectionPoolSettings = .standard
    ) {
        self.init(
            connectTimeout: connectTimeout, readTimeout: readTimeout, decompression: decompression,
            connection: .make(trust: trust, httpVersions: httpVersions, proxy: proxy, pool: connectionPool))
    }

    /// Creates options around connection settings made before (an engine's).
    init(connectTimeout: Duration, readTimeout: Duration, decompression: Decompression, connection: ConnectionSettings) {
        self.connectTimeout = connectTimeout
        self.readTimeout = readTimeout
        self.decompression = decompression
        self.connection = connection
    }
}

/// Transparent decompression of `gzip`, `deflate` and, where libbrotli is installed, `br` response bodies
/// (brotli is offered in `Accept-Encoding` only where it can be decoded).
public enum Decompression: Sendable, Hashable {
    /// Bodies are delivered as received; no `Accept-Encoding` is added.
    case disabled
    /// Bodies are decompressed. A body that inflates to more than `maximumRatio` times its
    /// compressed size fails with ``NetworkError/Code/bodyTooLarge`` (a defence against zip bombs).
    case enabled(maximumRatio: Int)
}

/// A response head with its body still to be read.
public struct TransportResponse: Sendable {
    /// The status.
    public var status: HTTPResponse.Status
    /// The header fields, in order, duplicates kept.
    public var headers: HTTPFields
    /// The body parts; iterating may throw when the connection fails mid-body.
    public var body: any AsyncSequence<ByteBuffer, any Error> & Sendable
    /// The HTTP version of the exchange, when the transport knows it.
    public var version: NetworkResponse.ProtocolVersion?
    /// The response's trailer fields, read once its body has ended (`nil` when it had none, or the
    /// transport cannot see them).
    public var trailers: (@Sendable () -> HTTPFields?)?

    /// Creates a response.
    /// - Parameters:
    ///   - status: The status.
    ///   - headers: The header fields.
    ///   - body: The body parts.
    ///   - version: The HTTP version, if known.
    public init(
        status: HTTPResponse.Status,
        headers: HTTPFields,
        body: any AsyncSequence<ByteBuffer, any Error> & Sendable,
        version: NetworkResponse.ProtocolVersion? = nil
    ) {
        self.status = status
        self.headers = headers
        self.body = body
        self.version = version
    }
}

extension Logger {
    /// A logger that discards everything: Courier's default, so the library is silent unless given a logger.
    public static let courierSilent = Logger(label: "courier", factory: { _ in SwiftLogNoOpLogHandler() })
}
