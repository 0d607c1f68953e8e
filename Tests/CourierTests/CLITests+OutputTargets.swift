import CourierTestServer
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `get -o` to what is not a regular file: written in place as the body arrives, never replaced by a
/// renamed temporary file (`/dev/null` must stay `/dev/null`, a named pipe must reach its reader).
extension CLITests {
    /// The kind of what is at a path, without following a symbolic link (`S_IFMT` bits), or `nil`.
    static func fileType(_ path: String) -> mode_t? {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mode & S_IFMT : nil
    }

    /// The server's `/bytes/N` body.
    static func served(_ count: Int) -> Data { Data((0..<count).map { UInt8($0 % 251) }) }

    /// Never leaves a reader of a named pipe waiting: one still waiting for a writer gets an empty one
    /// (end of file) if the pipe is still there, and is killed if it is not (nothing can open it any more).
    static func release(_ reader: Process, of fifo: String) {
        if fileType(fifo) == S_IFIFO {
            let descriptor = open(fifo, O_WRONLY | O_NONBLOCK)
            if descriptor >= 0 { close(descriptor) }
        } else if reader.isRunning {
            kill(reader.processIdentifier, SIGKILL)   // SIGTERM may be blocked in a child of the test runner
        }
    }

    /// `-o /dev/stdout >> log.txt`: standard output is a regular file the user appends to; it must keep
    /// what it held (a rename over it would replace it).
    @Test(.timeLimit(.minutes(1))) func outputToStandardOutputAppendedToAFileKeepsTheFile() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-cli-o-stdout-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let log = folder.appendingPathComponent("log.txt")
        try Data("earlier lines\n".utf8).write(to: log)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "\"$0\" get \"$1\" -o /dev/stdout >> \"$2\"", Self.binary.path, "\(server.baseURL)/bytes/3000", log.path]
        try process.run()
        while process.isRunning { try await Task.sleep(for: .milliseconds(20)) }
        #expect(process.terminationStatus == 0)
        #expect(try Data(contentsOf: log) == Data("earlier lines\n".utf8) + Self.served(3000))
        #expect(Self.fileType(log.path) == S_IFREG)
    }

    @Test(.timeLimit(.minutes(1))) func getWithOutputToDevNullOrANamedPipeWritesInPlace() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-cli-o-special-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }

        // A link to /dev/null first, in a folder of our own: a build that renamed over it would replace the
        // link here, not /dev/null itself (this test may run as root).
        let link = folder.appendingPathComponent("null-link")
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: "/dev/null")
        let throughLink = try await courier("get", "-o", link.path, "\(server.baseURL)/bytes/200000")
        #expect(throughLink.status == 0, "\(throughLink.stderr)")
        try #require(Self.fileType(link.path) == S_IFLNK, "the link is still a link, so /dev/null would be left alone")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["null-link"], "no partial file beside it")

        let null = try await courier("get", "-i", "-o", "/dev/null", "\(server.baseURL)/bytes/300000")
        #expect(null.status == 0, "\(null.stderr)")
        #expect(null.stdout.hasPrefix("HTTP/1.1 200 OK\n"), "-i still prints the head")
        #expect(Self.fileType("/dev/null") == S_IFCHR, "/dev/null is still a device")
        #expect(!FileManager.default.fileExists(atPath: "/dev/.null.courier-partial"))

        // /dev/stdout (a link to the pipe the test reads): the body arrives there.
        let stdout = try await courier("get", "-o", "/dev/stdout", "\(server.baseURL)/bytes/100000")
        #expect(stdout.status == 0 && Data(stdout.stdout.utf8).count > 0)
        #expect(Array(stdout.stdout.unicodeScalars.prefix(10)).map(\.value) == (0..<10).map { UInt32($0) }, "the body itself")

        // A named pipe with a reader: more than a pipe holds, so it is written as it arrives.
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
        let piped = try await courier("get", "-o", fifo.path, "\(server.baseURL)/bytes/\(size)")
        let stillAPipe = Self.fileType(fifo.path) == S_IFIFO
        Self.release(reader, of: fifo.path)
        let bytes = try await received.value
        await reader.exited()
        #expect(piped.status == 0, "\(piped.stderr)")
        #expect(stillAPipe, "the named pipe is still a named pipe")
        #expect(bytes.count == size && bytes == Self.served(size), "the reader got the whole body, in order")
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: folder.path)) == ["null-link", "pipe"], "no partial file")

        // A reader that goes away early: a write error naming the file (exit 1), not a hang.
        let quitter = Process()
        quitter.executableURL = URL(fileURLWithPath: "/usr/bin/head")
        quitter.arguments = ["-c", "1000", fifo.path]
        quitter.standardOutput = FileHandle.nullDevice
        try quitter.run()
        let broken = try await courier("get", "-o", fifo.path, "\(server.baseURL)/bytes/\(size)")
        Self.release(quitter, of: fifo.path)
        await quitter.exited()
        #expect(broken.status == 1 && broken.stderr.contains("cannot write \(fifo.path)"), "\(broken.status) \(broken.stderr)")
    }

    @Test func getWithOutputThroughALinkToAFileReplacesTheFileAndKeepsTheLink() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-cli-o-link-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("data"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let target = folder.appendingPathComponent("data/latest.bin")
        try Data("old".utf8).write(to: target)
        let link = folder.appendingPathComponent("latest")
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: target.path)
        let run = try await courier("get", "-o", link.path, "\(server.baseURL)/bytes/70000")
        #expect(run.status == 0, "\(run.stderr)")
        #expect(Self.fileType(link.path) == S_IFLNK, "the link stays a link")
        #expect(try Data(contentsOf: target) == Self.served(70000), "the file it points to has the body")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.appendingPathComponent("data").path) == ["latest.bin"])
    }
}
