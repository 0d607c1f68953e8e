import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix

/// An HTTP/1.1 origin on 127.0.0.1 for the transfer acceptance tests, which needs to see what the shared
/// test server does not show:
///
/// - `GET /file` serves a ``GeneratedContent`` with a strong `ETag` and byte ranges (RFC 9110 §14): a
///   `Range: bytes=N-` whose `If-Range` is absent or matches gets a `206` from N, a mismatching one the
///   whole `200`, a range past the end a `416`. Every request's `Range` and `If-Range` are logged.
/// - The body is written only while the channel is writable, so ``Statistics/unwritableEpisodes`` counts
///   the times the socket's send buffer filled (writes pending because the client is not reading), and
///   ``Statistics/bodyBytesSent`` the body bytes the kernel accepted so far.
/// - Any `POST` or `PUT` is an upload: its bytes are kept, and whether its body arrived complete.
final class TransferOriginServer: Sendable {
    /// One request, as the server saw its head.
    struct LoggedRequest: Sendable {
        var method: String
        var path: String
        var range: String?
        var ifRange: String?
        var status: Int
    }

    /// One upload: the bytes received, and whether the whole declared body arrived.
    struct Upload: Sendable {
        var path: String
        var declaredLength: Int?
        var body = Data()
        var isComplete = false
    }

    struct Statistics: Sendable {
        var requests: [LoggedRequest] = []
        var uploads: [Upload] = []
        var bodyBytesSent = 0
        var unwritableEpisodes = 0
    }

    let content: GeneratedContent
    let etag: String
    let port: Int
    private let channel: any Channel
    private let state: NIOLockedValueBox<Statistics>

    private init(content: GeneratedContent, etag: String, channel: any Channel, state: NIOLockedValueBox<Statistics>) {
        self.content = content
        self.etag = etag
        self.channel = channel
        self.state = state
        self.port = channel.localAddress?.port ?? 0
    }

    var statistics: Statistics { state.withLockedValue { $0 } }
    var requests: [LoggedRequest] { state.withLockedValue { $0.requests } }
    var uploads: [Upload] { state.withLockedValue { $0.uploads } }
    /// Body bytes of the uploads in progress or done, all together.
    var uploadedBytes: Int { state.withLockedValue { $0.uploads.reduce(0) { $0 + $1.body.count } } }

    var fileURL: String { "http://127.0.0.1:\(port)/file" }

    /// Starts a server.
    /// - Parameters:
    ///   - content: What `/file` serves.
    ///   - sendBufferSize: `SO_SNDBUF` of each connection (fixed, so the kernel's buffering stays small
    ///     and known); the system's autotuning when `nil`.
    static func start(content: GeneratedContent, sendBufferSize: Int? = nil) async throws -> TransferOriginServer {
        let state = NIOLockedValueBox(Statistics())
        let etag = "\"gen-\(String(content.seed, radix: 16))-\(content.size)\""
        var bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
        if let sendBufferSize {
            bootstrap = bootstrap.childChannelOption(.socketOption(.so_sndbuf), value: SocketOptionValue(sendBufferSize))
        }
        let channel = try await bootstrap
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(Handler(content: content, etag: etag, state: state))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        return TransferOriginServer(content: content, etag: etag, channel: channel, state: state)
    }

    func shutdown() async throws { try await channel.close() }

    /// The status and body range answering a `GET /file` with these `Range` and `If-Range` fields.
    static func answer(range: String?, ifRange: String?, etag: String, size: Int) -> (status: Int, bytes: Range<Int>) {
        guard let range, ifRange == nil || ifRange == etag, range.hasPrefix("bytes="), !range.contains(",") else {
            return (200, 0..<size)
        }
        let bounds = range.dropFirst("bytes=".count).split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = Int(bounds[0]) else { return (200, 0..<size) }
        guard first < size else { return (416, 0..<0) }
        let last = bounds[1].isEmpty ? size - 1 : min(Int(bounds[1]) ?? size - 1, size - 1)
        guard last >= first else { return (200, 0..<size) }
        return (206, first..<(last + 1))
    }

    private final class Handler: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        let content: GeneratedContent
        let etag: String
        let state: NIOLockedValueBox<Statistics>
        private var head: HTTPRequestHead?
        private var upload: Int?
        /// The body being streamed: the next byte, the end, and whether to keep the connection.
        private var stream: (next: Int, end: Int, keepAlive: Bool)?
        private var isPumping = false

        init(content: GeneratedContent, etag: String, state: NIOLockedValueBox<Statistics>) {
            self.content = content
            self.etag = etag
            self.state = state
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let request):
                head = request
                if request.method == .POST || request.method == .PUT {
                    let declared = request.headers.first(name: "content-length").flatMap { Int($0) }
                    upload = state.withLockedValue { state in
                        state.requests.append(LoggedRequest(method: request.method.rawValue, path: request.uri, status: 200))
                        state.uploads.append(Upload(path: request.uri, declaredLength: declared))
                        return state.uploads.count - 1
                    }
                }
            case .body(let buffer):
                if let upload { state.withLockedValue { $0.uploads[upload].body.append(contentsOf: buffer.readableBytesView) } }
            case .end:
                guard let request = head else { return }
                head = nil
                if let index = upload {
                    upload = nil
                    let received = state.withLockedValue { state in
                        state.uploads[index].isComplete = true
                        return state.uploads[index].body.count
                    }
                    reply(.ok, body: ByteBuffer(string: #"{"received":\#(received)}"#), request: request, context: context)
                } else if request.uri == "/file" && (request.method == .GET || request.method == .HEAD) {
                    serveFile(request, context: context)
                } else {
                    state.withLockedValue {
                        $0.requests.append(LoggedRequest(method: request.method.rawValue, path: request.uri, status: 404))
                    }
                    reply(.notFound, body: ByteBuffer(string: "not found"), request: request, context: context)
                }
            }
        }

        private func reply(_ status: HTTPResponseStatus, body: ByteBuffer, request: HTTPRequestHead, context: ChannelHandlerContext) {
            var headers = HTTPHeaders([("Content-Length", String(body.readableBytes))])
            if !request.isKeepAlive { headers.add(name: "Connection", value: "close") }
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: request.version, status: status, headers: headers))), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
            let done = context.eventLoop.makePromise(of: Void.self)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: done)
            if !request.isKeepAlive { done.futureResult.assumeIsolated().whenComplete { _ in context.close(promise: nil) } }
        }

        private func serveFile(_ request: HTTPRequestHead, context: ChannelHandlerContext) {
            let range = request.headers.first(name: "range"), ifRange = request.headers.first(name: "if-range")
            let (status, bytes) = TransferOriginServer.answer(range: range, ifRange: ifRange, etag: etag, size: content.size)
            state.withLockedValue {
                $0.requests.append(LoggedRequest(method: request.method.rawValue, path: request.uri, range: range, ifRange: ifRange, status: status))
            }
            var headers = HTTPHeaders([("ETag", etag), ("Accept-Ranges", "bytes"), ("Content-Type", "application/octet-stream")])
            switch status {
            case 416:
                headers.add(name: "Content-Range", value: "bytes */\(content.size)")
                headers.add(name: "Content-Length", value: "0")
            case 206:
                headers.add(name: "Content-Range", value: "bytes \(bytes.lowerBound)-\(bytes.upperBound - 1)/\(content.size)")
                headers.add(name: "Content-Length", value: String(bytes.count))
            default:
                headers.add(name: "Content-Length", value: String(bytes.count))
            }
            if !request.isKeepAlive { headers.add(name: "Connection", value: "close") }
            let head = HTTPResponseHead(version: request.version, status: HTTPResponseStatus(statusCode: status), headers: headers)
            context.writeAndFlush(wrapOutboundOut(.head(head)), promise: nil)
            stream = (request.method == .HEAD ? bytes.upperBound : bytes.lowerBound, bytes.upperBound, request.isKeepAlive)
            pump(context: context)
        }

        /// Writes pieces while the channel is writable (a megabyte per event-loop tick at most).
        private func pump(context: ChannelHandlerContext) {
            guard !isPumping, var current = stream else { return }
            isPumping = true
            defer { isPumping = false }
            var written = 0
            while current.next < current.end, context.channel.isWritable, written < 1 << 20 {
                let count = min(64 * 1024, current.end - current.next)
                var piece = context.channel.allocator.buffer(capacity: count)
                content.write(offset: current.next, count: count, into: &piece)
                let sent = context.eventLoop.makePromise(of: Void.self)
                let state = self.state
                sent.futureResult.whenSuccess { state.withLockedValue { $0.bodyBytesSent += count } }
                context.write(wrapOutboundOut(.body(.byteBuffer(piece))), promise: sent)
                current.next += count
                written += count
            }
            if current.next >= current.end {
                stream = nil
                let done = context.eventLoop.makePromise(of: Void.self)
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: done)
                if !current.keepAlive { done.futureResult.assumeIsolated().whenComplete { _ in context.close(promise: nil) } }
                return
            }
            stream = current
            context.flush()
            if context.channel.isWritable {
                context.eventLoop.assumeIsolated().execute { self.pump(context: context) }
            }
        }

        func channelWritabilityChanged(context: ChannelHandlerContext) {
            if context.channel.isWritable {
                pump(context: context)
            } else if stream != nil {
                state.withLockedValue { $0.unwritableEpisodes += 1 }
            }
            context.fireChannelWritabilityChanged()
        }

        func channelInactive(context: ChannelHandlerContext) {
            stream = nil
            context.fireChannelInactive()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            stream = nil
            context.close(promise: nil)
        }
    }
}
