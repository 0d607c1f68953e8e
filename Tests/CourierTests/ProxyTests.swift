import CourierTestServer
import Foundation
import Testing
@testable import Courier

/// Proxies (issue 25): the settings as values, then requests through an HTTP `CONNECT` proxy (with and
/// without Basic credentials) and a SOCKS5 proxy, both a few lines of Python on 127.0.0.1.
@Suite("Proxies")
struct ProxyTests {
    @Test func proxyURLsAreReadAsCurlReadsThem() {
        let withCredentials = Proxy(url: "http://al%40ice:s3cr%3At@proxy.example:3128")
        #expect(withCredentials?.host == "proxy.example" && withCredentials?.port == 3128)
        #expect(withCredentials?.kind == .http(PasswordCredentials(user: "al@ice", password: "s3cr:t")))
        #expect(withCredentials?.description == "http://al@ice:***@proxy.example:3128", "the password is never shown")
        #expect(Proxy(url: "proxy.example:8080") == .http(host: "proxy.example", port: 8080))
        #expect(Proxy(url: "http://proxy.example")?.port == 1080, "curl's default port")
        #expect(Proxy(url: "socks5://127.0.0.1:9050") == .socks5(host: "127.0.0.1", port: 9050))
        #expect(Proxy(url: "socks5h://tor.local") == .socks5(host: "tor.local"))
        for bad in ["https://proxy.example:443", "socks4://proxy.example", "http://:8080", "http://proxy.example:0", "http://proxy.example:70000", ""] {
            #expect(Proxy(url: bad) == nil, "\(bad)")
        }
    }

    @Test func theEnvironmentIsReadAsCurlReadsIt() {
        let settings = ProxySettings.fromEnvironment([
            "HTTP_PROXY": "http://from-a-cgi-header:1", "http_proxy": "http://plain:3128", "HTTPS_PROXY": "http://secure:3129",
            "NO_PROXY": "localhost, .internal.example,10.0.0.1",
        ])
        #expect(settings.http == .http(host: "plain", port: 3128), "uppercase HTTP_PROXY is not read (a CGI program's Proxy: header)")
        #expect(settings.https == .http(host: "secure", port: 3129))
        #expect(settings.noProxy == ["localhost", ".internal.example", "10.0.0.1"])
        #expect(settings.proxy(for: URL(string: "http://api.example.com/x")!) == .http(host: "plain", port: 3128))
        #expect(settings.proxy(for: URL(string: "https://api.example.com/x")!) == .http(host: "secure", port: 3129))
        #expect(settings.proxy(for: URL(string: "https://LOCALHOST:8443/x")!) == nil)
        #expect(settings.proxy(for: URL(string: "https://git.internal.example/x")!) == nil)
        #expect(settings.proxy(for: URL(string: "https://internal.example/x")!) == nil)
        #expect(settings.proxy(for: URL(string: "https://notinternal.example/x")!) != nil)
        #expect(settings.proxy(for: URL(string: "http://10.0.0.1/x")!) == nil)
        let all = ProxySettings.fromEnvironment(["all_proxy": "socks5://127.0.0.1:1080", "no_proxy": "*"])
        #expect(all.http == .socks5(host: "127.0.0.1") && all.https == .socks5(host: "127.0.0.1"))
        #expect(all.proxy(for: URL(string: "https://anything.example/")!) == nil, "* reaches every host directly")
        #expect(ProxySettings.fromEnvironment(["https_proxy": "not a url at all"]) == .none)
        #expect(ProxySettings.fromEnvironment([:]) == .none)
    }

    func engine(_ server: TestServer, _ proxy: ProxySettings, directory: URL? = nil) -> NetworkEngine {
        NetworkEngine(host: "127.0.0.1", port: server.port, isSecure: false, configuration: .init {
            $0.proxy = proxy
            $0.dataDirectory = directory
            $0.reachability = ManualReachability(.reachable(via: .wired))
        }, queue: NetworkQueue())
    }

    @Test(.timeLimit(.minutes(1))) func anHTTPProxyCarriesEveryRequestAndItsCredentialsGoToItAlone() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let proxy = try await TestProxy.start(.http(credentials: "proxy-user:proxy-secret-9"))
        defer { proxy.stop() }
        let credentials = PasswordCredentials(user: "proxy-user", password: "proxy-secret-9")
        let through = engine(server, .all(.http(host: "127.0.0.1", port: proxy.port, credentials: credentials)))
        let response = try await through.send(through.operation(path: "/anything/one"))
        #expect(response.statusCode == 200)
        let expected = "Basic " + Data("proxy-user:proxy-secret-9".utf8).base64EncodedString()
        #expect(proxy.log == ["CONNECT 127.0.0.1:\(server.port) \(expected)"], "\(proxy.log)")
        #expect(server.recordedRequests.allSatisfy { $0.header("proxy-authorization") == nil }, "the origin never sees the proxy's credentials")
        // Without credentials the proxy answers 407: a connection error, not the origin's answer.
        let refused = await failure(of: engine(server, .all(.http(host: "127.0.0.1", port: proxy.port))).operation(path: "/anything/two"))
        #expect(refused?.code == .cannotConnect && refused?.message.contains("407") == true, "\(String(describing: refused))")
        #expect(server.recordedRequests.count == 1)
        // A host in noProxy is reached directly.
        let direct = engine(server, .all(.http(host: "127.0.0.1", port: proxy.port, credentials: credentials), except: ["127.0.0.1"]))
        #expect(try await direct.send(direct.operation(path: "/anything/three")).statusCode == 200)
        #expect(proxy.log.count == 2 && server.recordedRequests.count == 2)
    }

    @Test(.timeLimit(.minutes(1))) func aSOCKS5ProxyCarriesRequests() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let proxy = try await TestProxy.start(.socks5)
        defer { proxy.stop() }
        let through = engine(server, .all(.socks5(host: "127.0.0.1", port: proxy.port)))
        #expect(try await through.send(through.operation(path: "/anything/socks")).statusCode == 200)
        #expect(proxy.log == ["SOCKS 127.0.0.1:\(server.port)"], "\(proxy.log)")
    }

    @Test(.timeLimit(.minutes(1))) func aFrozenRequestKeepsNothingOfTheProxy() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-proxy-outbox-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let port = try await TestServer.vacantPort()
        let proxy = try await TestProxy.start(.http(credentials: "proxy-user:proxy-secret-9"))
        defer { proxy.stop() }
        let credentials = PasswordCredentials(user: "proxy-user", password: "proxy-secret-9")
        let engine = NetworkEngine(host: "127.0.0.1", port: port, isSecure: false, configuration: .init {
            $0.proxy = .all(.http(host: "127.0.0.1", port: proxy.port, credentials: credentials))
            $0.dataDirectory = directory
            $0.replaysOutbox = false
            $0.reachability = ManualReachability(.reachable(via: .wired))   // no system monitor outlives the test
        }, queue: NetworkQueue())
        let operation = engine.operation(path: "/anything/frozen", method: .post, body: .json(["n": 1]))
        operation.isFreezable = true
        engine.enqueue(operation)
        #expect(await eventually { operation.state == .frozen })
        #expect(!proxy.log.isEmpty, "it went to the proxy, which could not reach the host: \(proxy.log)")
        #expect(secretsFound(["proxy-secret-9", Data("proxy-user:proxy-secret-9".utf8).base64EncodedString()], under: directory) == [])
        operation.cancel()   // the explicit drop: the frozen request leaves the outbox
    }
}
