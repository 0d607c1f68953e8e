import CourierTestServer
import Foundation
import Testing
@testable import Courier

/// Tier 3: faults found from outside (issue 9 items 11, 13) against servers on 127.0.0.1.
@Suite("Transport faults: slow bodies, stale keep-alive connections")
struct TransportFaultTests {
    @Test func theTotalTimeoutEndsABodyThatDripsOneBytePerSecond() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let engine = NetworkEngine(host: "127.0.0.1", port: server.port, isSecure: false, configuration: .init {
            $0.timeouts.total = .milliseconds(1500)
            $0.dataDirectory = nil
        }, queue: NetworkQueue())
        // Headers at once, then one byte a second for 30 s: the read timeout never fires.
        let error = await failure(of: engine.operation(path: "/bytes/30?chunkSize=1&delayMs=1000"))
        #expect(error?.code == .timeout)
        #expect(error?.message.contains("total timeout") == true)
    }

    @Test func anOperationsOwnTotalTimeoutOverridesItsEngines() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let engine = NetworkEngine(host: "127.0.0.1", port: server.port, isSecure: false, configuration: .init {
            $0.dataDirectory = nil
        }, queue: NetworkQueue())
        let op = engine.operation(path: "/bytes/30?chunkSize=1&delayMs=1000")
        op.timeouts.total = .seconds(1)
        #expect(op.timeouts.read == engine.configuration.timeouts.read, "the rest stays the engine's")
        #expect(await failure(of: op)?.code == .timeout)
        #expect(try await engine.send(engine.operation(path: "/bytes/3")).body.count == 3, "the engine's own requests are unbounded")
    }

    /// Runs `body` with a transport of its own (so the first connection is pooled and reused by the next
    /// request), shut down whatever happens: async-http-client traps on a client released unshut.
    func withOwnTransport(port: Int, _ body: (NetworkEngine) async throws -> Void) async throws {
        let transport = AsyncHTTPClientTransport()
        let engine = NetworkEngine(host: "127.0.0.1", port: port, isSecure: false, configuration: .init {
            $0.dataDirectory = nil
        }, queue: NetworkQueue(), transport: transport)
        do {
            try await body(engine)
        } catch {
            try await transport.shutdown()
            throw error
        }
        try await transport.shutdown()
    }

    @Test(arguments: [false, true])
    func anIdempotentRequestOnAConnectionTheServerClosedIsResentOnce(reset: Bool) async throws {
        let server = try await KeepAliveDropServer.start(reset: reset)
        defer { Task { try? await server.shutdown() } }
        try await withOwnTransport(port: server.port) { (engine: NetworkEngine) async throws in
            #expect(try await engine.send(engine.operation(path: "a")).string == "ok")
            let second = try await engine.send(engine.operation(path: "b"))
            #expect(second.string == "ok")
            #expect(server.counts.connections == 2 && server.counts.requests == 3, "\(server.counts)")
        }
    }

    @Test func aPostOnAConnectionTheServerClosedIsNotResent() async throws {
        let server = try await KeepAliveDropServer.start(reset: false)
        defer { Task { try? await server.shutdown() } }
        try await withOwnTransport(port: server.port) { (engine: NetworkEngine) async throws in
            #expect(try await engine.send(engine.operation(path: "a")).string == "ok")
            let error = await failure(of: engine.operation(path: "b", method: .post, body: .data(Data("x".utf8))))
            #expect(error?.code == .connectionLost || error?.code == .transport, "\(String(describing: error))")
            #expect(server.counts.requests == 2, "the server may have acted on it: not sent twice")
            let keyed = engine.operation(path: "c", method: .post, body: .data(Data("x".utf8))).setHeader("k1", forName: "Idempotency-Key")
            #expect(try await engine.send(keyed).string == "ok")
        }
    }
}
