import CourierTestServer
import Foundation
import Testing

/// `courier download`, `courier upload` and `courier post -F`, run as a user would.
extension CLITests {
    @Test func downloadWritesTheFileAndReportsProgressOnStderr() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-cli-dl-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("out.bin")
        let run = try await courier("download", "\(server.baseURL)/bytes/500000", "-o", file.path)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try Data(contentsOf: file) == Data((0..<500_000).map { UInt8($0 % 251) }))
        #expect(run.stderr.contains("saved \(file.path)"))
        #expect(run.stderr.contains("500000 B") || run.stderr.contains("488.3 KiB"), "a plain progress line when stderr is not a terminal: \(run.stderr)")
        let missing = try await courier("download", "\(server.baseURL)/status/404", "-o", folder.appendingPathComponent("x").path)
        #expect(missing.status == 4 && !FileManager.default.fileExists(atPath: folder.appendingPathComponent("x").path))
    }

    @Test func uploadAndMultipartPostStreamFiles() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("courier-cli-up-\(UUID().uuidString).txt")
        try Data("uploaded bytes".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let upload = try await courier("upload", "\(server.baseURL)/echo", file.path)
        #expect(upload.status == 0 && upload.stdout == "uploaded bytes", "\(upload.stderr)")
        #expect(server.recordedRequests.last?.method == "PUT")
        let post = try await courier("post", "\(server.baseURL)/echo", "-F", "name=Ada", "-F", "doc=@\(file.path)")
        #expect(post.status == 0, "\(post.stderr)")
        #expect(post.stdout.contains(#"name="doc"; filename="\#(file.lastPathComponent)""#) && post.stdout.contains("uploaded bytes"))
        let bad = try await courier("post", "\(server.baseURL)/echo", "-F", "doc=@/no/such/file")
        #expect(bad.status == 2)
    }
}
