import Courier
import CourierTestServer
import Foundation
import NIOConcurrencyHelpers

extension Demo {
    /// Scene 10: files in and out, streamed in constant memory: a multipart upload from disk, a download
    /// to a file under a bandwidth limit with its rate and time left, and two identical downloads that
    /// share one transfer.
    nonisolated func files(_ engine: NetworkEngine, _ server: TestServer) async throws {
        say("10. Files, streamed")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-demo-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }

        let photo = folder.appendingPathComponent("photo.jpg")
        try Data((0..<3_000_000).map { UInt8($0 % 251) }).write(to: photo)
        var form = MultipartForm()
        form.addField("Holiday", name: "title")
        form.addFile(photo, name: "photo")
        let upload = engine.operation(path: "/echo", method: .post, body: .multipart(form))
        let sent = NIOLockedValueBox<TransferProgress?>(nil)
        upload.onUploadProgress { progress in sent.withLockedValue { $0 = progress } }
        let echoed = try await engine.send(upload)
        await drainCallbacks(engine)
        let uploaded = sent.withLockedValue { $0 }.map { "\($0.completedBytes) of \($0.totalBytes ?? 0) bytes" } ?? "-"
        say("   multipart upload of a 3 MB file (read from disk part by part, Content-Length known up front): \(echoed.statusCode), \(uploaded) sent")

        let file = folder.appendingPathComponent("video.mp4")
        let download = engine.operation(path: "/bytes/3145728", params: ["chunkSize": 65536]).download(to: file)
        download.maximumBytesPerSecond = 2_000_000
        let marks = NIOLockedValueBox(0.3)
        download.onDownloadProgress { progress in
            guard let fraction = progress.fractionCompleted, fraction >= marks.withLockedValue({ $0 }), fraction < 1 else { return }
            marks.withLockedValue { $0 += 0.3 }
            let rate = progress.bytesPerSecond.map { String(format: "%.1f MB/s", $0 / 1e6) } ?? "-"
            let left = progress.estimatedTimeRemaining.map { String(format: "%.1f s left", Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18) } ?? ""
            StandardStream.standardOutput.line("   \(Int(fraction * 100))%  \(progress.completedBytes) bytes  \(rate)  \(left)")
        }
        let started = ContinuousClock.now
        let response = try await engine.send(download)
        let took = ContinuousClock.now - started
        await drainCallbacks(engine)
        let size = (try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int) ?? 0
        say("   download to \(response.fileURLs.first?.lastPathComponent ?? "?") limited to 2 MB/s: \(size) bytes on disk in \(String(format: "%.1f s", Double(took.components.attoseconds) / 1e18 + Double(took.components.seconds))), nothing in memory")

        server.resetStatistics()
        let copies = (1...2).map { engine.operation(path: "/bytes/1048576").download(to: folder.appendingPathComponent("copy-\($0).bin")) }
        for copy in copies { engine.enqueue(copy) }
        for copy in copies { _ = try await copy.response() }
        say("   two identical downloads to two files: \(server.requestCount(path: "/bytes/1048576")) request, both files written\n")
    }
}
