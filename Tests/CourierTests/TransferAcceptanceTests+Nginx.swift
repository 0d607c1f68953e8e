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
        // nginx logs a request when it ends: the interrupted one, whose closed connection it may notice late
        // on a loaded machine, can come after the resumed one. Each is found by its Range header.
        guard let interrupted = log.prefix(2).first(where: { $0[3].isEmpty }), let resumed = log.prefix(2).first(where: { !$0[3].isEmpty }) else {
            Issue.record("expected a request without Range and one with: \(log)")
            return
        }
        let etag = interrupted[6]
        #expect(interrupted[2] == "200" && etag.hasPrefix("\""), "\(interrupted)")
        #expect(resumed[2] == "206" && resumed[3] == "bytes=\(kept)-" && resumed[4] == etag, "\(resumed)")
        #expect(Int(resumed[5]) == original.size - kept, "nginx sent only the rest")

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
        let restarted = log.dropFirst(2).first { $0[3] == "bytes=\(keptAgain)-" }
        #expect(restarted?[2] == "200" && restarted?[4] == etag && restarted?[6] != etag, "\(log)")
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
