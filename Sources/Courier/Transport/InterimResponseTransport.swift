import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTPCompression
import NIOPosix
import NIOSSL
import NIOTLS

/// A one-connection-per-request HTTP/1.1 transport on SwiftNIO that reports interim (1xx) responses.
///
/// async-http-client reads and drops `1xx` heads inside its connection pool, with no hook to see
/// them. When an operation asks for them (``NetworkOperation/onInformationalResponse(_:)``),
/// ``AsyncHTTPClientTransport`` hands its request to this transport instead: it opens a connection
/// (TLS for https), keeps NIO's decoder forwarding informational heads, reports each one, and returns
/// the final response like any transport. The body streams with backpressure (the socket is not read
/// while the reader is behind) and the connection closes as soon as the reader stops (cancellation, the
/// body-size limit). It does not pool connections, so it is meant for the requests that need it, not for
/// bulk traffic.
struct InterimResponseTransport: HTTPTransport {
    let group: any EventLoopGroup

    init(group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) {
        self.group = group
    }

    func execute(_ request: TransportRequest) async throws -> TransportResponse {
        let url = request.url.absoluteString
        guard let host = request.url.host, !host.isEmpty, let scheme = request.url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            throw NetworkError(.invalidURL, "not an absolute http(s) URL", url: url)
        }
        let isSecure = scheme == "https"
        let port = request.url.port ?? (isSecure ? 443 : 80)
        let tls: NIOSSLContext?
        let key = try AsyncHTTPClientTransport.clientKey(for: request)   // a pinned host over http is refused
        let pinCheck = key.pins.map(PinCheck.init(pins:))
        do {
            let trust = request.options.trust
            // A context reads certificate files (the policy's, and the system's bundle): on NIO's thread pool,
            // not the caller's thread.
            tls = isSecure
                ? try await NIOThreadPool.singleton.runIfActive {
                    try NIOSSLContext(configuration: trust == .system ? .makeClientConfiguration() : try trust.tlsConfiguration(for: host))
                }
                : nil
        } catch let error as NetworkError {
            throw error
        } catch {
            throw NetworkError(.tls, "TLS could not be set up: \(error)", url: url, underlying: error)
        }
        let handshake = group.any().makePromise(of: Void.self)
        // The body streams with backpressure: past 8 unread parts the connection stops reading (autoRead
        // off) until the reader catches up; a reader that stops (cancelled, or the body-size limit tripped)
        // closes the connection.
        let flow = BodyFlow()
        let produced = NIOThrowingAsyncSequenceProducer.makeSequence(
            elementType: ByteBuffer.self, failureType: (any Error).self,
            backPressureStrategy: NIOAsyncSequenceProducerBackPressureStrategies.HighLowWatermark(lowWatermark: 2, highWatermark: 8),
            finishOnDeinit: true, delegate: flow)
        let body = produced.sequence
        let bodyContinuation = produced.source
        let headPromise = group.any().makePromise(of: HTTPResponseHead.self)
        let trailers = NIOLockedValueBox<HTTPHeaders?>(nil)
        let interim = request.didReceiveInformational
        let options = request.options
        let bootstrap = ClientBootstrap(group: group)
            .connectTimeout(TimeAmount(options.connectTimeout))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    if let tls {
                        let serverName = Self.isIPAddress(host) ? nil : host
                        try pipeline.addHandler(NIOSSLClientHandler(context: tls, serverHostname: serverName))
                        try pipeline.addHandler(HandshakeGate(handshake, pins: pinCheck))
                    }
                    try pipeline.addHandler(HTTPRequestEncoder())
                    try pipeline.addHandler(ByteToMessageHandler(HTTPResponseDecoder(informationalResponseStrategy: .forward)))
                    if case .enabled(let ratio) = options.decompression {
                        try pipeline.addHandler(NIOHTTPResponseDecompressor(limit: .ratio(ratio)))
                    }
                    try pipeline.addHandler(IdleStateHandler(readTimeout: TimeAmount(options.readTimeout)))
                    try pipeline.addHandler(ResponseForwarder(
                        url: url, head: headPromise, body: bodyContinuation, trailers: trailers, interim: interim))
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.connect(host: host, port: port).get()
        } catch {
            headPromise.fail(error)
            handshake.fail(error)
            bodyContinuation.finish(error)
            throw AsyncHTTPClientTransport.networkError(for: error, url: url)
        }
        if tls == nil { handshake.succeed() }
        flow.attach(channel)
        if let deadline = request.deadline {
            let remaining = deadline - ContinuousClock.now
            let timer = channel.eventLoop.scheduleTask(in: TimeAmount(max(remaining, .zero))) {
                channel.pipeline.fireErrorCaught(NetworkError(.timeout, "the request did not finish in time", url: url))
            }
            channel.closeFuture.whenComplete { _ in timer.cancel() }
        }
        return try await withTaskCancellationHandler {
            do {
                // Nothing is written before the handshake is done and the server's key is a pinned one.
                do {
                    try await handshake.futureResult.get()
                } catch let mismatch as PinCheck.Mismatch {
                    throw mismatch
                } catch {
                    // The connection failed or closed first: the pipeline knows why (a read timeout, a TLS
                    // alert) and fails the head with that.
                    channel.close(promise: nil)
                    _ = try await headPromise.futureResult.get()
                    throw error
                }
                do {
                    try await send(request, host: host, port: port, isSecure: isSecure, on: channel)
                } catch {
                    // A failed write only says the channel closed; the pipeline knows why (a TLS failure,
                    // say) and fails the head with that. Closing makes sure it does.
                    channel.close(promise: nil)
                    _ = try await headPromise.futureResult.get()
                    throw error
                }
                let head = try await headPromise.futureResult.get()
                var response = TransportResponse(
                    status: HTTPResponse.Status(code: Int(head.status.code), reasonPhrase: head.status.reasonPhrase),
                    headers: Self.fields(head.headers),
                    body: ContentCoding.decoding(
                        body, encoding: head.headers["Content-Encoding"].count == 1 ? head.headers.first(name: "Content-Encoding") : nil, decompression: options.decompression, url: url),
                    version: NetworkResponse.ProtocolVersion(major: head.version.major, minor: head.version.minor))
                response.trailers = { AsyncHTTPClientTransport.trailerFields(trailers.withLockedValue { $0 }) }
                return response
            } catch let mismatch as PinCheck.Mismatch {
                channel.close(promise: nil)
                throw PinCheck.networkError(mismatch, host: host, url: url)
            } catch {
                channel.close(promise: nil)
                throw AsyncHTTPClientTransport.networkError(for: error, url: url)
            }
        } onCancel: {
            channel.close(promise: nil)
        }
    }

    private func send(_ request: TransportRequest, host: String, port: Int, isSecure: Bool, on channel: any Channel) async throws {
        var headers = HTTPHeaders(http1: request.headers)
        ContentCoding.offerBrotli(in: &headers, decompression: request.options.decompression)
        if !headers.contains(name: "Host") {
            let defaultPort = isSecure ? 443 : 80
            let hostName = host.contains(":") ? "[\(host)]" : host
            headers.add(name: "Host", value: port == defaultPort ? hostName : "\(hostName):\(port)")
        }
        let body = request.body ?? Data()
        if request.body != nil || [.post, .put, .patch].contains(request.method) {
            headers.replaceOrAdd(name: "Content-Length", value: "\(body.count)")
        }
        headers.replaceOrAdd(name: "Connection", value: "close")
        let head = HTTPRequestHead(
            version: .http1_1, method: HTTPMethod(rawValue: request.method.rawValue), uri: Self.requestTarget(of: request.url), headers: headers)
        channel.write(HTTPClientRequestPart.head(head), promise: nil)
        if !body.isEmpty { channel.write(HTTPClientRequestPart.body(.byteBuffer(ByteBuffer(bytes: body))), promise: nil) }
        try await channel.writeAndFlush(HTTPClientRequestPart.end(nil))
        if request.body != nil { request.didSendBodyBytes?(Int64(body.count), Int64(body.count)) }
    }

    static func fields(_ headers: HTTPHeaders) -> HTTPFields {
        var fields = HTTPFields()
        for (name, value) in headers {
            if let fieldName = HTTPField.Name(name) { fields.append(HTTPField(name: fieldName, value: value)) }
        }
        return fields
    }

    static func isIPAddress(_ host: String) -> Bool {
        (try? SocketAddress(ipAddress: host, port: 0)) != nil
    }
}

typealias BodySource = NIOThrowingAsyncSequenceProducer<
    ByteBuffer, any Error, NIOAsyncSequenceProducerBackPressureStrategies.HighLowWatermark, BodyFlow
>.Source

/// The body's flow control: the reader's demand turns socket reads back on; a reader that goes away
/// closes the connection.
final class BodyFlow: NIOAsyncSequenceProducerDelegate {
    private let channel = NIOLockedValueBox<(any Channel)?>(nil)

    func attach(_ channel: any Channel) {
        self.channel.withLockedValue { $0 = channel }
    }

    func produceMore() {
        guard let channel = channel.withLockedValue({ $0 }) else { return }
        channel.setOption(ChannelOptions.autoRead, value: true).whenComplete { _ in }
    }

    func didTerminate() {
        channel.withLockedValue { $0 }?.close(promise: nil)
    }
}

/// The end of the pipeline: reports interim heads, completes the final head once, streams the body,
/// and turns every way a connection can fail into one typed error (completing each thing at most once).
private final class ResponseForwarder: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart

    let url: String
    let head: EventLoopPromise<HTTPResponseHead>
    let body: BodySource
    /// Where the body's trailer fields go, for ``TransportResponse/trailers``.
    let trailers: NIOLockedValueBox<HTTPHeaders?>
    let interim: (@Sendable (HTTPResponse.Status, HTTPFields) -> Void)?
    private var headDone = false
    private var bodyDone = false

    init(
        url: String, head: EventLoopPromise<HTTPResponseHead>, body: BodySource, trailers: NIOLockedValueBox<HTTPHeaders?>,
        interim: (@Sendable (HTTPResponse.Status, HTTPFields) -> Void)?
    ) {
        self.url = url
        self.head = head
        self.body = body
        self.trailers = trailers
        self.interim = interim
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let response) where (100..<200).contains(response.status.code) && response.status.code != 101:
            interim?(HTTPResponse.Status(code: Int(response.status.code), reasonPhrase: response.status.reasonPhrase),
                     InterimResponseTransport.fields(response.headers))
        case .head(let response):
            guard !headDone else { return fail(NetworkError(.invalidResponse, "a second response head", url: url), context: context) }
            headDone = true
            head.succeed(response)
        case .body(let buffer):
            guard !bodyDone else { return }
            switch body.yield(buffer) {
            case .produceMore: break
            case .stopProducing:
                // The reader is behind: stop reading from the socket until it asks for more.
                context.channel.setOption(ChannelOptions.autoRead, value: false).whenComplete { _ in }
            case .dropped:
                // The reader is gone (cancelled, or the size limit tripped): nothing more to read.
                bodyDone = true
                context.close(promise: nil)
            }
        case .end(let fields):
            bodyDone = true
            // Kept before the body's end is told, so a reader that saw the end finds them.
            trailers.withLockedValue { $0 = fields }
            body.finish()
            context.close(promise: nil)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent {
            fail(NetworkError(.timeout, "the server sent nothing within the read timeout", url: url), context: context)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(AsyncHTTPClientTransport.networkError(for: error, url: url), context: context)
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(NetworkError(.connectionLost, "the connection closed before the response was complete", url: url), context: nil)
        context.fireChannelInactive()
    }

    private func fail(_ error: NetworkError, context: ChannelHandlerContext?) {
        if !headDone {
            headDone = true
            head.fail(error)
        }
        if !bodyDone {
            bodyDone = true
            body.finish(error)
        }
        context?.close(promise: nil)
    }
}

extension InterimResponseTransport {
    /// The request target (origin form) for a URL, exactly as async-http-client writes it on the pooled
    /// path: the percent-ENCODED path (never `URL.path`, which decodes `%0D%0A` into a header break and
    /// drops a trailing slash) and the query as it is in the URL.
    static func requestTarget(of url: URL) -> String {
        var target = "/"
        if !url.path.isEmpty, let components = URLComponents(url: url, resolvingAgainstBaseURL: true) {
            target = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        }
        if let query = url.query { target += "?" + query }
        return target
    }
}

/// Passes the end of the TLS handshake on as a promise, failed if the server's key is not pinned (checked
/// on the event loop, as the handshake ends) or if the connection fails or closes first: the request is
/// written only after it.
private final class HandshakeGate: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    private let promise: EventLoopPromise<Void>
    private let pins: PinCheck?
    private var isSettled = false

    init(_ promise: EventLoopPromise<Void>, pins: PinCheck?) {
        self.promise = promise
        self.pins = pins
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? TLSUserEvent, case .handshakeCompleted = event {
            do {
                try pins?.verify(context.channel)
                settle(nil)
            } catch {
                settle(error)
                context.close(promise: nil)
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        settle(error)
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        settle(ChannelError.ioOnClosedChannel)
        context.fireChannelInactive()
    }

    private func settle(_ error: (any Error)?) {
        guard !isSettled else { return }
        isSettled = true
        if let error { promise.fail(error) } else { promise.succeed() }
    }
}
