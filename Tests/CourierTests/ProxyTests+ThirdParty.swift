import CourierTestServer
import Foundation
import Testing
@testable import Courier

/// Issue 25's acceptance with proxies nobody here wrote: tinyproxy (HTTP `CONNECT`, Basic credentials)
/// and microsocks (SOCKS5), to the in-process https server (the demo's test-only CA) and to plain http.
@Suite("Proxies from Debian's packages", .serialized)
struct ThirdPartyProxyTests {
    static var isRunnable: Bool { ThirdPartyProxy.isAvailable || HTTPBin.isRequired }
    static let demoCA = TrustCertificate.pem(TLSIdentity.demoCertificateAuthorityPEM)

    func engine(_ server: TestServer, secure: Bool, _ proxy: ProxySettings) -> NetworkEngine {
        NetworkEngine(host: "127.0.0.1", port: server.port, isSecure: secure, configuration: .init {
            $0.proxy = proxy
            $0.trust = TrustPolicy(roots: .only([Self.demoCA]))
            $0.dataDirectory = nil
            $0.reachability = ManualReachability(.reachable(via: .wired))
        }, queue: NetworkQueue())
    }

    @Test(.enabled(if: isRunnable, "tinyproxy or microsocks is not installed: run scripts/test, which installs them"), .timeLimit(.minutes(1)))
    func tinyproxyTunnelsHTTPSWithBasicCredentials() async throws {
        try #require(ThirdPartyProxy.isAvailable, "COURIER_REQUIRE_INTEROP=1 but tinyproxy or microsocks is missing")
        let server = try await TestServer.start(tls: .demo)
        defer { Task { try? await server.shutdown() } }
        let proxy = try await ThirdPartyProxy.start(.tinyproxy(user: "proxy-user", password: "proxy-secret-9"))
        defer { proxy.stop() }
        let credentials = PasswordCredentials(user: "proxy-user", password: "proxy-secret-9")
        let through = engine(server, secure: true, .all(.http(host: "127.0.0.1", port: proxy.port, credentials: credentials)))
        let response = try await through.send(through.operation(path: "/anything/tunnelled"))
        #expect(response.statusCode == 200)
        #expect(proxy.log.contains("CONNECT 127.0.0.1:\(server.port)"), "tinyproxy's log: \(proxy.log)")
        #expect(server.recordedRequests.allSatisfy { $0.header("proxy-authorization") == nil }, "the origin never sees the proxy's credentials")
        let refused = await failure(of: engine(server, secure: true, .all(.http(host: "127.0.0.1", port: proxy.port))).operation(path: "/anything/refused"))
        #expect(refused?.code == .cannotConnect && refused?.message.contains("407") == true, "\(String(describing: refused))")
        #expect(server.requestCount(path: "/anything/refused") == 0)
    }

    @Test(.enabled(if: isRunnable, "tinyproxy or microsocks is not installed: run scripts/test, which installs them"), .timeLimit(.minutes(1)))
    func microsocksCarriesHTTPAndHTTPS() async throws {
        try #require(ThirdPartyProxy.isAvailable, "COURIER_REQUIRE_INTEROP=1 but tinyproxy or microsocks is missing")
        let plain = try await TestServer.start()
        let secure = try await TestServer.start(tls: .demo)
        defer { Task { try? await plain.shutdown(); try? await secure.shutdown() } }
        let proxy = try await ThirdPartyProxy.start(.microsocks)
        defer { proxy.stop() }
        let settings = ProxySettings.all(.socks5(host: "127.0.0.1", port: proxy.port))
        let http = engine(plain, secure: false, settings)
        #expect(try await http.send(http.operation(path: "/anything/socks")).statusCode == 200)
        let https = engine(secure, secure: true, settings)
        #expect(try await https.send(https.operation(path: "/anything/socks")).statusCode == 200)
        #expect(plain.requestCount(path: "/anything/socks") == 1 && secure.requestCount(path: "/anything/socks") == 1)
        // Proof the requests went through microsocks: once it is gone, the same engine cannot connect.
        proxy.stop()
        let after = await failure(of: http.operation(path: "/anything/after"))
        #expect(after?.code == .cannotConnect || after?.code == .connectionLost, "\(String(describing: after))")
        #expect(plain.requestCount(path: "/anything/after") == 0)
    }
}
