import CourierTestServer
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Issue 23 items 3 and 4: where `courier download` writes. Without `-o`, one entry of the current folder
/// named after the URL's last path segment, never a path the server's URL spells with escaped separators;
/// with `-o`, the targets of `get -o` (a named pipe or `/dev/null` written in place, never replaced).
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

    /// A link planted in the current folder under the URL's name (a shared folder) is not followed out of
    /// it, and a named pipe under that name is not written into: both are refused, nothing is written.
    @Test(.timeLimit(.minutes(1))) func downloadWithoutOutputFollowsNoLinkOutOfTheCurrentFolder() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("courier-cli-dl-link-\(UUID().uuidString)")
        let folder = root.appendingPathComponent("shared")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let outside = root.appendingPathComponent("precious.txt")
        try Data("keep".utf8).write(to: outside)
        try FileManager.default.createSymbolicLink(atPath: folder.appendingPathComponent("report.json").path, withDestinationPath: outside.path)
        try #require(mkfifo(folder.appendingPathComponent("pipe.json").path, 0o600) == 0)
        for name in ["report.json", "pipe.json"] {
            let refused = try await courier(in: folder, "download", "\(server.baseURL)/anything/\(name)")
            #expect(refused.status == 2 && refused.stderr.contains("-o"), "\(name): \(refused.status) \(refused.stderr)")
        }
        #expect(try Data(contentsOf: outside) == Data("keep".utf8), "the file the link points to is untouched")
        #expect(Self.fileType(folder.appendingPathComponent("report.json").path) == S_IFLNK)
        #expect(Self.fileType(folder.appendingPathComponent("pipe.json").path) == S_IFIFO)
        #expect(Self.tree(root) == ["precious.txt", "shared", "shared/pipe.json", "shared/report.json"])
    }

    // MARK: Item 4 (B6): `download -o` to what is not a regular file

    @Test(.timeLimit(.minutes(1))) func downloadToANamedPipeOrDevNullWritesInPlace() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-cli-dl-special-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }

        // A link to /dev/null first, in a folder of our own: a build that renamed over it would replace the
        // link, not /dev/null itself (this test may run as root).
        let link = folder.appendingPathComponent("null-link")
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: "/dev/null")
        let throughLink = try await courier("download", "\(server.baseURL)/bytes/200000", "-o", link.path)
        #expect(throughLink.status == 0, "\(throughLink.stderr)")
        try #require(Self.fileType(link.path) == S_IFLNK, "the link is still a link, so /dev/null is safe to try")
        #expect(Self.tree(folder) == ["null-link"], "no partial file beside it")

        let null = try await courier("download", "\(server.baseURL)/bytes/300000", "-o", "/dev/null")
        #expect(null.status == 0, "\(null.stderr)")
        #expect(Self.fileType("/dev/null") == S_IFCHR, "/dev/null is still a character device")
        #expect(!FileManager.default.fileExists(atPath: "/dev/.null.courier-partial"))

        // A named pipe read by another process: the whole body reaches it, and it stays a pipe.
        let fifo = folder.appendingPathComponent("pipe")
        try #require(mkfifo(fifo.path, 0o600) == 0)
        let reader = Process()
        reader.executableURL = URL(fileURLWithPath: "/bin/cat")
        reader.arguments = [fifo.path]
        let out = Pipe()
        reader.standardOutput = out
        try reader.run()
        let received = Task { try await out.fileHandleForReading.readAll() }
        let size = 3_000_000
        let piped = try await courier("download", "\(server.baseURL)/bytes/\(size)", "-o", fifo.path)
        let stillAPipe = Self.fileType(fifo.path) == S_IFIFO
        Self.release(reader, of: fifo.path)
        let bytes = try await received.value
        await reader.exited()
        #expect(piped.status == 0, "\(piped.stderr)")
        #expect(piped.stderr.contains("saved \(fifo.path)"), "\(piped.stderr)")
        #expect(stillAPipe, "the named pipe is still a named pipe")
        #expect(bytes.count == size && bytes == Self.served(size), "the reader got the whole body, in order")
        #expect(Self.tree(folder) == ["null-link", "pipe"], "no partial file, no record")

        // Nothing to resume in a pipe: --continue is refused before anything is sent.
        let resumed = try await courier("download", "\(server.baseURL)/bytes/10", "-o", fifo.path, "--continue")
        #expect(resumed.status == 2 && resumed.stderr.contains("--continue"), "\(resumed.stderr)")
        #expect(Self.fileType(fifo.path) == S_IFIFO)
    }

    /// Ctrl-C during a download into a pipe: exit 130, without offering `--continue` (refused for a pipe).
    @Test(.timeLimit(.minutes(1))) func anInterruptedDownloadIntoAPipeDoesNotOfferToResume() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-cli-dl-int-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let fifo = folder.appendingPathComponent("pipe")
        try #require(mkfifo(fifo.path, 0o600) == 0)
        let reader = Process()
        reader.executableURL = URL(fileURLWithPath: "/bin/cat")
        reader.arguments = [fifo.path]
        reader.standardOutput = FileHandle.nullDevice
        try reader.run()
        // 100 bytes of a declared 1000, then nothing: the command waits for the rest until interrupted.
        let child = try ChildProcess(Self.binary, ["download", "\(server.baseURL)/stall-body", "-o", fifo.path],
                                     stderr: folder.appendingPathComponent("stderr.log"))
        let asked = await eventually { server.requestCount(path: "/stall-body") == 1 }
        try await Task.sleep(for: .milliseconds(300))
        child.kill(SIGINT)
        let status = await child.exit()
        Self.release(reader, of: fifo.path)
        await reader.exited()
        #expect(asked)
        #expect(status == .exit(130), "\(child.stderr)")
        #expect(child.stderr.hasSuffix("courier: error: interrupted\n") && !child.stderr.contains("--continue"), "\(child.stderr)")
        #expect(Self.fileType(fifo.path) == S_IFIFO)
    }
}
