import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// An in-process HTTP/1.1 server for tests, demos and benchmarks.
///
/// The server runs on SwiftNIO's shared `MultiThreadedEventLoopGroup.singleton` and serves
/// a fixed set of httpbin-like routes (`/get`, `/anything`, `/delay/{ms}`, `/status/{code}`,
/// `/bytes/{n}`, `/redirect/{n}`, `/stall`, `/gzip`, `/echo`, ...). It keeps thread-safe
/// statistics about the requests it received, which tests can inspect or await.
///
/// ```swift
/// let server = try await TestServer.start()
/// let url = server.url("/get?x=1")   // "http://127.0.0.1:PORT/get?x=1"
/// // ... send requests to `url` ...
/// #expect(await server.waitForRequests(count: 1, timeout: .seconds(1)))
/// try await server.shutdown()
/// ```
///
/// Always call ``shutdown()`` when done; it closes the listener and every open connection.
public final class TestServer: Sendable {
    private let channel: any Channel
    private let host: String
    private let boundPort: Int
    private let isSecure: Bool
    let statistics: ServerStatistics
    let files: ServedFiles
    let connections: ConnectionRegistry

    private init(
        channel: any Channel,
        host: String,
        port: Int,
        statistics: ServerStatistics,
        files: ServedFiles,
        connections: ConnectionRegistry,
        isSecure: Bool
    ) {
        self.isSecure = isSecure
        self.files = files
        self.channel = channel
        self.host = host
        self.boundPort = port
        self.statistics = statistics
        self.connections = connections
    }

    /// Starts a server listening on `host` and `port`.
    ///
    /// - Parameters:
    ///   - host: The address to bind, `"127.0.0.1"` by default.
    ///   - port: The TCP port; `0` (the default) picks a free ephemeral port, see ``port``.
    ///   - tls: A certificate and key to speak https with (HTTP/1.1); plain http when `nil`.
    /// - Returns: The running server.
    /// - Throws: When the port is outside `0...65535` or binding fails.
    public static func start(host: String = "127.0.0.1", port: Int = 0, tls: TLSIdentity? = nil) async throws -> TestServer {
        guard (0...65_535).contains(port) else {
            throw TestServerError.invalidPort(port)
        }
        let sslContext = try tls.map { try $0.makeContext() }
        let statistics = ServerStatistics()
        let files = ServedFiles()
        let connections = ConnectionRegistry()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    connections.register(channel)
                    let pipeline = channel.pipeline.syncOperations
                    if let sslContext { try pipeline.addHandler(NIOSSLServerHandler(context: sslContext)) }
                    try pipeline.configureHTTPServerPipeline(withErrorHandling: true)
                    try pipeline.addHandler(TestServerHandler(statistics: statistics, files: files, connections: connections))
                }
            }
            .bind(host: host, port: port)
            .get()
        guard let boundPort = channel.localAddress?.port else {
            try? await channel.close()
            throw TestServerError.noLocalAddress
        }
        return TestServer(
            channel: channel,
            host: host,
            port: boundPort,
            statistics: statistics,
            files: files,
            connections: connections,
            isSecure: sslContext != nil
        )
    }

    /// The TCP port the server is listening on (the actual port when started with port 0).
    public var port: Int { boundPort }

    /// The server's base URL without a trailing slash, e.g. `"http://127.0.0.1:54321"` (`https` when
    /// started with a TLS identity).
    public var baseURL: String {
        let hostPart = host.contains(":") ? "[\(host)]" : host
        return "\(isSecure ? "https" : "http")://\(hostPart):\(boundPort)"
    }

    /// Returns ``baseURL`` followed by `pathAndQuery`, e.g. `url("/get?a=1")`.
    ///
    /// - Parameter pathAndQuery: A path starting with `/`, optionally followed by a query.
    public func url(_ pathAndQuery: String) -> String {
        baseURL + pathAndQuery
    }

    /// Stops the server: closes the listening socket and every open connection, then waits
    /// until they are all closed. Requests cut off this way are not counted as aborted.
    /// Calling it again (or concurrently) is harmless.
    public func shutdown() async throws {
        let open = connections.beginShutdown()
        try? await channel.close()
        for connection in open {
            connection.close(promise: nil)
        }
        try? await channel.closeFuture.get()
        for connection in open {
            try? await connection.closeFuture.get()
        }
    }
}

/// Errors thrown by ``TestServer/start(host:port:)``.
enum TestServerError: Error, CustomStringConvertible {
    /// The requested port is not a valid TCP port.
    case invalidPort(Int)
    /// The listening socket has no local address.
    case noLocalAddress

    var description: String {
        switch self {
        case .invalidPort(let port): "invalid TCP port \(port)"
        case .noLocalAddress: "the listening socket has no local address"
        }
    }
}
