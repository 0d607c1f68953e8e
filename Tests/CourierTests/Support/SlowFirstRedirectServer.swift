import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix

/// An HTTP/1.1 origin on 127.0.0.1 whose first request, once its whole body has arrived, is answered
/// `307 Temporary Redirect` to `/done` after ``delay``; every later request gets `200 ok` at once. A replay
/// that stays on its way for a while, then reads its body again for the redirect. Each request is logged as
/// its path and the body bytes it brought.
final class SlowFirstRedirectServer: Sendable {
    private let channel: any Channel
    private let log: NIOLockedValueBox<[(path: String, bodyBytes: Int)]>
    let port: Int

    private init(channel: any Channel, log: NIOLockedValueBox<[(path: String, bodyBytes: Int)]>) {
        self.channel = channel
        self.log = log
        self.port = channel.localAddress?.port ?? 0
    }

    /// Every request answered or waiting, in arrival order.
    var requests: [(path: String, bodyBytes: Int)] { log.withLockedValue { $0 } }

    static func start(delay: TimeAmount) async throws -> SlowFirstRedirectServer {
        let log = NIOLockedValueBox<[(path: String, bodyBytes: Int)]>([])
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(Handler(delay: delay, log: log))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        return SlowFirstRedirectServer(channel: channel, log: log)
    }

    func shutdown() async throws { try await channel.close() }

    private final class Handler: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        let delay: TimeAmount
        let log: NIOLockedValueBox<[(path: String, bodyBytes: Int)]>
        var path = ""
        var bodyBytes = 0

        init(delay: TimeAmount, log: NIOLockedValueBox<[(path: String, bodyBytes: Int)]>) {
            self.delay = delay
            self.log = log
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                path = head.uri
                bodyBytes = 0
            case .body(let buffer):
                bodyBytes += buffer.readableBytes
            case .end:
                let first = log.withLockedValue { log in
                    log.append((path, bodyBytes))
                    return log.count == 1
                }
                guard first else {
                    respond(context, status: .ok, headers: ["Content-Length": "2"], body: "ok")
                    return
                }
                let loop = context.eventLoop.assumeIsolated()
                loop.scheduleTask(in: delay) { [self] in
                    respond(context, status: .temporaryRedirect, headers: ["Location": "/done", "Content-Length": "0"], body: "")
                }
            }
        }

        private func respond(_ context: ChannelHandlerContext, status: HTTPResponseStatus, headers: [String: String], body: String) {
            let head = HTTPResponseHead(version: .http1_1, status: status, headers: HTTPHeaders(headers.map { ($0.key, $0.value) }))
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            if !body.isEmpty { context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: body)))), promise: nil) }
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
    }
}
