import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOFileSystem
import NIOPosix

/// Writes a download's body to its destinations. Each is written to a partial file in the
/// destination's own folder (``PartialFileNames``, so the final rename never crosses file systems) and
/// renamed into place only when the body is complete and accepted: on failure or cancellation nothing
/// half-written ever sits under the final name. The partial files are ``PartialFile``s: opened without
/// following links, created owner-only, locked against other writers, synced before their rename. A
/// resumable download's first partial file is the one it has held since it measured it
/// (``HeldPartialFile``): the writer uses it, never reopens it, and lets it go only by renaming it into
/// place; otherwise its holder releases it. All I/O runs on SwiftNIO's blocking thread pool, never on the
/// cooperative pool or the caller's thread.
struct DownloadWriter: Sendable {
    /// The final URLs, in order, each once (the same file named twice is written once).
    let destinations: [URL]
    private let files: [PartialFile]
    /// A resumable download's held partial file, `files[0]`: closed by ``finish()`` only.
    private let held: HeldPartialFile?
    /// Whether the descriptors were closed (shared by the copies of this value): they are closed once,
    /// since a descriptor number closed twice may by then be another file's.
    private let closed = NIOLockedValueBox(false)
    /// Bytes in the partial files that a finished write put there: what a kept partial file holds.
    private(set) var length: Int64
    /// The offset the next write starts at: ``length`` plus the write in flight, if any.
    private var submitted: Int64
    /// The write running on NIO's thread pool while the next megabyte is received, and the length the
    /// files have once it succeeds. One at a time: the next write starts only after this one succeeded,
    /// so a failed write never leaves a hole before a later one (a hole would be zeros a resumed
    /// download kept as data). Every path that closes the files waits for it first.
    private var inFlight: (write: EventLoopFuture<PartialFile.Failure?>, end: Int64)?
    /// Chunks gathered for one write: each write is a hop to the file system's threads, so small
    /// network chunks are written a megabyte at a time (memory stays bounded by two of them: the one
    /// being written and the one being gathered).
    private var pending = ByteBuffer()
    /// The size of one write.
    static let writeSize = 1 << 20

    private init(destinations: [URL], files: [PartialFile], held: HeldPartialFile?, length: Int64) {
        (self.destinations, self.files, self.held, self.length, self.submitted) = (destinations, files, held, length, length)
    }

    /// The partial file beside `destination`.
    static func partialURL(for destination: URL) -> URL { PartialFileNames.partialURL(for: destination) }

    /// `destinations` without repeats: two URLs that name the same file (``DestinationLocks/key(for:)``)
    /// are one destination.
    static func distinct(_ destinations: [URL]) -> [URL] {
        var seen: Set<String> = []
        return destinations.filter { seen.insert(DestinationLocks.key(for: $0)).inserted }
    }

    /// Opens the partial files: empty ones, or (a resumable download) the held partial file cut down to
    /// `offset` bytes (never lengthened) and the other destinations' as copies of it.
    /// - Throws: ``NetworkError/Code/fileUnavailable`` when a partial file cannot be opened, is not a
    ///   regular file (a link, a FIFO, a device: left alone), another download holds it, or the held one
    ///   is shorter than `offset`.
    static func open(_ destinations: [URL], holding held: HeldPartialFile? = nil, resumingAt offset: Int64 = 0) async throws(NetworkError) -> DownloadWriter {
        precondition(held != nil || offset == 0, "only a held partial file is continued")
        let unique = distinct(destinations)
        if let held, held.isReleased {
            throw NetworkError(.fileUnavailable, "cannot write \(unique.first?.path ?? "the destination"): its partial file was closed")
        }
        let paths = unique.map { partialURL(for: $0).path }
        let opened: Result<[PartialFile], PartialFile.Failure>
        do {
            opened = try await NIOThreadPool.singleton.runIfActive { () -> Result<[PartialFile], PartialFile.Failure> in
                var files: [PartialFile] = []
                do throws(PartialFile.Failure) {
                    for (index, path) in paths.enumerated() {
                        if index == 0, let held {
                            try held.file.truncate(downTo: offset)
                            files.append(held.file)
                            continue
                        }
                        let file = try PartialFile.open(at: path)
                        files.append(file)
                        // A second destination starts from the first one's bytes on disk.
                        if index > 0, offset > 0 { try file.copy(offset, from: files[0]) }
                    }
                    return .success(files)
                } catch {
                    for file in files.dropFirst(held == nil ? 0 : 1) { file.close() }
                    return .failure(error)
                }
            }
        } catch {
            throw fileError(error, destination: unique.first)
        }
        switch opened {
        case .success(let files): return DownloadWriter(destinations: unique, files: files, held: held, length: offset)
        case .failure(let failure): throw failure.networkError(destination: unique.first)
        }
    }

    /// Appends a chunk to every partial file, gathered into writes of ``writeSize``. A full megabyte
    /// starts writing on NIO's thread pool while the next is received; a write's failure is thrown by
    /// the call after it (or by ``flush()``).
    mutating func write(_ chunk: ByteBuffer) async throws(NetworkError) {
        if pending.readableBytes == 0, chunk.readableBytes >= Self.writeSize { return try await startWrite(chunk) }
        pending.writeImmutableBuffer(chunk)
        if pending.readableBytes >= Self.writeSize {
            let bytes = pending
            pending = ByteBuffer()
            try await startWrite(bytes)
        }
    }

    /// Writes what is gathered and waits for every write: afterwards ``length`` counts every byte given.
    mutating func flush() async throws(NetworkError) {
        if pending.readableBytes > 0 {
            let bytes = pending
            pending = ByteBuffer()
            try await startWrite(bytes)
        }
        try await settle()
    }

    /// Waits for the write in flight, if any (never cancelled: its descriptors stay open until it ends).
    /// - Throws: Its failure, as ``NetworkError/Code/fileUnavailable``.
    private mutating func settle() async throws(NetworkError) {
        guard let (write, end) = inFlight else { return }
        inFlight = nil
        let failure: PartialFile.Failure?
        do {
            failure = try await write.get()
        } catch {
            throw Self.fileError(error, destination: destinations.first)
        }
        if let failure { throw failure.networkError(destination: destinations.first) }
        length = end
    }

    /// Waits for the write before, then starts writing `bytes` at the end of what was submitted.
    private mutating func startWrite(_ bytes: ByteBuffer) async throws(NetworkError) {
        try await settle()
        guard !closed.withLockedValue({ $0 }) else {
            throw NetworkError(.fileUnavailable, "cannot write \(destinations.first?.path ?? "the destination"): its partial file was closed")
        }
        let (files, offset) = (self.files, submitted)
        let write = NIOThreadPool.singleton.runIfActive(eventLoop: MultiThreadedEventLoopGroup.singleton.any()) { () -> PartialFile.Failure? in
            bytes.withUnsafeReadableBytes { buffer -> PartialFile.Failure? in
                do throws(PartialFile.Failure) { for file in files { try file.write(buffer, at: offset) } } catch { return error }
                return nil
            }
        }
        submitted += Int64(bytes.readableBytes)
        inFlight = (write, submitted)
    }

    /// Syncs the partial files and renames each into place, replacing what was there (keeping its
    /// mode); to the end, even if the task is cancelled meanwhile (the body is complete).
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
            await writer.abandon(keep: false)
            throw error
        }
        guard claimClosing() else {
            throw NetworkError(.fileUnavailable, "cannot write \(destinations.first?.path ?? "the destination"): its partial file was closed")
        }
        let (files, pairs, held) = (self.files, zip(files, destinations.map(\.path)).map { ($0, $1) }, self.held)
        try await Self.run(destination: destinations.first) { () throws(PartialFile.Failure) in
            // Closed (their locks released) only once renamed: nobody else opens a partial half-committed.
            // A held file that could not be renamed stays with its holder, who releases it.
            defer { for file in files.dropFirst(held == nil ? 0 : 1) { file.close() } }
            // The record goes first, under the lock: once the file is in place, the names may be a
            // new download's.
            held?.removeRecordNow()
            for (file, destination) in pairs { try file.commit(to: destination) }
            if let held, held.claimRelease() { held.file.close() }
        }
    }

    /// Runs blocking file work on NIO's thread pool; its failure as a typed error about `destination`.
    private static func run(
        destination: URL?, _ work: @escaping @Sendable () throws(PartialFile.Failure) -> Void
    ) async throws(NetworkError) {
        let failure: PartialFile.Failure?
        do {
            failure = try await NIOThreadPool.singleton.runIfActive { () -> PartialFile.Failure? in
                do throws(PartialFile.Failure) { try work() } catch { return error }
                return nil
            }
        } catch {
            throw fileError(error, destination: destination)
        }
        if let failure { throw failure.networkError(destination: destination) }
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
                for destination in distinct(destinations) where DestinationLocks.key(for: destination) != DestinationLocks.key(for: source) {
                    let copy = FilePath(PartialFileNames.copyURL(for: destination, random: MultipartForm.randomBoundary()).path)
                    temporary = copy
                    try await FileSystem.shared.copyItem(at: FilePath(source.path), to: copy)
                    let (from, to) = (copy.string, destination.path)
                    try await NIOThreadPool.singleton.runIfActive {
                        // The replaced file's mode is kept, as for a download's own rename; synced first.
                        var existing = stat()
                        if lstat(to, &existing) == 0, (existing.st_mode & S_IFMT) == S_IFREG { _ = chmod(from, existing.st_mode & 0o7777) }
                        let descriptor = Foundation.open(from, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
                        if descriptor >= 0 { _ = fsync(descriptor); _ = Foundation.close(descriptor) }
                        if rename(from, to) != 0 { throw IOError(errnoCode: errno, reason: "rename") }
                        PartialFile.syncFolder(of: to)
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
    /// A held partial file is flushed when kept, and otherwise left to its holder
    /// (``HeldPartialFile/release(keeping:)``), which writes its record or removes it under its lock.
    /// Waits for the write in flight first (its descriptors are closed only after it). Runs to the end
    /// even if the task is cancelled (it usually is: that is why the transfer stopped).
    /// - Returns: The bytes the partial files hold from the start: all that arrived, or, when a write
    ///   failed, what the writes before it put there (a kept file's record counts no more than that).
    @discardableResult
    func abandon(keep: Bool) async -> Int64 {
        let writer = self
        return await uncancelled { await writer.abandoning(keep: keep) }
    }

    private func abandoning(keep: Bool) async -> Int64 {
        var writer = self
        if keep, !closed.withLockedValue({ $0 }) {
            try? await writer.flush()   // what arrived is what the record counts, unless a write failed
        } else {
            try? await writer.settle()
        }
        let (files, keep, isOpen) = (self.files.dropFirst(held == nil ? 0 : 1), keep, claimClosing())
        guard !files.isEmpty else { return writer.length }
        _ = try? await NIOThreadPool.singleton.runIfActive {
            for file in files {
                if isOpen {
                    if !keep { file.unlinkIfOwned() }
                    file.close()
                } else if !keep {
                    PartialFile.remove(at: file.path)   // closed by a failed finish: by path, unless someone else holds it
                }
            }
        }
        return writer.length
    }

    /// Marks the descriptors closed; `true` for the one caller that is to close them.
    private func claimClosing() -> Bool {
        closed.withLockedValue { wasClosed in
            defer { wasClosed = true }
            return !wasClosed
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
