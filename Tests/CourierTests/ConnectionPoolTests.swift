import CourierTestServer
import Foundation
import Testing
@testable import Courier

/// Issue 25, connection tuning: the most connections per host, the idle timeout, one pool for engines
/// with equal settings, and a transport released without a shutdown. Each test has a transport of its
/// own, so the server's connection counts are this test's.
@Suite("Connection pools")
struct ConnectionPoolTests {
    private func engine(
        _ server: TestServer, transport: AsyncHTTPClientTransport, width: Int = 6,
        _ configure: (inout NetworkEngine.Configuration) -> Void = { _ in }
    ) -> NetworkEngine {
        var configuration = NetworkEngine.Configuration()
        configuration.dataDirectory = nil
        configuration.reachability = ManualReachability(.reachable(via: .wired))
        configure(&configuration)
        return NetworkEngine(
            host: "127.0.0.1", port: server.port, isSecure: false, configuration: configuration,
            queue: NetworkQueue(maximumConcurrentOperations: width), transport: transport)
    }

    private func withTransport(_ body: (TestServer, AsyncHTTPClientTransport) async throws -> Void) async throws {
        let server = try await TestServer.start()
        let transport = AsyncHTTPClientTransport()
        do {
            try await body(server, transport)
        } catch {
            try? await transport.shutdown()
            try? await server.shutdown()
            throw error
        }
        try await transport.shutdown()
        try await server.shutdown()
    }

    /// Six requests at once (the queue lets all six run) over at most two connections: the others wait
    /// for one, and every request succeeds.
    @Test func theMostConnectionsPerHostHoldWhileTheQueueRunsMore() async throws {
        try await withTransport { server, transport in
            let engine = engine(server, transport: transport) { $0.connectionPool = ConnectionPoolSettings(maximumConnectionsPerHost: 2) }
            let operations = (0..<6).map { engine.operation(path: "delay/300?n=\($0)") }   // distinct: not coalesced
            try await withThrowingTaskGroup(of: Int.self) { group in
                for operation in operations { group.addTask { try await engine.send(operation).statusCode } }
                for try await status in group { #expect(status == 200) }
            }
            #expect(server.maxOpenConnections <= 2, "opened \(server.maxOpenConnections) at once")
            #expect(server.maxInFlight <= 2)
            #expect(server.requestCount == 6)
        }
    }

    /// Without a limit of its own the engine gets the transport's (64): the queue's width decides, and
    /// more than two run at once (all six, unless the machine is too slow to start them within a second).
    @Test func withoutALimitTheQueueWidthDecides() async throws {
        try await withTransport { server, transport in
            let engine = engine(server, transport: transport)
            let operations = (0..<6).map { engine.operation(path: "delay/1000?n=\($0)") }   // distinct: not coalesced
            try await withThrowingTaskGroup(of: Int.self) { group in
                for operation in operations { group.addTask { try await engine.send(operation).statusCode } }
                for try await status in group { #expect(status == 200) }
            }
            #expect(server.maxInFlight > 2 && server.maxInFlight <= 6, "\(server.maxInFlight) at once")
        }
    }

    /// A connection unused for longer than the idle timeout is closed: the next request opens another.
    /// With the default (60 s) the same connection carries both.
    @Test(arguments: [true, false])
    func anIdleConnectionIsClosedAfterTheIdleTimeout(short: Bool) async throws {
        try await withTransport { server, transport in
            let engine = engine(server, transport: transport) {
                if short { $0.connectionPool.idleTimeout = .milliseconds(200) }
            }
            #expect(try await engine.send(engine.operation(path: "get")).statusCode == 200)
            try await Task.sleep(for: .milliseconds(800))
            #expect(try await engine.send(engine.operation(path: "get")).statusCode == 200)
            #expect(server.acceptedConnectionCount == (short ? 2 : 1))
        }
    }

    /// Two engines with equal connection settings (other headers, other queues) share one pool; an
    /// engine whose pool settings differ gets one of its own.
    @Test func enginesWithEqualSettingsShareOnePool() async throws {
        try await withTransport { (server: TestServer, transport: AsyncHTTPClientTransport) async throws in
            let first = engine(server, transport: transport)
            let second = engine(server, transport: transport) { $0.userAgent = "second" }
            #expect(try await first.send(first.operation(path: "get")).statusCode == 200)
            #expect(try await second.send(second.operation(path: "get")).statusCode == 200)
            #expect(transport.clientCount == 1)
            let tuned = engine(server, transport: transport) { $0.connectionPool.maximumConnectionsPerHost = 1 }
            #expect(try await tuned.send(tuned.operation(path: "get")).statusCode == 200)
            #expect(transport.clientCount == 2)
        }
    }

    /// A transport dropped without `shutdown()` while it holds an open pool shuts it down itself:
    /// async-http-client would otherwise trap (debug builds) when the client is released unshut.
    @Test func aTransportReleasedWithoutShutdownDoesNotTrap() async throws {
        let server = try await TestServer.start()
        do {
            var transport: AsyncHTTPClientTransport? = AsyncHTTPClientTransport()
            weak let released = transport
            var engine: NetworkEngine? = engine(server, transport: transport!)
            #expect(try await engine!.send(engine!.operation(path: "get")).statusCode == 200)
            engine = nil
            transport = nil
            #expect(await eventually { released == nil }, "the transport is released")
            // The pool's connection closes once its client shut down.
            #expect(await eventually { server.openConnectionCount == 0 })
        }
        try await server.shutdown()
    }

    /// Set through the properties, past what the initialiser allows: requests still go, one connection
    /// at a time, and a connection is still reused at once.
    @Test(.timeLimit(.minutes(1))) func settingsSetPastTheirLimitsStillWork() async throws {
        try await withTransport { (server: TestServer, transport: AsyncHTTPClientTransport) async throws in
            let engine = engine(server, transport: transport) {
                $0.connectionPool.maximumConnectionsPerHost = 0
                $0.connectionPool.idleTimeout = .seconds(-5)
            }
            let operations = (0..<3).map { engine.operation(path: "get?n=\($0)") }
            for operation in operations { engine.enqueue(operation) }
            for operation in operations { #expect(try await operation.response().statusCode == 200) }
            #expect(server.maxInFlight == 1, "one connection: one request at a time")
        }
    }

    @Test func settingsAreClamped() {
        let settings = ConnectionPoolSettings(maximumConnectionsPerHost: 0, idleTimeout: .zero)
        #expect(settings.maximumConnectionsPerHost == 1 && settings.idleTimeout == .milliseconds(10))
        #expect(ConnectionPoolSettings().maximumConnectionsPerHost == nil && ConnectionPoolSettings().idleTimeout == .seconds(60))
    }
}
