import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A TCP server on 127.0.0.1 whose first connection answers one request with keep-alive, then, when
/// a second request arrives on it, closes without answering (a FIN, or a reset with `reset`): the race
/// of a server closing an idle pooled connection just as the client reuses it. Later connections answer
/// every request with `200 ok`.
final class KeepAliveDropServer: Sendable {
    private let channel: any Channel
    private let state: NIOLockedValueBox<(connections: Int, requests: Int, answered: Int)>
    let port: Int

    private init(channel: any Channel, state: NIOLockedValueBox<(connections: Int, requests: Int, answered: Int)>) {
        self.channel = channel
        self.state = state
        self.port = channel.localAddress?.port ?? 0
    }

    /// Connections accepted, requests received (the dropped one included), requests answered.
    var counts: (connections: Int, requests: Int, answered: Int) { state.withLockedValue { $0 } }

    static func start(reset: Bool) async throws -> KeepAliveDropServer {
        let state = NIOLockedValueBox((connections: 0, requests: 0, answered: 0))
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                let number = state.withLockedValue { $0.connections += 1; return $0.connections }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Handler(connection: number, reset: reset, state: state))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        return KeepAliveDropServer(channel: channel, state: state)
    }

    func shutdown() async throws { try await channel.close() }

    private final class Handler: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let connection: Int
        let reset: Bool
        let state: NIOLockedValueBox<(connections: Int, requests: Int, answered: Int)>
        var pending = ""
        var served = 0

        init(connection: Int, reset: Bool, state: NIOLockedValueBox<(connections: Int, requests: Int, answered: Int)>) {
            self.connection = connection
            self.reset = reset
            self.state = state
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            pending += String(buffer: unwrapInboundIn(data))
            while let end = pending.range(of: "\r\n\r\n") {
                let head = pending[..<end.lowerBound].lowercased()
                let length = head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                    .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
                guard pending.utf8.count >= pending[..<end.upperBound].utf8.count + length else { return }
                pending = String(pending.utf8.dropFirst(pending[..<end.upperBound].utf8.count + length)) ?? ""
                state.withLockedValue { $0.requests += 1 }
                served += 1
                if connection == 1 && served == 2 {
                    if reset, let options = context.channel as? any SocketOptionProvider {
                        _ = options.setSoLinger(linger(l_onoff: 1, l_linger: 0))
                    }
                    context.close(promise: nil)
                    return
                }
                state.withLockedValue { $0.answered += 1 }
                context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok")), promise: nil)
            }
        }
    }
}
