import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A TCP server on 127.0.0.1 that answers every request with fixed bytes, then closes: a server that
/// speaks broken HTTP, for robustness tests.
final class RawResponseServer: Sendable {
    private let channel: any Channel
    private let log: NIOLockedValueBox<[UInt8]>
    let port: Int

    private init(channel: any Channel, log: NIOLockedValueBox<[UInt8]>) {
        self.channel = channel
        self.log = log
        self.port = channel.localAddress?.port ?? 0
    }

    /// The bytes received so far, from every connection.
    var received: String { String(decoding: log.withLockedValue { $0 }, as: UTF8.self) }

    static func start(replyingWith bytes: [UInt8]) async throws -> RawResponseServer {
        let log = NIOLockedValueBox<[UInt8]>([])
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ReplyHandler(bytes: bytes, log: log))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        return RawResponseServer(channel: channel, log: log)
    }

    func shutdown() async throws {
        try await channel.close()
    }

    private final class ReplyHandler: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let bytes: [UInt8]
        let log: NIOLockedValueBox<[UInt8]>
        var answered = false

        init(bytes: [UInt8], log: NIOLockedValueBox<[UInt8]>) {
            self.bytes = bytes
            self.log = log
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let buffer = unwrapInboundIn(data)
            log.withLockedValue { $0 += buffer.readableBytesView }
            guard !answered else { return }
            answered = true
            let close = context.eventLoop.makePromise(of: Void.self)
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: bytes)), promise: close)
            close.futureResult.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        }
    }
}
