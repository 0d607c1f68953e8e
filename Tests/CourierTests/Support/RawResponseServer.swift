import NIOCore
import NIOPosix

/// A TCP server on 127.0.0.1 that answers every request with fixed bytes, then closes: a server that
/// speaks broken HTTP, for robustness tests.
final class RawResponseServer: Sendable {
    private let channel: any Channel
    let port: Int

    private init(channel: any Channel) {
        self.channel = channel
        self.port = channel.localAddress?.port ?? 0
    }

    static func start(replyingWith bytes: [UInt8]) async throws -> RawResponseServer {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ReplyHandler(bytes: bytes))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        return RawResponseServer(channel: channel)
    }

    func shutdown() async throws {
        try await channel.close()
    }

    private final class ReplyHandler: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let bytes: [UInt8]
        var answered = false

        init(bytes: [UInt8]) { self.bytes = bytes }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard !answered else { return }
            answered = true
            let close = context.eventLoop.makePromise(of: Void.self)
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: bytes)), promise: close)
            close.futureResult.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        }
    }
}
