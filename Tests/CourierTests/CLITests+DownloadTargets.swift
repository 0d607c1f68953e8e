import CourierTestServer
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Issue 23 item 3: where `courier download` writes without `-o`: one entry of the current folder named
/// after the URL's last path segment, never a path the URL spells with escaped separators.
extension CLITests {
    /// Runs `courier` in `folder` (its current directory).
    func courier(in folder: URL, _ arguments: String...) async throws -> Run {
        let process = Process()
        process.executableURL = Self.binary
        process.arguments = arguments
        process.currentDirectoryURL = folder
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        async let stdout = out.fileHandleForReading.readAll()
        async let stderr = err.fileHandleForReading.readAll()
        let (o, e) = try await (stdout, stderr)
        await process.exited()
        return Run(status: process.terminationStatus, stdout: String(decoding: o, as: UTF8.self), stderr: String(decoding: e, as: UTF8.self))
    }

    /// Every file under `folder`, as paths relative to it.
    static func tree(_ folder: URL) -> [String] {
        (FileManager.default.subpaths(atPath: folder.path) ?? []).sorted()
    }

    // MARK: Item 3 (B5): the name taken from the URL

    @Test func downloadWithoutOutputNeverWritesOutsideTheCurrentFolder() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("courier-cli-dl-name-\(UUID().uuidString)")
        let folder = root.appendingPathComponent("a/b")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }

        // The report's URL: decoded, its last component was `../../escaped.bin`, written two folders up.
        let escaped = try await courier(in: folder, "download", "\(server.baseURL)/anything/x/..%2F..%2Fescaped.bin")
        #expect(escaped.status == 2, "\(escaped.stderr)")
        #expect(escaped.stderr.hasPrefix("courier: error: ") && escaped.stderr.contains("-o"), "\(escaped.stderr)")
        // Decoded separators, dot segments, NUL and control bytes, and names too long once suffixed.
        let long = String(repeating: "n", count: 230)
        for path in ["/anything/a%2Fb", "/anything/%2E%2E", "/anything/.", "/anything/x/%2e", "/anything/a%00b", "/anything/a%0Ab",
                     "/anything/%FF%FE", "/anything/\(long)"] {
            let refused = try await courier(in: folder, "download", server.baseURL + path)
            #expect(refused.status == 2, "\(path): \(refused.status) \(refused.stderr)")
        }
        #expect(Self.tree(root) == ["a", "a/b"], "nothing written anywhere")
        #expect(server.recordedRequests.isEmpty, "refused before anything was sent")

        // Ordinary names: the escapes decoded, in the current folder; `index.html` for a folder URL.
        let spaced = try await courier(in: folder, "download", "\(server.baseURL)/bytes/300?name=x")
        #expect(spaced.status == 0, "\(spaced.stderr)")
        let named = try await courier(in: folder, "download", "\(server.baseURL)/anything/my%20file.json")
        #expect(named.status == 0, "\(named.stderr)")
        let index = try await courier(in: folder, "download", "\(server.baseURL)/anything/")
        #expect(index.status == 0, "\(index.stderr)")
        #expect(Self.tree(root) == ["a", "a/b", "a/b/300", "a/b/index.html", "a/b/my file.json"])
        #expect(try Data(contentsOf: folder.appendingPathComponent("300")) == Self.served(300))
    }
}
