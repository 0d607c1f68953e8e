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
            let opened = handles
            await uncancelled { for handle in opened { try? await handle.close(makeChangesVisible: true) } }
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

    /// Closes the partial files and renames each into place, replacing what was there; to the end,
    /// even if the task is cancelled meanwhile (the body is complete).
    func finish() async throws(NetworkError) {
        let writer = self
        if let failure = await uncancelled({ await writer.finishNow() }) { throw failure }
    }

    private func finishNow() async -> NetworkError? {
        do throws(NetworkError) { try await finishing() } catch { return error }
        return nil
    }

    private func finishing() async throws(NetworkError) {
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

    /// Copies a shared download's file to another operation's destinations, each through a temporary
    /// file of its own (`.<name>.courier-copy-<random>`) renamed into place: the destination's partial
    /// file and resume record, which another download may own, are not touched, and a file written at
    /// the same time by someone else is replaced whole, never mixed. The caller holds the source (the
    /// flight that wrote it, before it lets go of it), and the copy runs even if its task is cancelled.
    /// - Returns: `response` naming `destinations`, or the file error.
    static func copy(
        _ response: NetworkResponse, from source: URL, to destinations: [URL], url: String
    ) async -> Result<NetworkResponse, NetworkError> {
        let failure = await uncancelled { () -> NetworkError? in
            var temporary: FilePath?
            do {
                for destination in destinations where destination.standardizedFileURL != source.standardizedFileURL {
                    let copy = FilePath(destination.deletingLastPathComponent()
                        .appendingPathComponent(".\(destination.lastPathComponent).courier-copy-\(MultipartForm.randomBoundary().suffix(12))").path)
                    temporary = copy
                    try await FileSystem.shared.copyItem(at: FilePath(source.path), to: copy)
                    let (from, to) = (copy.string, destination.path)
                    try await NIOThreadPool.singleton.runIfActive {
                        if rename(from, to) != 0 { throw IOError(errnoCode: errno, reason: "rename") }
                    }
                    temporary = nil
                }
                return nil
            } catch {
                if let temporary { _ = try? await FileSystem.shared.removeItem(at: temporary, strategy: .platformDefault) }
                return fileError(error, destination: destinations.first)
            }
        }
        if let failure { return .failure(failure) }
        var copy = response
        copy.fileURLs = destinations
        return .success(copy)
    }

    /// Closes the partial files; removes them unless `keep` (a resumable download that was interrupted).
    /// Runs to the end even if the task is cancelled (it usually is: that is why the transfer stopped).
    func abandon(keep: Bool) async {
        let writer = self
        await uncancelled { await writer.abandoning(keep: keep) }
    }

    private func abandoning(keep: Bool) async {
        if keep {
            var writer = self
            try? await writer.flush()   // what arrived is what the record counts
        }
        _ = await Self.closing(handles)
        guard !keep else { return }
        for destination in destinations {
            _ = try? await FileSystem.shared.removeItem(at: FilePath(Self.partialURL(for: destination).path), strategy: .platformDefault)
        }
    }

    /// Closes every handle, even when one fails, and returns the first failure; to the end even in a
    /// cancelled task (``uncancelled(_:)``): a handle left open is a fatal error in NIOFileSystem.
    private static func closing(_ handles: [WriteFileHandle]) async -> (any Error)? {
        await uncancelled {
            var failure: (any Error)?
            for handle in handles {
                do { try await handle.close(makeChangesVisible: true) } catch { failure = failure ?? error }
            }
            return failure
        }
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
        let text = "\(error)"
        let diskFull = text.contains("No space left") || text.contains("ENOSPC")
        let readOnly = text.contains("Read-only file system") || text.contains("EROFS")
        let why = diskFull ? "the disk is full" : readOnly ? "its file system is read-only" : reason
        return NetworkError(.fileUnavailable, "cannot write \(place): \(why)", underlying: error)
    }
}
