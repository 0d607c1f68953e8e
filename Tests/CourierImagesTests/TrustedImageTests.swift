@testable import CourierImages
import Courier
import CourierTestServer
import Foundation
import Testing

/// Issue 25: an image fetched through an engine goes through that engine's trust policy.
@Suite("Images under a trust policy")
struct TrustedImageTests {
    @Test func anImageFromAPinnedServerLoadsOnlyUnderThePolicy() async throws {
        let server = try await TestServer.start(tls: .demo)
        defer { Task { try? await server.shutdown() } }
        server.serve([UInt8](try Fixtures.data("rgb.png")), at: "/img/rgb.png", contentType: "image/png")
        let demoCA = TrustCertificate.pem(TLSIdentity.demoCertificateAuthorityPEM)
        let pinned = NetworkEngine(host: "127.0.0.1", port: server.port, isSecure: true, configuration: try .init {
            $0.dataDirectory = nil
            $0.trust = TrustPolicy(roots: .only([demoCA]), pins: [try CertificatePin(host: "127.0.0.1", [TLSIdentity.demoPin])])
        })
        let image = try await pinned.image(url: server.url("/img/rgb.png"), pipeline: ImagePipeline())
        #expect(image.width > 0)
        let system = NetworkEngine(host: "127.0.0.1", port: server.port, isSecure: true, configuration: .init { $0.dataDirectory = nil })
        do {
            _ = try await system.image(url: server.url("/img/rgb.png"), pipeline: ImagePipeline())
            Issue.record("an image from an untrusted server loaded")
        } catch {
            #expect(error.code == .tls, "\(error)")
        }
        #expect(server.requestCount == 1, "only the pinned engine's request reached the server")
    }
}
