import Foundation
import Testing
@testable import Courier

/// Interop: a resumable download against nginx, a server written by others, started here with its own
/// configuration. `scripts/test` installs nginx when it is missing.
extension TransferAcceptanceTests {
    static var nginxIsRunnable: Bool { NginxServer.isAvailable || HTTPBin.isRequired }

    @Test(.enabled(if: nginxIsRunnable, "nginx is not installed: run scripts/test, which installs it (or set NGINX to its path)"))
    func aDownloadInterruptedThenResumedAgainstNginxUsesItsRangesAndStartsOverWhenTheFileChanged() async throws {
        guard NginxServer.isAvailable else {
            Issue.record("COURIER_REQUIRE_INTEROP=1 but nginx is not installed")
            return
        }
        let nginx = try await NginxServer.start()
        defer { nginx.stop() }
        let served = nginx.root.appendingPathComponent("data.bin")
        let original = GeneratedContent(size: 16 << 20, seed: 11)
        try await original.write(to: served)
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let engine = Self.engine(port: nginx.port)

        // Interrupted after a few megabytes, then resumed: a 206 from the bytes on disk, with nginx's ETag.
        let first = folder.appendingPathComponent("first.bin")
        let kept = try await Self.interruptedDownload(engine, to: first)
        _ = try await engine.send(engine.operation(path: "/data.bin").download(to: first, resumable: true))
        #expect(try await original.mismatch(in: first) == nil)
        #expect(await eventually(timeout: .seconds(5)) { nginx.accessLog.count == 2 }, "\(nginx.accessLog)")
        var log = nginx.accessLog
        let etag = log[0][6]
        #expect(log[0][2] == "200" && log[0][3].isEmpty && etag.hasPrefix("\""), "\(log[0])")
        #expect(log[1][2] == "206" && log[1][3] == "bytes=\(kept)-" && log[1][4] == etag, "\(log[1])")
        #expect(Int(log[1][5]) == original.size - kept, "nginx sent only the rest")

        // Interrupted again, then the file changes on the server: If-Range no longer matches, nginx answers
        // 200 with the whole new file, and the download starts over cleanly.
        let second = folder.appendingPathComponent("second.bin")
        let keptAgain = try await Self.interruptedDownload(engine, to: second)
        let changed = GeneratedContent(size: 12 << 20, seed: 12)
        try await changed.write(to: served)
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(60)], ofItemAtPath: served.path)
        _ = try await engine.send(engine.operation(path: "/data.bin").download(to: second, resumable: true))
        #expect(try await changed.mismatch(in: second) == nil)
        #expect(await eventually(timeout: .seconds(5)) { nginx.accessLog.count == 4 }, "\(nginx.accessLog)")
        log = nginx.accessLog
        #expect(log[3][2] == "200" && log[3][3] == "bytes=\(keptAgain)-" && log[3][4] == etag && log[3][6] != etag, "\(log[3])")
        #expect(Self.names(in: folder) == ["first.bin", "second.bin"], "no partial file or record left")
    }

    /// A throttled resumable download of nginx's `/data.bin`, cancelled keeping its resume data after a
    /// megabyte or so. Returns the bytes kept on disk.
    static func interruptedDownload(_ engine: NetworkEngine, to destination: URL) async throws -> Int {
        let op = engine.operation(path: "/data.bin").download(to: destination, resumable: true)
        op.maximumBytesPerSecond = 4 << 20
        let progress = ProgressLog()
        op.onDownloadProgress { progress.append($0) }
        engine.enqueue(op)
        #expect(await eventually(timeout: .seconds(20)) { (progress.last?.completedBytes ?? 0) >= 1 << 20 })
        op.cancelKeepingResumeData()
        #expect(await failure(of: op)?.code == .cancelled)
        #expect(!FileManager.default.fileExists(atPath: destination.path))
        // The operation reports `cancelled` at once; its flight still writes what it gathered and closes the file.
        await op.waitForFiles()
        let kept = size(of: DownloadWriter.partialURL(for: destination)) ?? 0
        try #require(kept >= 1 << 20, "the partial file keeps what arrived")
        return kept
    }
}
