import Foundation
import NIOCore
import NIOFileSystem
import NIOPosix

/// Writes a download's body to its destinations. Each is written to a partial file in the
/// destination's own folder (`.<name>.courier-partial`, so the final rename never crosses file
/// systems) and renamed into place only when the body is complete and accepted: on failure or
/// cancellation nothing half-written ever sits under the final name. All I/O runs on SwiftNIO's file
/// system thread pool, never on the cooperative pool or the caller's thread.
struct DownloadWriter: Sendable {
    /// The final URLs, in order.
    let destinations: [URL]
    private let handles: [WriteFileHandle]
    /// Bytes in the partial files (the offset the next chunk is written at).
    private(set) var length: Int64
    /// Chunks gathered for one write: each write is a hop to the file system's threads, so small
    /// network chunks are written a megabyte at a time (memory stays bounded by that).
    private var pending = ByteBuffer()
    /// The size of one write.
    static let writeSize = 1 << 20

    /// The partial file beside `destination`.
    static func partialURL(for destination: URL) -> URL {
        destination.deletingLastPathComponent().appendingPathComponent(".\(destination.lastPathComponent).courier-partial")
    }

    /// Opens the partial files: empty ones, or (resuming) the first destination's existing partial
    /// file from `offset`, the others as copies of it.
    static func open(_ destinations: [URL], resumingAt offset: Int64 = 0) async throws(NetworkError) -> DownloadWriter {
        var handles: [WriteFileHandle] = []
        do {
            for (index, destination) in destinations.enumerated() {
                let partial = FilePath(partialURL(for: destination).path)
                if offset > 0, index > 0 {
                    // A second destination starts from the first one's bytes on disk.
                    _ = try? await FileSystem.shared.removeItem(at: partial, strategy: .platformDefault)
                    try await FileSystem.shared.copyItem(at: FilePath(partialURL(for: destinations[0]).path), to: partial)
                }
                // Not NIOFileSystem's default transactional creation: that file has no name until it is
                // closed, so a killed process would leave nothing to resume from.
                let options: OpenOptions.Write = offset > 0
                    ? .modifyFile(createIfNecessary: false)
                    : OpenOptions.Write(
                        existingFile: .truncate,
                        newFile: .init(permissions: [.ownerReadWrite, .groupRead, .otherRead], transactionalCreation: false))
                let handle = try await FileSystem.shared.openFile(forWritingAt: partial, options: options)
                handles.append(handle)
                if offset > 0 { try await handle.resize(to: ByteCount.bytes(offset)) }
            }
        } catch {
            for handle in handles { try? await handle.close(makeChangesVisible: true) }
            throw fileError(error, destination: destinations.first)
        }
        return DownloadWriter(destinations: destinations, handles: handles, length: offset)
    }

    /// Appends a chunk to every partial file (gathered into writes of ``writeSize``).
    mutating func write(_ chunk: ByteBuffer) async throws(NetworkError) {
        if pending.readableBytes == 0, chunk.readableBytes >= Self.writeSize { return try await writeNow(chunk) }
        pending.writeImmutableBuffer(chunk)
        if pending.readableBytes >= Self.writeSize { try await flush() }
    }

    /// Writes what is gathered.
    mutating func flush() async throws(NetworkError) {
        guard pending.readableBytes > 0 else { return }
        let bytes = pending
        pending = ByteBuffer()
        try await writeNow(bytes)
    }

    private mutating func writeNow(_ bytes: ByteBuffer) async throws(NetworkError) {
        do {
            for handle in handles { try await handle.write(contentsOf: bytes, toAbsoluteOffset: length) }
        } catch {
            throw Self.fileError(error, destination: destinations.first)
        }
        length += Int64(bytes.readableBytes)
    }

    /// Closes the partial files and renames each into place, replacing what was there.
    func finish() async throws(NetworkError) {
        var writer = self
        do {
            try await writer.flush()
        } catch {
            await abandon(keep: false)
            throw error
        }
        do {
            // Every handle is closed even when one fails (a handle left open is a fatal error in NIOFileSystem).
            let failure = await Self.closing(handles)
            if let failure { throw failure }
            let pairs = destinations.map { (Self.partialURL(for: $0).path, $0.path) }
            try await NIOThreadPool.singleton.runIfActive {
                for (from, to) in pairs where rename(from, to) != 0 {
                    throw IOError(errnoCode: errno, reason: "rename")
                }
            }
        } catch {
            throw Self.fileError(error, destination: destinations.first)
        }
    }

    /// Closes the partial files; removes them unless `keep` (a resumable download that was interrupted).
    func abandon(keep: Bool) async {
        // Mostly called because the transfer's task was cancelled: the work goes to a task of its own.
        let writer = self
        await Task {
            if keep {
                var writer = writer
                try? await writer.flush()   // what arrived is what the record counts
            }
            _ = await Self.closing(writer.handles)
            guard !keep else { return }
            for destination in writer.destinations {
                _ = try? await FileSystem.shared.removeItem(at: FilePath(Self.partialURL(for: destination).path), strategy: .platformDefault)
            }
        }.value
    }

    /// Closes every handle, even when one fails, and returns the first failure. It runs in a task of its
    /// own, which a cancellation of the caller's does not reach: NIO's thread pool refuses work from a
    /// cancelled task, and a handle left open is a fatal error in NIOFileSystem.
    private static func closing(_ handles: [WriteFileHandle]) async -> (any Error)? {
        await Task {
            var failure: (any Error)?
            for handle in handles {
                do { try await handle.close(makeChangesVisible: true) } catch { failure = failure ?? error }
            }
            return failure
        }.value
    }

    /// A file system failure as a ``NetworkError/Code/fileUnavailable`` naming the destination.
    static func fileError(_ error: any Error, destination: URL?) -> NetworkError {
        if let error = error as? NetworkError { return error }
        let place = destination?.path ?? "the destination"
        let reason: String
        if let error = error as? FileSystemError {
            switch error.code {
            case .notFound: reason = "its folder does not exist"
            case .permissionDenied: reason = "it is not writable"
            default: reason = error.cause.map { "\($0)" } ?? error.message
            }
        } else if let error = error as? IOError, error.errnoCode == ENOSPC {
            reason = "the disk is full"
        } else {
            reason = "\(error)"
        }
        let diskFull = "\(error)".contains("No space left") || "\(error)".contains("ENOSPC")
        return NetworkError(.fileUnavailable, "cannot write \(place): \(diskFull ? "the disk is full" : reason)", underlying: error)
    }
}
