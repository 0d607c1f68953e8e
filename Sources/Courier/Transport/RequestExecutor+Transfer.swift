import Foundation
import HTTPTypes
import NIOCore

// A response body that goes to files and/or a body stream instead of memory: read chunk by chunk, so
// memory stays constant for any size; while a chunk waits (a slow consumer, a disk, a bandwidth limit)
// the connection is not read and TCP slows the server down.
extension RequestExecutor {
    /// Streams an accepted response body to its destination; returns the files written.
    func transfer(_ response: TransportResponse, for request: PreparedRequest, progress: ProgressSink) async throws -> [URL] {
        let destination = request.destination
        let isEncoded = response.headers[.contentEncoding].map { !$0.isEmpty && $0.lowercased() != "identity" } ?? false
        let total = (isEncoded || request.method == .head) ? nil : response.headers[.contentLength].flatMap { Int64($0) }
        var writer = destination.files.isEmpty ? nil : try await DownloadWriter.open(destination.files)
        var received: Int64 = 0
        do {
            for try await part in response.body {
                try await writer?.write(part)
                if let channel = destination.channel { await channel.send(Data(part.readableBytesView)) }
                received += Int64(part.readableBytes)
                progress.download(TransferProgress(completedBytes: received, totalBytes: total))
                try await Throttle.wait(for: part.readableBytes, under: destination.throttles)
            }
            if received == 0 { progress.download(TransferProgress(completedBytes: 0, totalBytes: total ?? 0)) }
            try await writer?.finish()
        } catch {
            await writer?.abandon(keep: destination.keepsPartialFile)
            throw error
        }
        destination.channel?.finish(nil)
        return destination.files
    }
}
