import CourierTestServer
import Foundation
import Testing

/// `-v/--verbose`: request and response heads on stderr, credentials masked.
extension CLITests {
    @Test func verbosePrintsEveryHopsHeadsWithCredentialsMasked() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let run = try await courier(
            "get", "-v", server.url("/redirect/1") + "?page=2&api_key=query-SECRET",
            "-H", "Authorization: Bearer token-SECRET", "-H", "Cookie: session=cookie-SECRET")
        #expect(run.status == 0, "\(run.stderr)")
        #expect(!run.stderr.contains("SECRET"), "\(run.stderr)")
        #expect(run.stderr.contains("> GET \(server.url("/redirect/1"))?page=2&api_key=***\n"), "\(run.stderr)")
        #expect(run.stderr.contains("> Authorization: Bearer ***\n"))
        #expect(run.stderr.contains("> Cookie: session=***\n"))
        #expect(run.stderr.contains("< 302 Found\n"))
        #expect(run.stderr.contains("* following the redirect to \(server.url("/get"))"))
        #expect(run.stderr.contains("< 200 OK\n"))
        let request = try #require(run.stderr.range(of: "> GET"))
        let response = try #require(run.stderr.range(of: "< 200 OK"))
        #expect(request.lowerBound < response.lowerBound)
        #expect(run.stdout.contains("\"url\""), "the body still goes to stdout: \(run.stdout)")
        let quiet = try await courier("get", server.url("/json"))
        #expect(!quiet.stderr.contains("> GET"))
    }

    @Test func verboseWorksForPostAndDownload() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let post = try await courier("post", "--verbose", server.url("/anything"), "-d", "password=form-SECRET")
        #expect(post.status == 0)
        #expect(post.stderr.contains("> POST \(server.url("/anything"))\n") && post.stderr.contains("< 200 OK\n"), "\(post.stderr)")
        #expect(!post.stderr.contains("SECRET"), "bodies are never printed")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-cli-v-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let download = try await courier("download", "-v", "\(server.baseURL)/bytes/1000", "-o", folder.appendingPathComponent("b").path)
        #expect(download.status == 0)
        #expect(download.stderr.contains("> GET \(server.baseURL)/bytes/1000\n") && download.stderr.contains("< 200 OK\n"), "\(download.stderr)")
    }
}
