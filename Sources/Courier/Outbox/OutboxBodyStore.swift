import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The outbox's copies of the files of frozen bodies: `<outbox directory>/bodies/<row id>/`, owner-only.
///
/// A frozen request whose body is a file, or a multipart form with files, must not depend on those
/// files staying as they are until it is replayed: they are copied, and the row describes the copies
/// (``FrozenBody``). What keeps rows and copies consistent, across crashes and processes:
/// - A copy is made in `bodies/.partial.<pid>.<random>.<row id>/` (its name says which process makes
///   it): each file streamed in chunks (constant memory) and synced, the folder synced, then renamed to
///   `bodies/<row id>/` and `bodies` synced, all **before** the row is inserted, so a row never points at
///   a copy that is not complete. A failure removes the copy, and the freeze fails.
/// - Until its row is committed, the copy holds a `.owner` file naming its process; it goes once the
///   row is committed.
/// - Whoever removes a row, or records its outcome (delivered, refused), removes its copy **after** the
///   commit: a copy without a row is harmless, a row without its copy is not.
/// - When the outbox is opened (and after `Outbox.clear()`), copies whose row no longer exists are
///   removed, so a crash between the steps above leaves nothing behind for long. A copy being made by a
///   live process (named by its `.partial` name or its `.owner` file) is left alone.
///
/// Every method blocks on the disk: it runs on the outbox's dispatch queues, never on the cooperative
/// pool or a caller's thread.
struct OutboxBodyStore: Sendable {
    /// `<outbox directory>/bodies`.
    let folder: URL
    /// This process's name on copies in the making (`pid:random`, as on leases).
    let owner: String

    static let folderName = "bodies"
    static let ownerFileName = ".owner"
    static let partialPrefix = ".partial."
    /// The size of the chunks a copy is read and written in.
    static let chunkSize = 256 * 1024

    /// A body made ready for its row.
    struct Frozen: Sendable {
        /// How to rebuild it, for a file or a form; `nil` for bytes in memory.
        var layout: FrozenBody?
        /// The row's `body` column: the body's bytes, or a form's fields and data parts.
        var bytes: Data?
    }

    init(directory: URL, owner: String) {
        self.folder = directory.appendingPathComponent(Self.folderName, isDirectory: true)
        self.owner = owner
    }

    /// The folder of a row's copies.
    func folder(for id: String) -> URL { folder.appendingPathComponent(id, isDirectory: true) }

    /// Whether a row id can name a folder of copies: a plain name (ids are UUIDs; an id given to
    /// `Outbox.drop(_:)` is never a path).
    static func isPlainName(_ id: String) -> Bool {
        !id.isEmpty && !id.contains("/") && !id.hasPrefix(".") && id != ".."
    }

    // MARK: Freezing

    /// Prepares a body for the row `id`: bytes in memory as they are; a file, or a form's files, copied
    /// into the row's folder (complete and synced when this returns).
    /// - Parameters:
    ///   - bytes: A body in memory.
    ///   - source: A streamed body (file, form, stream).
    ///   - id: The row's id.
    ///   - limit: ``NetworkEngine/Configuration/maximumFrozenBodySize``.
    /// - Returns: The layout and bytes for the row.
    /// - Throws: ``NetworkError/Code/frozenBodyTooLarge`` over the limit (nothing is left on disk);
    ///   ``NetworkError/Code/fileUnavailable`` when a file to copy is missing or cannot be read;
    ///   ``NetworkError/Code/outboxUnavailable`` when the copy cannot be written;
    ///   ``NetworkError/Code/bodyNotReplayable`` for a one-shot stream.
    func freeze(bytes: Data?, source: RequestBodySource?, id: String, limit: Int) throws(NetworkError) -> Frozen {
        var rowBytes = Data()
        var layout: FrozenBody
        switch source?.kind {
        case nil:
            if let bytes, bytes.count > limit { throw Self.tooLarge(Int64(bytes.count), limit: limit) }
            return Frozen(layout: nil, bytes: bytes)
        case .data(let data)?:
            if data.count > limit { throw Self.tooLarge(Int64(data.count), limit: limit) }
            return Frozen(layout: nil, bytes: data)
        case .stream?:
            throw NetworkError(.bodyNotReplayable, "a one-shot stream body cannot be frozen; send it as .data or .file to freeze it")
        case .replayable?:
            // Only a PostgreSQL outbox's replays read bodies this way, and a replay is never frozen again.
            throw NetworkError(.bodyNotReplayable, "a body read back from another outbox cannot be frozen into this one")
        case .file(let url)?:
            layout = FrozenBody(kind: .file, boundary: nil, parts: [FrozenBody.Part(copy: "body", size: try Self.regularFileSize(url))])
            try copy([(url, 0)], into: &layout, framing: 0, id: id, limit: limit)
        case .multipart(let form)?:
            var parts: [FrozenBody.Part] = []
            var sources: [(URL, Int)] = []
            var sizes: [String: Int64] = [:]
            for (index, part) in form.parts.enumerated() {
                var frozen = FrozenBody.Part(name: part.name, filename: part.filename, contentType: part.contentType)
                switch part.content {
                case .bytes(let data):
                    frozen.offset = rowBytes.count
                    frozen.length = data.count
                    rowBytes.append(data)
                case .file(let url):
                    let size = try Self.regularFileSize(url)
                    sizes[url.path] = size
                    frozen.copy = "part-\(index)"
                    frozen.size = size
                    sources.append((url, index))
                }
                parts.append(frozen)
            }
            layout = FrozenBody(kind: .multipart, boundary: form.boundary, parts: parts)
            // Everything that is not a file's bytes: framing, headers, fields, data parts.
            var framing: Int64 = 0
            for segment in form.segments(fileSizes: sizes) {
                if case .bytes(let data) = segment { framing += Int64(data.count) }
            }
            try copy(sources, into: &layout, framing: framing, id: id, limit: limit)
        }
        return Frozen(layout: layout, bytes: rowBytes)
    }

    /// Copies `sources` (file, index of its part) into the row's folder, recording each copy's size;
    /// refuses a body over `limit` before copying anything, and while copying (a file that grew).
    private func copy(_ sources: [(URL, Int)], into layout: inout FrozenBody, framing: Int64, id: String, limit: Int) throws(NetworkError) {
        let measured = framing + layout.copies.reduce(0) { $0 + $1.size }
        guard measured <= Int64(limit) else { throw Self.tooLarge(measured, limit: limit) }
        guard !sources.isEmpty else { return }
        guard Self.isPlainName(id) else { throw NetworkError(.outboxUnavailable, "'\(id)' cannot name a folder of copies") }
        if try makeFolder(folder) { try sync(folder.deletingLastPathComponent()) }
        let partial = folder.appendingPathComponent(Self.partialPrefix + owner.replacingOccurrences(of: ":", with: ".") + "." + id)
        let final = folder(for: id)
        var renamed = false
        do throws(NetworkError) {
            try makeFolder(partial)
            try writeOwner(in: partial)
            var budget = Int64(limit) - framing
            for (source, index) in sources {
                let name = layout.parts[index].copy ?? "part-\(index)"
                layout.parts[index].size = try copyFile(source, to: partial.appendingPathComponent(name), budget: &budget, limit: limit)
            }
            try sync(partial)
            guard rename(partial.path, final.path) == 0 else { throw outboxError("moved into place", final, errno) }
            renamed = true
            try sync(folder)
        } catch {
            Self.removeTree(partial)
            if renamed { Self.removeTree(final) }
            throw error
        }
    }

    /// Streams one file into its copy, `chunkSize` bytes at a time, and syncs it; returns its size.
    private func copyFile(_ source: URL, to target: URL, budget: inout Int64, limit: Int) throws(NetworkError) -> Int64 {
        // Never waits for a FIFO's writer: a path swapped after it was measured is refused, not blocked on.
        let input = try UploadFile.openRegularFile(source.path).get().0
        defer { close(input) }
        let output = open(target.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard output >= 0 else { throw outboxError("created", target, errno) }
        var isOpen = true
        defer { if isOpen { close(output) } }
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: Self.chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        var copied: Int64 = 0
        while true {
            let count = read(input, buffer, Self.chunkSize)
            if count < 0 {
                if errno == EINTR { continue }
                throw Self.sourceError(source, "read", errno)
            }
            if count == 0 { break }
            copied += Int64(count)
            guard copied <= budget else {
                throw NetworkError(
                    .frozenBodyTooLarge,
                    "the file \(source.path) grew while it was copied into the outbox: the body is now more than "
                        + "maximumFrozenBodySize (\(limit) bytes), so it cannot be frozen")
            }
            var written = 0
            while written < count {
                let result = write(output, buffer + written, count - written)
                if result < 0 {
                    if errno == EINTR { continue }
                    throw outboxError("written", target, errno)
                }
                written += result
            }
        }
        guard fsync(output) == 0 else { throw outboxError("synced", target, errno) }
        isOpen = false
        guard close(output) == 0 else { throw outboxError("closed", target, errno) }
        budget -= copied
        return copied
    }

    /// The row is committed: its copy is no longer in the making.
    func committed(_ id: String) {
        guard Self.isPlainName(id) else { return }
        unlink(folder(for: id).appendingPathComponent(Self.ownerFileName).path)
    }

    // MARK: Using and removing

    /// What is wrong with a row's copies (missing, or of another size than copied), or `nil` when
    /// they are whole.
    func problem(with layout: FrozenBody, id: String) -> String? {
        Self.problem(with: layout, in: folder(for: id))
    }

    /// What is wrong with the copies of a layout in a folder, or `nil` when they are whole.
    static func problem(with layout: FrozenBody, in folder: URL) -> String? {
        for (name, size) in layout.copies {
            let path = folder.appendingPathComponent(name).path
            var info = stat()
            guard stat(path, &info) == 0 else { return "the copy of its body \(path) is missing" }
            guard info.st_mode & S_IFMT == S_IFREG, Int64(info.st_size) == size else {
                return "the copy of its body \(path) is damaged: \(info.st_size) bytes where \(size) were copied"
            }
        }
        return nil
    }

    /// Removes a row's copies (after its row was removed or given its outcome); nothing if it has none.
    func remove(_ id: String) {
        guard Self.isPlainName(id) else { return }
        Self.removeTree(folder(for: id))
    }

    /// Whether a committed copy without a live row may belong to a damaged database set aside beside the
    /// outbox (`outbox.sqlite.damaged-…`) that does not keep a copy of its own in its `-bodies` folder (an
    /// older version left every copy in `bodies/`; a set-aside may have failed to move or link one).
    private func mayBelongToASetAsideDatabase(_ name: String) -> Bool {
        let directory = folder.deletingLastPathComponent()
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        guard names.contains(where: { $0.hasPrefix(OutboxDatabase.setAsidePrefix) && !$0.hasSuffix("-bodies") }) else { return false }
        let keptAside = names.contains { aside in
            aside.hasPrefix(OutboxDatabase.setAsidePrefix) && aside.hasSuffix("-bodies")
                && FileManager.default.fileExists(atPath: directory.appendingPathComponent(aside).appendingPathComponent(name).path)
        }
        return !keptAside
    }

    /// Removes the copies no row needs: a copy left half-made by a process that died, and a row's
    /// folder whose row is gone or finished. A copy a live process is making is left alone, and so is
    /// everything when the rows cannot be read. A committed copy (no `.owner`) without a live row is kept
    /// while a damaged database set aside beside the outbox may name it and keeps no copy of its own.
    /// - Parameter liveRows: The ids of the rows that are neither removed nor finished (pending and
    ///   dead letters), read **after** the folder is listed; `nil` when they cannot be read.
    /// - Returns: The names removed.
    @discardableResult
    func sweep(liveRows: () -> Set<String>?) -> [String] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { return [] }
        var removed: [String] = []
        var candidates: [String] = []
        for name in names {
            if name.hasPrefix(Self.partialPrefix) {
                // `.partial.<pid>.<random>.<id>`: never a row's, and done with once its process is gone.
                let fields = name.dropFirst(Self.partialPrefix.count).split(separator: ".", maxSplits: 2)
                let maker = fields.count == 3 ? "\(fields[0]):\(fields[1])" : ""
                if !OutboxDatabase.isAlive(maker) {
                    Self.removeTree(folder.appendingPathComponent(name))
                    removed.append(name)
                }
                continue
            }
            guard Self.isPlainName(name) else { continue }
            // A copy whose row is being committed by a live process right now still has its `.owner`.
            let ownerFile = folder(for: name).appendingPathComponent(Self.ownerFileName)
            let maker = try? String(contentsOf: ownerFile, encoding: .utf8)
            if let maker, OutboxDatabase.isAlive(maker) { continue }
            // Without `.owner` its row was committed once: if a database was ever set aside here, the row may
            // be there (an older version left every copy behind; a set-aside may have failed to move one), and
            // the copy is kept. With a dead maker's `.owner`, no row was ever committed for it.
            if maker == nil, mayBelongToASetAsideDatabase(name) { continue }
            candidates.append(name)
        }
        // Rows read after the listing: a copy listed without a live `.owner` has its row committed by now, if it ever will.
        guard !candidates.isEmpty, let rows = liveRows() else { return removed }
        for name in candidates where !rows.contains(name) {
            Self.removeTree(folder(for: name))
            removed.append(name)
        }
        return removed
    }

    // MARK: Helpers

    /// The size of a regular file, from the file system.
    /// - Throws: ``NetworkError/Code/fileUnavailable`` when it is missing or not a regular file.
    static func regularFileSize(_ url: URL) throws(NetworkError) -> Int64 {
        var info = stat()
        guard stat(url.path, &info) == 0 else {
            let code = errno
            if code == ENOENT { throw NetworkError(.fileUnavailable, "the file \(url.path) does not exist") }
            throw sourceError(url, "measured", code)
        }
        guard info.st_mode & S_IFMT == S_IFREG else { throw NetworkError(.fileUnavailable, "the file \(url.path) is not a regular file") }
        return Int64(info.st_size)
    }

    static func tooLarge(_ size: Int64, limit: Int) -> NetworkError {
        NetworkError(
            .frozenBodyTooLarge,
            "the body is \(size) bytes, more than maximumFrozenBodySize (\(limit) bytes), so it cannot be frozen")
    }

    private static func sourceError(_ url: URL, _ doing: String, _ code: Int32) -> NetworkError {
        NetworkError(.fileUnavailable, "the file \(url.path) could not be \(doing) to freeze it: \(String(cString: strerror(code)))")
    }

    private func outboxError(_ doing: String, _ url: URL, _ code: Int32) -> NetworkError {
        NetworkError(
            .outboxUnavailable,
            "the copy of the body \(url.path) could not be \(doing): \(String(cString: strerror(code)))")
    }

    /// Creates a folder with owner-only permissions; returns `false` when it already existed.
    @discardableResult
    private func makeFolder(_ url: URL) throws(NetworkError) -> Bool {
        guard mkdir(url.path, 0o700) == 0 else {
            if errno == EEXIST { return false }
            throw outboxError("created", url, errno)
        }
        return true
    }

    private func writeOwner(in partial: URL) throws(NetworkError) {
        let url = partial.appendingPathComponent(Self.ownerFileName)
        let fd = open(url.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw outboxError("created", url, errno) }
        defer { close(fd) }
        let text = Array(owner.utf8)
        guard write(fd, text, text.count) == text.count else { throw outboxError("written", url, errno) }
    }

    /// Syncs a folder, so the names in it survive a power cut.
    private func sync(_ url: URL) throws(NetworkError) {
        let fd = open(url.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw outboxError("opened", url, errno) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw outboxError("synced", url, errno) }
    }

    static func removeTree(_ url: URL) {
        try? FileManager.default.removeItem(at: url)
    }
}
