import Courier
import CourierTestServer
import Foundation

extension Demo {
    /// Scene 14: trust. An https server with a certificate from a CA of its own: refused with the
    /// system's roots, reached with that CA as the only root, then pinned to its public key (a wrong pin
    /// is refused with a message naming the key the server showed; a backup pin beside the right one
    /// passes), with connections pooled two per host.
    nonisolated func trust() async throws {
        say("14. Trust: a CA of your own, public-key pins, connection pools")
        let server = try await TestServer.start(tls: .demo)
        defer { Task { try? await server.shutdown() } }
        let demoCA = TrustCertificate.pem(TLSIdentity.demoCertificateAuthorityPEM)
        let otherKey = "sha256/" + Data(repeating: 7, count: 32).base64EncodedString()
        func get(_ trust: TrustPolicy) async -> String {
            let engine = NetworkEngine(host: "127.0.0.1", port: server.port, isSecure: true, configuration: .init {
                $0.dataDirectory = nil
                $0.trust = trust
                $0.connectionPool = ConnectionPoolSettings(maximumConnectionsPerHost: 2)
            }, queue: NetworkQueue())
            do {
                let response = try await engine.send(engine.operation(path: "/get"))
                return "\(response.statusCode) over TLS (\(response.version.map { "\($0)" } ?? "?"))"
            } catch {
                return "refused, \(error.code): \(error.message)"
            }
        }
        say("   the system's roots: \(await get(.system))")
        say("   the demo CA as the only root: \(await get(TrustPolicy(roots: .only([demoCA]))))")
        let wrong = try CertificatePin(host: "127.0.0.1", [otherKey])
        say("   pinned to another key: \(await get(TrustPolicy(roots: .only([demoCA]), pins: [wrong])))")
        let pinned = try CertificatePin(host: "127.0.0.1", [TLSIdentity.demoPin, otherKey])
        say("   pinned to its key, with a backup: \(await get(TrustPolicy(roots: .only([demoCA]), pins: [pinned])))\n")
    }
}
