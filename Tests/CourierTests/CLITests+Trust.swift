import CourierTestServer
import Foundation
import Testing

/// `--cacert`, `--pin`, `--cert`/`--key`, `-k` and `--http1.1`, against nginx over TLS with a CA made at
/// test time (issue 25).
extension CLITests {
    @Test(.enabled(if: TrustEndToEndTests.isRunnable, "nginx or openssl is not installed: run scripts/test, which installs them"))
    func trustOptionsSpelledAsCurlSpellsThem() async throws {
        try await NginxServer.withTLS(http2: true, serving: "hello over TLS\n") { nginx, pki in
            let url = "https://127.0.0.1:\(nginx.port)/hello.txt"

            let untrusted = try await courier("get", url)
            #expect(untrusted.status == 1 && untrusted.stderr.hasPrefix("courier: error: tls"), "\(untrusted.stderr)")
            let trusted = try await courier("get", "-i", "--cacert", pki.caCertificate, url)
            #expect(trusted.status == 0, "\(trusted.stderr)")
            #expect(trusted.stdout.hasPrefix("HTTP/2 200"), "the negotiated version on the status line: \(trusted.stdout)")
            #expect(trusted.stdout.hasSuffix("hello over TLS\n"))
            let one = try await courier("get", "-i", "--http1.1", "--cacert", pki.caCertificate, url)
            #expect(one.stdout.hasPrefix("HTTP/1.1 200"), "\(one.stdout)")

            let pinned = try await courier("get", "--cacert", pki.caCertificate, "--pin", pki.serverPin, url)
            #expect(pinned.status == 0, "\(pinned.stderr)")
            let wrong = "sha256/" + Data(repeating: 3, count: 32).base64EncodedString()
            let refused = try await courier("get", "--cacert", pki.caCertificate, "--pin", wrong, url)
            #expect(refused.status == 1 && refused.stderr.contains("certificate pinning failed for 127.0.0.1"), "\(refused.stderr)")
            #expect(refused.stderr.contains(pki.serverPin) && refused.stderr.contains(wrong))
            let backup = try await courier("get", "--cacert", pki.caCertificate, "--pin", wrong, "--pin", pki.serverPin, url)
            #expect(backup.status == 0, "\(backup.stderr)")
            let malformed = try await courier("get", "--pin", "md5/abc", url)
            #expect(malformed.status == 2 && malformed.stderr.contains("--pin"), "\(malformed.stderr)")

            let insecure = try await courier("get", "-k", url)
            #expect(insecure.status == 0, "\(insecure.stderr)")
            #expect(insecure.stderr.contains("warning: --insecure: the certificate of 127.0.0.1 is not verified"), "\(insecure.stderr)")
            #expect(try await courier("get", "--key", pki.clientKey, url).status == 2, "--key without --cert")
            #expect(try await courier("get", "--cert", pki.clientCertificate, url).status == 2, "a PEM --cert without --key")
        }
    }

    @Test(.enabled(if: TrustEndToEndTests.isRunnable, "nginx or openssl is not installed: run scripts/test, which installs them"))
    func aClientCertificateFromTheCommandLine() async throws {
        try await NginxServer.withTLS(clientCA: true, serving: "hello, client\n") { nginx, pki in
            let url = "https://127.0.0.1:\(nginx.port)/hello.txt"
            #expect(try await courier("get", "--cacert", pki.caCertificate, url).status == 4, "nginx answers 400 without one")
            let pem = try await courier("get", "--cacert", pki.caCertificate, "--cert", pki.clientCertificate, "--key", pki.clientKey, url)
            #expect(pem.status == 0 && pem.stdout == "hello, client\n", "\(pem.stderr)")
            let bundle = try await courier("get", "--cacert", pki.caCertificate, "--cert", pki.clientBundle, "--pass", TestPKI.bundlePassphrase, url)
            #expect(bundle.status == 0 && bundle.stdout == "hello, client\n", "\(bundle.stderr)")
            let badPass = try await courier("get", "--cacert", pki.caCertificate, "--cert", pki.clientBundle, "--pass", "not-the-passphrase", url)
            #expect(badPass.status == 1 && badPass.stderr.contains("invalidConfiguration"), "\(badPass.stderr)")
            #expect(!badPass.stderr.contains("not-the-passphrase"), "the passphrase is never printed")
        }
    }
}

extension CLITests {
    /// `--proxy` and `--noproxy`, curl's spelling, through the Python test proxy.
    @Test(.timeLimit(.minutes(1))) func aProxyFromTheCommandLine() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let proxy = try await TestProxy.start(.http(credentials: "cli-user:cli-proxy-pass"))
        defer { proxy.stop() }
        let through = try await courier("get", "--proxy", "http://cli-user:cli-proxy-pass@127.0.0.1:\(proxy.port)", server.url("/anything/p"))
        #expect(through.status == 0, "\(through.stderr)")
        #expect(proxy.log.count == 1 && proxy.log[0].hasPrefix("CONNECT 127.0.0.1:\(server.port) Basic "), "\(proxy.log)")
        #expect(server.recordedRequests.first?.header("proxy-authorization") == nil)
        let refused = try await courier("get", "--proxy", "127.0.0.1:\(proxy.port)", server.url("/anything/q"))
        #expect(refused.status == 1 && refused.stderr.contains("407"), "\(refused.stderr)")
        #expect(!refused.stderr.contains("cli-proxy-pass"))
        let bypassed = try await courier("get", "--proxy", "127.0.0.1:\(proxy.port)", "--noproxy", "127.0.0.1", server.url("/anything/r"))
        #expect(bypassed.status == 0 && proxy.log.count == 2, "\(bypassed.stderr) \(proxy.log)")
        #expect(try await courier("get", "--proxy", "ftp://127.0.0.1:1", server.url("/anything/s")).status == 2)
    }
}
