import Foundation
import HTTPTypes
import Testing
@testable import Courier

/// Issue 25's acceptance for trust: nginx over TLS with a CA, server and client certificates made by
/// openssl at test time. Every case runs through both transports: async-http-client's pool, and the
/// connection of its own a request gets when it listens for interim responses.
@Suite("Trust end to end (nginx, a test CA)", .serialized)
struct TrustEndToEndTests {
    static var isRunnable: Bool { (NginxServer.isAvailable && TestPKI.openssl != nil) || HTTPBin.isRequired }

    enum Path: String, CaseIterable { case pooled, interim }

    /// Runs `body` against nginx serving `hello.txt` over TLS with the test PKI's server certificate.
    func withNginx(clientCA: Bool = false, http2: Bool = false, _ body: (NginxServer, TestPKI) async throws -> Void) async throws {
        try await NginxServer.withTLS(clientCA: clientCA, http2: http2, serving: "hello over TLS\n", body)
    }

    func get(
        _ nginx: NginxServer, _ trust: TrustPolicy, _ path: Path, versions: HTTPVersions = .automatic
    ) async -> Result<NetworkResponse, NetworkError> {
        let engine = NetworkEngine(host: "127.0.0.1", port: nginx.port, isSecure: true, configuration: .init {
            $0.trust = trust
            $0.httpVersions = versions
            $0.dataDirectory = nil
                $0.reachability = ManualReachability(.reachable(via: .wired))   // no system monitor held across the suite
        }, queue: NetworkQueue())
        let operation = engine.operation(path: "/hello.txt")
        if path == .interim { _ = operation.onInformationalResponse { _ in } }
        do { return .success(try await operation.response()) } catch { return .failure(error) }
    }

    @Test(.enabled(if: isRunnable, "nginx or openssl is not installed: run scripts/test, which installs them"), arguments: Path.allCases)
    func rootsDecideWhichServersAreTrusted(_ path: Path) async throws {
        try await withNginx { nginx, pki in
            guard case .failure(let untrusted) = await get(nginx, .system, path) else { Issue.record("a test CA was trusted by the system"); return }
            #expect(untrusted.code == .tls, "\(untrusted)")
            let added = await get(nginx, TrustPolicy(roots: .systemAnd([.file(pki.caCertificate)])), path)
            #expect((try? added.get().body) == Data("hello over TLS\n".utf8), "\(added)")
            let only = await get(nginx, TrustPolicy(roots: .only([.pem(try Data(contentsOf: URL(fileURLWithPath: pki.caCertificate)))])), path)
            #expect((try? only.get().statusCode) == 200, "\(only)")
            guard case .failure(let other) = await get(nginx, TrustPolicy(roots: .only([.file(pki.otherCACertificate)])), path) else {
                Issue.record("a server whose chain leads to another CA was trusted"); return
            }
            #expect(other.code == .tls)
            let insecure = await get(nginx, TrustPolicy.system.insecurelyTrusting(hosts: ["127.0.0.1"]), path)
            #expect((try? insecure.get().statusCode) == 200, "the named development host is not verified: \(insecure)")
            guard case .failure(let notNamed) = await get(nginx, TrustPolicy.system.insecurelyTrusting(hosts: ["localhost"]), path) else {
                Issue.record("a host that was not named went unverified"); return
            }
            #expect(notNamed.code == .tls)
        }
    }

    @Test(.enabled(if: isRunnable, "nginx or openssl is not installed: run scripts/test, which installs them"), arguments: Path.allCases)
    func pinsAreCheckedOnTheConnectionThatCarriesTheRequest(_ path: Path) async throws {
        try await withNginx { nginx, pki in
            let roots = TrustPolicy.Roots.systemAnd([.file(pki.caCertificate)])
            let wrong = "sha256/" + Data(repeating: 7, count: 32).base64EncodedString()
            let pinned = await get(nginx, TrustPolicy(roots: roots, pins: [try CertificatePin(host: "127.0.0.1", [pki.serverPin])]), path)
            #expect((try? pinned.get().statusCode) == 200, "\(pinned)")
            let backup = await get(nginx, TrustPolicy(roots: roots, pins: [try CertificatePin(host: "127.0.0.1", [wrong, pki.serverPin])]), path)
            #expect((try? backup.get().statusCode) == 200, "a backup pin: \(backup)")
            let before = nginx.accessLog.count
            guard case .failure(let refused) = await get(nginx, TrustPolicy(roots: roots, pins: [try CertificatePin(host: "127.0.0.1", [wrong])]), path) else {
                Issue.record("a wrong pin was accepted"); return
            }
            #expect(refused.code == .tls)
            #expect(refused.message.contains("certificate pinning failed for 127.0.0.1"), "\(refused.message)")
            #expect(refused.message.contains(pki.serverPin), "names the key the server showed: \(refused.message)")
            #expect(refused.message.contains(wrong), "names the pins: \(refused.message)")
            #expect(nginx.accessLog.count == before, "nothing was sent to a server whose key is not pinned")
            // A pin for other hosts does not apply here.
            let elsewhere = await get(nginx, TrustPolicy(roots: roots, pins: [try CertificatePin(host: "*.example.com", [wrong])]), path)
            #expect((try? elsewhere.get().statusCode) == 200, "\(elsewhere)")
        }
    }

    @Test(.enabled(if: isRunnable, "nginx or openssl is not installed: run scripts/test, which installs them"), arguments: Path.allCases)
    func aServerThatAsksForAClientCertificateGetsOne(_ path: Path) async throws {
        try await withNginx(clientCA: true) { nginx, pki in
            let roots = TrustPolicy.Roots.systemAnd([.file(pki.caCertificate)])
            guard case .failure(let without) = await get(nginx, TrustPolicy(roots: roots), path) else {
                Issue.record("nginx answered without a client certificate"); return
            }
            #expect(without.code == .unacceptableStatus && without.response?.statusCode == 400, "nginx answers 400: \(without)")
            let pem = await get(nginx, TrustPolicy(roots: roots, clientIdentity: .pem(certificateChain: pki.clientCertificate, privateKey: pki.clientKey)), path)
            #expect((try? pem.get().statusCode) == 200, "\(pem)")
            let bundle = await get(nginx, TrustPolicy(roots: roots, clientIdentity: .pkcs12(pki.clientBundle, passphrase: TestPKI.bundlePassphrase)), path)
            #expect((try? bundle.get().statusCode) == 200, "\(bundle)")
            guard case .failure(let badPassphrase) = await get(nginx, TrustPolicy(roots: roots, clientIdentity: .pkcs12(pki.clientBundle, passphrase: "wrong")), path)
            else { Issue.record("a bundle opened with the wrong passphrase"); return }
            #expect(badPassphrase.code == .invalidConfiguration, "\(badPassphrase)")
            // The certificate goes to the engine's host only: the same server named otherwise does not get it.
            let identity = ClientIdentity.pem(certificateChain: pki.clientCertificate, privateKey: pki.clientKey)
            let engine = NetworkEngine(host: "127.0.0.1", port: nginx.port, configuration: .init {
                $0.trust = TrustPolicy(roots: roots, clientIdentity: identity)
                $0.dataDirectory = nil
                $0.reachability = ManualReachability(.reachable(via: .wired))   // no system monitor held across the suite
            }, queue: NetworkQueue())
            let elsewhere = engine.operation(url: "https://localhost:\(nginx.port)/hello.txt")
            if path == .interim { _ = elsewhere.onInformationalResponse { _ in } }
            #expect(await failure(of: elsewhere)?.response?.statusCode == 400, "not presented to another host")
            var both = TrustPolicy(roots: roots, clientIdentity: identity)
            both.identityHosts = ["127.0.0.1", "localhost"]
            let named = NetworkEngine(host: "127.0.0.1", port: nginx.port, configuration: .init {
                $0.trust = both
                $0.dataDirectory = nil
                $0.reachability = ManualReachability(.reachable(via: .wired))   // no system monitor held across the suite
            }, queue: NetworkQueue())
            let allowed = named.operation(url: "https://localhost:\(nginx.port)/hello.txt")
            if path == .interim { _ = allowed.onInformationalResponse { _ in } }
            let allowedStatus = try? await allowed.response().statusCode
            #expect(allowedStatus == 200, "a host the policy names gets it")
        }
    }

    @Test(.enabled(if: isRunnable, "nginx or openssl is not installed: run scripts/test, which installs them"))
    func http2IsNegotiatedByALPNUnlessHTTP1IsForcedAndPinsHoldOnIt() async throws {
        try await withNginx(http2: true) { nginx, pki in
            let trust = TrustPolicy(roots: .systemAnd([.file(pki.caCertificate)]), pins: [try CertificatePin(host: "127.0.0.1", [pki.serverPin])])
            let two = await get(nginx, trust, .pooled)
            #expect((try? two.get().version) == .http2, "\(two)")
            #expect(nginx.accessLog.last?[7] == "HTTP/2.0")
            let one = await get(nginx, trust, .pooled, versions: .http1Only)
            #expect((try? one.get().version) == .http1_1, "\(one)")
            #expect(nginx.accessLog.last?[7] == "HTTP/1.1")
            let wrong = TrustPolicy(roots: .systemAnd([.file(pki.caCertificate)]),
                                    pins: [try CertificatePin(host: "127.0.0.1", ["sha256/" + Data(repeating: 9, count: 32).base64EncodedString()])])
            let before = nginx.accessLog.count
            #expect((await get(nginx, wrong, .pooled)).failureCode == .tls, "an HTTP/2 connection is pinned too")
            #expect(nginx.accessLog.count == before)
            #expect((try? await get(nginx, trust, .interim).get().version) == .http1_1, "the interim-response connection speaks HTTP/1.1")
        }
    }

    @Test(.enabled(if: isRunnable, "nginx or openssl is not installed: run scripts/test, which installs them"))
    func aHundredConcurrentGETsShareOneHTTP2Connection() async throws {
        try await withNginx(http2: true) { nginx, pki in
            let engine = NetworkEngine(host: "127.0.0.1", port: nginx.port, configuration: .init {
                $0.trust = TrustPolicy(roots: .systemAnd([.file(pki.caCertificate)]))
                $0.dataDirectory = nil
                $0.reachability = ManualReachability(.reachable(via: .wired))   // no system monitor held across the suite
            }, queue: NetworkQueue(maximumConcurrentOperations: 6))
            // One request first: the pool learns the server speaks HTTP/2 (before that, concurrent requests
            // could each start a connection while the first handshake is under way).
            _ = try await engine.operation(path: "/hello.txt").response()
            // Distinct URLs: no coalescing; the queue runs 6 at a time, as 6 streams of one connection.
            let operations = (0..<100).map { engine.operation(url: "https://127.0.0.1:\(nginx.port)/hello.txt?n=\($0)") }
            for operation in operations { engine.enqueue(operation) }
            var versions: [NetworkResponse.ProtocolVersion?] = []
            for operation in operations { versions.append(try? await operation.response().version) }
            #expect(versions.allSatisfy { $0 == .http2 }, "\(Set(versions.map { "\(String(describing: $0))" }))")
            let lines = nginx.accessLog.filter { $0.count > 8 && $0[1].hasPrefix("/hello.txt?n=") }
            #expect(lines.count == 100)
            #expect(Set(lines.map { $0[8] }).count == 1, "one connection carried them all: \(Set(lines.map { $0[8] }))")
        }
    }

    @Test(.enabled(if: isRunnable, "nginx or openssl is not installed: run scripts/test, which installs them"))
    func downloadsToFilesHonourThePinsToo() async throws {
        try await withNginx { nginx, pki in
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-pinned-download-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            func engine(_ pin: String) throws -> NetworkEngine {
                NetworkEngine(host: "127.0.0.1", port: nginx.port, configuration: try .init {
                    $0.trust = TrustPolicy(roots: .systemAnd([.file(pki.caCertificate)]), pins: [try CertificatePin(host: "127.0.0.1", [pin])])
                    $0.dataDirectory = nil
                $0.reachability = ManualReachability(.reachable(via: .wired))   // no system monitor held across the suite
                }, queue: NetworkQueue())
            }
            let refusedFile = folder.appendingPathComponent("refused.txt")
            let wrong = try engine("sha256/" + Data(repeating: 5, count: 32).base64EncodedString())
            let refused = await failure(of: wrong.operation(path: "/hello.txt").download(to: refusedFile, resumable: true))
            #expect(refused?.code == .tls, "\(String(describing: refused))")
            #expect(!FileManager.default.fileExists(atPath: refusedFile.path))
            let savedFile = folder.appendingPathComponent("saved.txt")
            let right = try engine(pki.serverPin)
            _ = try await right.operation(path: "/hello.txt").download(to: savedFile).response()
            #expect(try Data(contentsOf: savedFile) == Data("hello over TLS\n".utf8))
        }
    }
}

extension Result where Failure == NetworkError {
    /// The error's code, or `nil` for a success.
    var failureCode: NetworkError.Code? {
        if case .failure(let error) = self { return error.code }
        return nil
    }
}
