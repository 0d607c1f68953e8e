import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix

/// An HTTP/1.1 server on 127.0.0.1 whose answers are scripts: a head, body pieces with pauses, then an
/// end, a dropped connection or silence. For server-sent events and other live streams.
final class EventStreamServer: Sendable {
    /// One step of an answer.
    enum Step: Sendable {
        case head(Int, [(String, String)] = [("Content-Type", "text/event-stream")])
        case send(String)
        /// Sends bytes (a compressed body, say).
        case sendBytes([UInt8])
        case pause(milliseconds: Int64)
        /// Ends the response properly (the connection may be reused).
        case end
        /// Ends a chunked response with these trailer fields.
        case trailers([(String, String)])
        /// Closes the connection in the middle of the response.
        case drop
        /// Stops here: the connection stays open and silent.
        case hang
    }

    /// A request as received: its URI and header fields.
    struct Request: Sendable {
        var uri: String
        var headers: [(String, String)]
        var at = ContinuousClock.now
        /// The body, as text.
        var body = ""
        /// The trailer fields that followed the body, if any.
        var trailers: [(String, String)]?
        /// The first value of a field (case-insensitive).
        func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name.lowercased() }?.1 }
    }

    private let channel: any Channel
    private let log: NIOLockedValueBox<[Request]>
    let port: Int

    private init(channel: any Channel, log: NIOLockedValueBox<[Request]>) {
        self.channel = channel
        self.log = log
        port = channel.localAddress?.port ?? 0
    }

    /// Every request so far, in order.
    var requests: [Request] { log.withLockedValue { $0 } }

    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Starts a server; `script` is called with each request and its number (0 for the first).
    static func start(_ script: @escaping @Sendable (Request, Int) -> [Step]) async throws -> EventStreamServer {
        let log = NIOLockedValueBox<[Request]>([])
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline().flatMapThrowing {
                    try channel.pipeline.syncOperations.addHandler(ScriptHandler(script: script, log: log))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        return EventStreamServer(channel: channel, log: log)
    }

    func shutdown() async throws {
        try await channel.close()
    }

    private final class ScriptHandler: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        let script: @Sendable (Request, Int) -> [Step]
        let log: NIOLockedValueBox<[Request]>
        var request: Request?

        init(script: @escaping @Sendable (Request, Int) -> [Step], log: NIOLockedValueBox<[Request]>) {
            self.script = script
            self.log = log
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                request = Request(uri: head.uri, headers: head.headers.map { ($0.name, $0.value) })
            case .body(let buffer):
                request?.body += String(buffer: buffer)
            case .end(let trailers):
                guard var request else { return }
                request.trailers = trailers.map { $0.map { ($0.name, $0.value) } }
                let index = log.withLockedValue { log in
                    log.append(request)
                    return log.count - 1
                }
                run(script(request, index)[...], context: context)
            }
        }

        private func run(_ steps: ArraySlice<Step>, context: ChannelHandlerContext) {
            var steps = steps
            while let step = steps.popFirst() {
                switch step {
                case .head(let status, let headers):
                    var fields = HTTPHeaders(headers)
                    if !fields.contains(name: "Content-Length") { fields.add(name: "Transfer-Encoding", value: "chunked") }
                    context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(
                        version: .http1_1, status: HTTPResponseStatus(statusCode: status), headers: fields))), promise: nil)
                case .send(let text):
                    context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: text)))), promise: nil)
                case .sendBytes(let bytes):
                    context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: bytes)))), promise: nil)
                case .pause(let milliseconds):
                    let rest = steps
                    context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(milliseconds)) {
                        self.run(rest, context: context)
                    }
                    return
                case .end:
                    context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
                    return
                case .trailers(let fields):
                    context.writeAndFlush(wrapOutboundOut(.end(HTTPHeaders(fields))), promise: nil)
                    return
                case .drop:
                    context.close(promise: nil)
                    return
                case .hang:
                    return
                }
            }
        }
    }
}
