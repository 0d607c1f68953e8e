import AsyncHTTPClient
public import NIOCore
public import NIOPosix
import NIOHTTP1
import NIOSSL
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers

/// The production transport: swift-server/async-http-client.
///
/// One `HTTPClient` (and its connection pool) is kept for each distinct ``TransportOptions``,
/// since connect/read timeouts and decompression are client-wide settings in async-http-client.
/// Most programs use one set of options and so one client. Redirects are never followed here:
/// Courier follows them above the transport, so it can apply its own policy and keep the chain.
///
/// ``shared`` lives for the whole process. A transport you create yourself should be shut down with
/// ``shutdown()`` when you are done (its requests then end and its connections close before it returns);
/// one released without it shuts its clients down in the background.
public final class AsyncHTTPClientTransport: HTTPTransport {
    /// The process-wide transport every engine uses unless given another.
    public static let shared = AsyncHTTPClientTransport()

    private let eventLoopGroup: any EventLoopGroup
    private let maximumConnectionsPerHost: Int
    private let clients = NIOLockedValueBox<[ClientKey: HTTPClient]>([:])

    /// What one client (and its pool) is made for: the options, and for a host the trust policy treats
    /// specially (pinned, or not verified), that treatment. Every host the policy treats alike shares a
    /// client; a pinned host's connections all come from a client that checks its pins.
    struct ClientKey: Hashable {
        var options: TransportOptions
        var pins: Set<Data>?
        var isInsecure = false
        /// Whether the client certificate is presented to this host.
        var presentsIdentity = false
        /// The proxy this host's requests go through (the options' settings, resolved for the URL).
        var proxy: Proxy?
    }

    /// Creates a transport.
    /// - Parameters:
    ///   - eventLoopGroup: The event loops to run on; NIO's process-wide group by default.
    ///   - maximumConnectionsPerHost: The pool's soft limit of HTTP/1.1 connections per host. Courier's
    ///     queue is the real limit; this only needs to be at least its width. 64 by default.
    public init(
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        maximumConnectionsPerHost: Int = 64
    ) {
        self.eventLoopGroup = eventLoopGroup
        self.maximumConnectionsPerHost = maximumConnectionsPerHost
    }

    /// A transport released without ``shutdown()`` shuts its clients down itself (in the background:
    /// requests in flight fail), so dropping one never leaves a pool open nor traps.
    deinit {
        let all = clients.withLockedValue { Array($0.values) }
        for client in all {
            // The callback form keeps the client alive until its shutdown completes.
            client.shutdown(queue: .global()) { _ in }
        }
    }

    /// How many clients (connection pools) the transport holds: one per distinct connection settings.
    var clientCount: Int { clients.withLockedValue { $0.count } }

    /// Shuts down every client this transport created. Requests in flight fail.
    public func shutdown() async throws {
        let all = clients.withLockedValue { clients in
            defer { clients.removeAll() }
            return Array(clients.values)
        }
        for client in all {
            try await client.shutdown()
        }
    }

    /// Sends one request with async-http-client; failures are classified as ``NetworkError``.
    /// - Parameter request: The request.
    /// - Returns: The response head and its body, still to be read.
    /// - Throws: ``NetworkError``.
    public func execute(_ request: TransportRequest) async throws -> TransportResponse {
        // async-http-client drops interim responses inside its pool; a request that wants them goes
        // over a connection of its own that reports them.
        let key = try Self.clientKey(for: request)
        // (Through a proxy, the pool's tunnel is used: that connection does not report interim responses.)
        if request.didReceiveInformational != nil, request.streamedBody == nil, key.proxy == nil {
            return try await InterimResponseTransport().execute(request)
        }
        let url = request.url.absoluteString
        let client = try await client(for: key, url: request.url)
        var clientRequest = HTTPClientRequest(url: url)
        clientRequest.method = HTTPMethod(rawValue: request.method.rawValue)
        clientRequest.headers = HTTPHeaders(http1: request.headers)
        ContentCoding.offerBrotli(in: &clientRequest.headers, decompression: request.options.decompression)
        var upload = Self.attachBody(of: request, to: &clientRequest)
        let deadline = request.deadline.map(NIODeadline.init(_:)) ?? .distantFuture
        do {
            let response: HTTPClientResponse
            do {
                response = try await client.execute(clientRequest, deadline: deadline, logger: request.logger)
            } catch where Self.isStaleConnection(error) && Self.mayResend(request, after: error) {
                // A pooled connection the server closed as we reused it: once more, on another connection
                // (the dead one has left the pool). Not a retry attempt of the caller's: nothing was answered.
                request.logger.debug("courier resending on a new connection", metadata: [
                    "courier-url": "\(request.url.redactedForLogs)", "courier-error": "\(error)",
                ])
                upload?.cancel()
                upload = Self.attachBody(of: request, to: &clientRequest)
                response = try await client.execute(clientRequest, deadline: deadline, logger: request.logger)
            }
            var headers = HTTPFields()
            headers.reserveCapacity(response.headers.count)
            var encoding: String?
            for (name, value) in response.headers {
                if let fieldName = HTTPField.Name(name) {
                    headers.append(HTTPField(name: fieldName, value: value))
                    // A second `Content-Encoding` line means several codings: never taken for brotli alone.
                    if fieldName == .contentEncoding { encoding = encoding == nil ? value : "," }
                }
            }
            var transportResponse = TransportResponse(
                status: HTTPResponse.Status(code: Int(response.status.code), reasonPhrase: response.status.reasonPhrase),
                headers: headers,
                body: ContentCoding.decoding(
                    ErrorMappingBody(base: response.body, url: url), encoding: encoding,
                    decompression: request.options.decompression, url: url),
                version: NetworkResponse.ProtocolVersion(major: response.version.major, minor: response.version.minor)
            )
            let body = response.body
            transportResponse.trailers = { Self.trailerFields(body.trailers) }
            return transportResponse
        } catch let mismatch as PinCheck.Mismatch {
            upload?.cancel()
            throw PinCheck.networkError(mismatch, host: request.url.host ?? "", url: url)
        } catch {
            upload?.cancel()
            throw Self.networkError(for: error, url: url)
        }
    }

    /// Gives `clientRequest` the request's body for one exchange: bytes, a stream, or a stream followed by
    /// trailers (whose upload runs beside the exchange and is returned so a failure can stop it).
    private static func attachBody(of request: TransportRequest, to clientRequest: inout HTTPClientRequest) -> TrailerUpload? {
        if let body = request.body {
            clientRequest.body = requestBody(body, progress: request.didSendBodyBytes)
        } else if let streamed = request.streamedBody {
            if let trailers = request.trailers {
                let (body, upload) = TrailerUpload.start(streamed, trailers: trailers)
                clientRequest.body = body
                return upload
            }
            clientRequest.body = .stream(streamed.parts(), length: streamed.length.map { .known($0) } ?? .unknown)
        }
        return nil
    }

    /// Trailer fields as `HTTPFields` (through the one conversion of NIO's headers); `nil` for none.
    static func trailerFields(_ headers: HTTPHeaders?) -> HTTPFields? {
        guard let headers, !headers.isEmpty else { return nil }
        return InterimResponseTransport.fields(headers)
    }

    /// The client key for a request; a pinned host is refused over plain http (a pin cannot be checked).
    static func clientKey(for request: TransportRequest) throws(NetworkError) -> ClientKey {
        // The common case (system trust, no proxy): one client per options, nothing to resolve per host.
        if request.options.connection.isPlain { return ClientKey(options: request.options) }
        let trust = request.options.trust
        let proxy = request.options.proxy.proxy(for: request.url)
        guard trust != .system, let host = request.url.host else { return ClientKey(options: request.options, proxy: proxy) }
        let pins = trust.pinnedKeys(for: host)
        if pins != nil, request.url.scheme?.lowercased() != "https" {
            throw NetworkError(.tls, "\(host) is pinned, so it is reached over https only", url: request.url.absoluteString)
        }
        return ClientKey(
            options: request.options, pins: pins, isInsecure: trust.isInsecure(host), presentsIdentity: trust.presentsIdentity(to: host), proxy: proxy)
    }

    /// The client for `key`, made on first use: its TLS configuration reads certificate files, which
    /// happens on NIO's thread pool, not on the caller's thread.
    private func client(for key: ClientKey, url: URL) async throws(NetworkError) -> HTTPClient {
        if let client = clients.withLockedValue({ $0[key] }) { return client }
        let tls: TLSConfiguration?
        if key.options.trust == .system {
            tls = nil
        } else {
            let host = url.host ?? ""
            do {
                tls = try await NIOThreadPool.singleton.runIfActive { try key.options.trust.tlsConfiguration(for: host) }
            } catch let error as NetworkError {
                throw error
            } catch {
                throw NetworkError(.invalidConfiguration, "the trust policy could not be applied: \(error)", underlying: error)
            }
        }
        return clients.withLockedValue { clients in
            if let client = clients[key] { return client }
            let client = makeClient(for: key, tls: tls)
            clients[key] = client
            return client
        }
    }

    private func makeClient(for key: ClientKey, tls: TLSConfiguration?) -> HTTPClient {
        let options = key.options
        var configuration = HTTPClient.Configuration()
        configuration.tlsConfiguration = tls
        if let proxy = key.proxy {
            switch proxy.kind {
            case .http(let credentials):
                configuration.proxy = .server(
                    host: proxy.host, port: proxy.port, authorization: credentials.map { .basic(username: $0.user, password: $0.password) })
            case .socks5:
                configuration.proxy = .socksServer(host: proxy.host, port: proxy.port)
            }
        }
        if let pins = key.pins {
            // Run on each new connection once its handshake (chain and name) succeeded, before the pool
            // may send anything on it. Closed first, then failed (async-http-client does not close it).
            let check = PinCheck(pins: pins)
            let verify: @Sendable (any Channel) -> EventLoopFuture<Void> = { channel in
                do {
                    try check.verify(channel)
                    return channel.eventLoop.makeSucceededVoidFuture()
                } catch {
                    channel.close(promise: nil)
                    return channel.closeFuture.flatMapThrowing { throw error }
                }
            }
            configuration.http1_1ConnectionDebugInitializer = verify
            configuration.http2ConnectionDebugInitializer = verify
        }
        configuration.redirectConfiguration = .disallow
        configuration.httpVersion = options.httpVersions == .http1Only ? .http1Only : .automatic
        configuration.timeout = .init(connect: TimeAmount(options.connectTimeout), read: TimeAmount(options.readTimeout))
        // Clamped here too: the settings' properties can be set past what their initialiser allows.
        let pool = options.connectionPool
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = max(1, pool.maximumConnectionsPerHost ?? maximumConnectionsPerHost)
        configuration.connectionPool.idleTimeout = TimeAmount(max(.milliseconds(10), pool.idleTimeout))
        // A refused connection (or a pin that does not match) fails at once with `.cannotConnect` (`.tls`)
        // instead of retrying until the connect timeout: the caller (and later the outbox) decides.
        configuration.connectionPool.retryConnectionEstablishment = false
        switch options.decompression {
        case .disabled: configuration.decompression = .disabled
        case .enabled(let ratio): configuration.decompression = .enabled(limit: .ratio(max(1, ratio)))
        }
        return HTTPClient(eventLoopGroupProvider: .shared(eventLoopGroup), configuration: configuration)
    }

    /// Small bodies go in one buffer; larger ones stream in 64 KiB parts so upload progress is real.
    private static func requestBody(
        _ body: Data, progress: (@Sendable (Int64, Int64) -> Void)?
    ) -> HTTPClientRequest.Body {
        guard let progress, body.count > UploadParts.partSize else {
            progress?(Int64(body.count), Int64(body.count))
            return .bytes(ByteBuffer(bytes: body))
        }
        return .stream(UploadParts(data: body, progress: progress), length: .known(Int64(body.count)))
    }
}

/// A request body handed to the client part by part, reporting each part as it is taken.
struct UploadParts: AsyncSequence, Sendable {
    static let partSize = 64 * 1024
    typealias Element = ByteBuffer
    let data: Data
    let progress: @Sendable (Int64, Int64) -> Void

    struct AsyncIterator: AsyncIteratorProtocol {
        let data: Data
        let progress: @Sendable (Int64, Int64) -> Void
        var offset = 0

        mutating func next() async throws -> ByteBuffer? {
            guard offset < data.count else { return nil }
            let end = Swift.min(offset + UploadParts.partSize, data.count)
            let part = ByteBuffer(bytes: data[data.startIndex + offset ..< data.startIndex + end])
            offset = end
            progress(Int64(end), Int64(data.count))
            return part
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(data: data, progress: progress) }
}

/// The client's response body, with its errors classified as ``NetworkError``.
private struct ErrorMappingBody: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let base: HTTPClientResponse.Body
    let url: String

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: HTTPClientResponse.Body.AsyncIterator
        let url: String

        mutating func next() async throws -> ByteBuffer? {
            do {
                return try await base.next()
            } catch {
                throw AsyncHTTPClientTransport.networkError(for: error, url: url)
            }
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: base.makeAsyncIterator(), url: url) }
}

extension TimeAmount {
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        let nanoseconds = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if nanoseconds.overflow {
            self = .nanoseconds(Int64.max)
        } else {
            self = .nanoseconds(nanoseconds.partialValue &+ attoseconds / 1_000_000_000)
        }
    }
}

extension NIODeadline {
    init(_ instant: ContinuousClock.Instant) {
        let remaining = instant - ContinuousClock.now
        self = remaining <= .zero ? .now() : .now() + TimeAmount(remaining)
    }
}
