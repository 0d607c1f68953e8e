import CourierTestServer
import Foundation
import Testing
@testable import Courier

/// Issue 25: the engine's trust applies on every path a request takes, here a frozen request's replay
/// from the outbox, against the in-process https server (the demo's test-only CA and certificate).
@Suite("Trust on every path")
struct TrustPathsTests {
    static let demoCA = TrustCertificate.pem(TLSIdentity.demoCertificateAuthorityPEM)

    static func pinned(to pin: String) throws -> TrustPolicy {
        TrustPolicy(roots: .only([demoCA]), pins: [try CertificatePin(host: "127.0.0.1", [pin])])
    }

    /// Frozen while unreachable, replayed when the host comes back: through the engine's trust policy,
    /// so a pinned replay reaches the server, and one whose pin does not match sends nothing.
    @Test(.timeLimit(.minutes(1)), arguments: [true, false])
    func aFrozenRequestIsReplayedUnderTheEnginesTrust(rightPin: Bool) async throws {
        let server = try await TestServer.start(tls: .demo)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-trust-replay-\(UUID().uuidString)")
        defer {
            try? FileManager.default.removeItem(at: directory)
            Task { try? await server.shutdown() }
        }
        let reachability = ManualReachability(.unreachable)
        let pin = rightPin ? TLSIdentity.demoPin : "sha256/" + Data(repeating: 9, count: 32).base64EncodedString()
        let trust = try Self.pinned(to: pin)
        let engine = NetworkEngine(host: "127.0.0.1", port: server.port, isSecure: true, configuration: .init {
            $0.reachability = reachability
            $0.dataDirectory = directory
            $0.trust = trust
        }, queue: NetworkQueue())
        let operation = engine.operation(path: "/anything/orders", method: .post, body: .json(["n": 1]))
        operation.isFreezable = true
        engine.enqueue(operation)
        #expect(await eventually { operation.state == .frozen })
        reachability.setStatus(.reachable(via: .wired))
        if rightPin {
            #expect(try await operation.response().statusCode == 200)
            #expect(server.requestCount(path: "/anything/orders") == 1)
        } else {
            // The replay's connection fails its pin check before anything is written.
            #expect(await eventually { server.acceptedConnectionCount > 0 })
            try await Task.sleep(for: .milliseconds(300))
            #expect(server.requestCount == 0, "nothing reached a server whose key is not pinned")
            #expect(operation.state != .finished || operation.error?.code == .tls, "\(operation.state) \(String(describing: operation.error))")
        }
    }

    /// The same server over the pooled transport: the system's roots refuse it, the demo CA reaches it.
    @Test func theDemoServerIsTrustedOnlyThroughItsCA() async throws {
        let server = try await TestServer.start(tls: .demo)
        defer { Task { try? await server.shutdown() } }
        func get(_ trust: TrustPolicy) async -> NetworkError? {
            let engine = NetworkEngine(host: "127.0.0.1", port: server.port, isSecure: true, configuration: .init {
                $0.dataDirectory = nil
                $0.reachability = ManualReachability(.reachable(via: .wired))
                $0.trust = trust
            }, queue: NetworkQueue())
            return await failure(of: engine.operation(path: "/get"))
        }
        let untrusted = await get(.system)
        #expect(untrusted?.code == .tls)
        // Said in words, without BoringSSL's error number and source path.
        #expect(untrusted?.message.hasPrefix("the server's certificate is not trusted (CERTIFICATE_VERIFY_FAILED)") == true, "\(String(describing: untrusted))")
        #expect(untrusted?.message.contains(".cc") == false)
        #expect(await get(TrustPolicy(roots: .only([Self.demoCA]))) == nil)
        #expect(await get(try Self.pinned(to: TLSIdentity.demoPin)) == nil)
        #expect(server.baseURL.hasPrefix("https://"))
    }
}
