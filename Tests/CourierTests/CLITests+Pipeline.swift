import CourierTestServer
import Foundation
import Testing
@testable import courier

/// Issue 11 item 6: `--auth`, `--auth-type digest`, `--bearer`, `--retry` and `--cookie-jar`.
extension CLITests {
    @Test func authBearerAndURLCredentialsReachOnlyTheirOrigin() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let basic = try await courier("get", server.url("/basic-auth/ada/s3cret"), "--auth", "ada:s3cret")
        #expect(basic.status == 0, "\(basic.stderr)")
        let wrong = try await courier("get", server.url("/basic-auth/ada/s3cret"), "--auth", "ada:nope")
        #expect(wrong.status == 4)
        let inURL = try await courier("get", "http://ada:s3cret@127.0.0.1:\(server.port)/basic-auth/ada/s3cret")
        #expect(inURL.status == 0, "credentials in the URL are sent with Basic: \(inURL.stderr)")
        let bearer = try await courier("get", server.url("/bearer/t0k"), "--bearer", "t0k")
        #expect(bearer.status == 0, "\(bearer.stderr)")
        #expect(try await courier("get", server.url("/get"), "--auth", "no-colon").status == 2)
        #expect(try await courier("get", server.url("/get"), "--bearer", "two words").status == 2)
        #expect(try await courier("get", server.url("/get"), "--retry", "-1").status == 2)

        // Across a redirect to another origin nothing is sent.
        let other = try await TestServer.start()
        defer { Task { try? await other.shutdown() } }
        let target = other.url("/headers").addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        let redirected = try await courier("get", server.url("/redirect-to") + "?url=\(target)", "--bearer", "t0k", "--auth", "ada:s3cret")
        #expect(redirected.status == 0, "\(redirected.stderr)")
        #expect(!redirected.stdout.contains("t0k") && !redirected.stdout.contains("Authorization"), "\(redirected.stdout)")
    }

    @Test func retryRidesOutFailuresAndGivesUpWithTheLastAnswer() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let headers = Data("Retry-After: 0".utf8).base64EncodedString()
        let run = try await courier(
            "get", server.url("/respond/down"), "--retry", "2", "-H", "X-Respond-Status: 503", "-H", "X-Respond-Headers: \(headers)")
        #expect(run.status == 5, "the last answer is printed and sets the exit status: \(run.stderr)")
        #expect(server.requestCount(path: "/respond/down") == 3, "one attempt and two retries")
        let once = try await courier("get", server.url("/respond/once"), "-H", "X-Respond-Status: 503")
        #expect(once.status == 5)
        #expect(server.requestCount(path: "/respond/once") == 1, "no retries unless asked")
    }

    @Test(.enabled(if: HTTPBin.isAvailable, "HTTPBIN_URL is not set: run scripts/test to start httpbin"))
    func digestAndACookieJarAgainstHTTPBin() async throws {
        let base = try #require(HTTPBin.url)
        let digest = try await courier("get", base + "/digest-auth/auth/u/p/SHA-256", "--auth", "u:p", "--auth-type", "digest")
        #expect(digest.status == 0 && digest.stdout.contains("\"authenticated\": true"), "\(digest.stderr)")
        let refused = try await courier("get", base + "/digest-auth/auth/u/p/MD5", "--auth", "u:x", "--auth-type", "digest")
        #expect(refused.status == 1 && refused.stderr.contains("authenticationFailed"), "\(refused.stderr)")

        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-cli-jar-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let jar = folder.appendingPathComponent("jar.sqlite").path
        let set = try await courier("get", base + "/cookies/set?a=1", "--cookie-jar", jar)
        #expect(set.status == 0 && set.stdout.contains("\"a\": \"1\""), "\(set.stdout) \(set.stderr)")
        // A second process reads the file: the cookie is sent again.
        let again = try await courier("get", base + "/cookies", "--cookie-jar", jar)
        #expect(again.stdout.contains("\"a\": \"1\""), "\(again.stdout) \(again.stderr)")
        let mode = try FileManager.default.attributesOfItem(atPath: jar)[.posixPermissions] as? NSNumber
        #expect(mode?.intValue == 0o600)
        #expect(!(try Data(contentsOf: URL(fileURLWithPath: jar))).isEmpty)
    }
}
