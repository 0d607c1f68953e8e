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

    @Test func getWithOutputStreamsABodyLargerThanMemoryAllowsToTheFile() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-cli-get-o-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // More than maximumResponseBodySize (64 MiB): held in memory, it would fail with bodyTooLarge.
        let size = 64 * 1024 * 1024 + 300_000
        let file = folder.appendingPathComponent("big.bin")
        let run = try await courier("get", "-i", "-o", file.path, "\(server.baseURL)/bytes/\(size)")
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.hasPrefix("HTTP/1.1 200 OK\n") && run.stdout.lowercased().contains("content-length: \(size)\n"), "-i still prints the head")
        let handle = try FileHandle(forReadingFrom: file)
        defer { try? handle.close() }
        // The server's bytes are `i % 251`: each chunk is compared with the pattern at its offset.
        let pattern = Data((0..<((4 << 20) + 251)).map { UInt8($0 % 251) })
        var offset = 0
        var intact = true
        while let chunk = try handle.read(upToCount: 4 << 20), !chunk.isEmpty {
            let start = offset % 251
            intact = intact && chunk == pattern[start..<(start + chunk.count)]
            offset += chunk.count
        }
        #expect(offset == size && intact, "every byte, in order")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["big.bin"], "no partial file left beside it")

        // Exit codes still follow the status, and an error page is saved like any body.
        let missing = folder.appendingPathComponent("missing.txt")
        let notFound = try await courier("get", "-o", missing.path, "\(server.baseURL)/status/404")
        #expect(notFound.status == 4)
        #expect(try String(contentsOf: missing, encoding: .utf8) == "status 404")
        // Decoded as before: the file holds what `get` without -o prints.
        let gzipped = folder.appendingPathComponent("gzip.json")
        #expect(try await courier("get", "-o", gzipped.path, "\(server.baseURL)/gzip").status == 0)
        let printed = try await courier("get", "--raw", "\(server.baseURL)/gzip")
        #expect(try String(contentsOf: gzipped, encoding: .utf8) == printed.stdout && !printed.stdout.isEmpty)
        let empty = folder.appendingPathComponent("empty")
        #expect(try await courier("get", "-o", empty.path, "\(server.baseURL)/status/204").status == 0)
        #expect(try Data(contentsOf: empty).isEmpty, "no body is an empty file, as before")
        let nowhere = try await courier("get", "-o", folder.appendingPathComponent("no/such/folder/x").path, "\(server.baseURL)/bytes/10")
        #expect(nowhere.status == 1 && nowhere.stderr.contains("fileUnavailable"), "\(nowhere.stderr)")
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
