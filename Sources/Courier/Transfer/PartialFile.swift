import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One open partial file of a download, by descriptor, and the blocking file work done on it. Every
/// function here blocks: call them on a thread pool (`NIOThreadPool.singleton`), never on the
/// cooperative pool.
///
/// The rules that keep a download from writing where it should not (issue 23, B1, B2, B7, B11):
/// - The partial is opened without following links (`O_NOFOLLOW`); a new one is created exclusively
///   (`O_CREAT|O_EXCL`), owner-only (0600). Anything that is not a regular file of one link (a symbolic
///   link, a FIFO, a device, a folder, a hard link to another file) is refused, never truncated.
/// - While it is written it holds an exclusive advisory lock (`flock`, non-blocking), so another process
///   downloading to the same file is refused ("busy") instead of truncating, resizing or removing it. A
///   resumable download takes it before it measures the file (``HeldPartialFile``) and keeps it to its end;
///   a held file is only ever cut down to the bytes it continues (``truncate(downTo:)``), never lengthened.
///   After locking, the path must still name the locked file (it may have been renamed into place or
///   removed meanwhile by the writer that held the lock); otherwise the open starts again.
/// - Before its rename into place the file is synced, given the mode of the file it replaces (or the
///   mode a new file gets), and checked to still be what the path names; the folder is synced after.
struct PartialFile: Sendable {
    /// Why a partial file cannot be used.
    enum Failure: Error, Sendable {
        /// Something other than a regular file of one link is at the path (a link, a FIFO, a device...).
        case notRegular(String)
        /// Another download (of this process or another) holds the partial file.
        case busy(String)
        /// A system call failed with `errno`.
        case system(String, Int32, String)
        /// The held partial file is shorter than the bytes the download continues: another program changed it.
        case changed(String)

        /// The failure as a typed error about `destination`.
        func networkError(destination: URL?) -> NetworkError {
            let place = destination?.path ?? "the destination"
            switch self {
            case .notRegular(let path):
                return NetworkError(.fileUnavailable, "cannot write \(place): \(path) is not a regular file of Courier's (a link, a device, a FIFO, a folder or another user's file); it was left alone")
            case .busy(let path):
                return NetworkError(.fileUnavailable, "cannot write \(place): the destination is busy, another download holds \(path)")
            case .changed(let path):
                return NetworkError(.fileUnavailable, "cannot write \(place): \(path) is shorter than when this download measured it (another program changed it); it was not lengthened")
            case .system(let call, let code, let path):
                let why: String
                switch code {
                case ENOENT: why = "its folder does not exist"
                case EACCES, EPERM: why = "it is not writable"
                case ENOSPC: why = "the disk is full"
                case EROFS: why = "its file system is read-only"
                case ENAMETOOLONG: why = "the name is too long"
                default: why = String(cString: strerror(code))
                }
                return NetworkError(.fileUnavailable, "cannot write \(place): \(why) (\(call) \(path))",
                                    underlying: POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO))
            }
        }
    }

    /// The partial file's path.
    let path: String
    /// The open, locked descriptor.
    let descriptor: Int32

    /// Blocking: opens (or creates) the partial file at `path` for writing, locks it and empties it.
    static func open(at path: String) throws(Failure) -> PartialFile {
        let (file, _) = try lock(at: path)
        guard ftruncate(file.descriptor, 0) == 0 else {
            let failure = Failure.system("ftruncate", errno, path)
            file.close()
            throw failure
        }
        return file
    }

    /// Blocking: opens (or creates, empty) the partial file at `path` for reading and writing and locks
    /// it, leaving its bytes as they are.
    /// - Returns: The locked file and its length, measured under the lock.
    /// - Throws: ``Failure/busy(_:)`` when another download holds it; ``Failure/notRegular(_:)``.
    static func lock(at path: String) throws(Failure) -> (file: PartialFile, length: Int64) {
        for _ in 0..<8 {
            var created = false
            var descriptor = Glue.open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0)
            if descriptor < 0, errno == ENOENT {
                descriptor = Glue.open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
                if descriptor < 0, errno == EEXIST { continue }   // created by someone else meanwhile
                created = true
            }
            guard descriptor >= 0 else {
                let code = errno
                // ELOOP: a symbolic link; ENXIO: a FIFO without reader; EISDIR: a folder.
                if code == ELOOP || code == ENXIO || code == EISDIR || code == EMLINK { throw .notRegular(path) }
                throw .system("open", code, path)
            }
            do throws(Failure) {
                var info = stat()
                guard fstat(descriptor, &info) == 0 else { throw Failure.system("fstat", errno, path) }
                // Ours only: a partial another user planted (in a shared folder) is neither written nor read.
                guard (info.st_mode & S_IFMT) == S_IFREG, info.st_nlink == 1, info.st_uid == geteuid() else {
                    throw Failure.notRegular(path)
                }
                guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
                    if errno == EWOULDBLOCK { throw Failure.busy(path) }
                    throw Failure.system("flock", errno, path)
                }
                guard names(descriptor, path) else {
                    _ = Glue.close(descriptor)
                    continue   // renamed into place or removed by the writer that held it: open anew
                }
                // An older partial: owner-only from now on, or not used at all.
                if !created, fchmod(descriptor, 0o600) != 0 { throw Failure.system("fchmod", errno, path) }
                // Measured under the lock: nobody else changes it from now on.
                guard fstat(descriptor, &info) == 0 else { throw Failure.system("fstat", errno, path) }
                return (PartialFile(path: path, descriptor: descriptor), Int64(info.st_size))
            } catch {
                _ = Glue.close(descriptor)
                throw error
            }
        }
        throw .busy(path)
    }

    /// Blocking: cuts the file to its first `length` bytes; never makes it longer.
    /// - Throws: ``Failure/changed(_:)`` when it holds fewer than `length` bytes.
    func truncate(downTo length: Int64) throws(Failure) {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw .system("fstat", errno, path) }
        guard Int64(info.st_size) >= length else { throw .changed(path) }
        if Int64(info.st_size) > length, ftruncate(descriptor, off_t(length)) != 0 { throw .system("ftruncate", errno, path) }
    }

    /// Blocking: the file's length now.
    func length() -> Int64 {
        var info = stat()
        return fstat(descriptor, &info) == 0 ? Int64(info.st_size) : 0
    }

    /// Blocking: removes the partial file at `path` unless another download holds it (or it is not a
    /// regular file: a link planted there is not followed and is left for whoever made it), and with it
    /// the resume record at `record`, removed under the same lock (no writer takes the partial and
    /// writes its record in between).
    /// - Returns: `false` when it was held by someone else (both stay).
    @discardableResult
    static func remove(at path: String, record: String? = nil) -> Bool {
        let descriptor = Glue.open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0)
        guard descriptor >= 0 else {
            if let record { unlink(record) }
            return true
        }
        defer { _ = Glue.close(descriptor) }
        var info = stat()
        if fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG {
            guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else { return false }
            if names(descriptor, path) { unlink(path) }
        }
        if let record { unlink(record) }
        return true
    }

    /// Blocking: removes the resume record at `record` unless another download holds the partial file
    /// at `partial` (it owns the record then), under the partial's lock like ``remove(at:record:)``.
    /// - Returns: `false` when the partial was held by someone else (the record stays).
    @discardableResult
    static func removeRecord(at record: String, besides partial: String) -> Bool {
        let descriptor = Glue.open(partial, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0)
        defer { if descriptor >= 0 { _ = Glue.close(descriptor) } }
        var info = stat()
        if descriptor >= 0, fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            return false
        }
        unlink(record)
        return true
    }

    /// Blocking: the size of the regular file at `path`, 0 when there is none.
    /// - Throws: ``Failure/notRegular(_:)`` when something else is there.
    static func length(at path: String) throws(Failure) -> Int64 {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            if errno == ENOENT { return 0 }
            throw .system("lstat", errno, path)
        }
        guard (info.st_mode & S_IFMT) == S_IFREG, info.st_nlink == 1, info.st_uid == geteuid() else { throw .notRegular(path) }
        return Int64(info.st_size)
    }

    /// Blocking: reads the regular file at `path`, at most `limit` bytes, without following links and
    /// without waiting on a FIFO.
    /// - Returns: The bytes; `nil` when there is no file or it is larger than `limit`.
    /// - Throws: ``Failure/notRegular(_:)`` when something other than a regular file is there.
    static func read(at path: String, limit: Int) throws(Failure) -> Data? {
        let descriptor = Glue.open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0)
        guard descriptor >= 0 else {
            if errno == ENOENT { return nil }
            if errno == ELOOP || errno == ENXIO || errno == EISDIR { throw .notRegular(path) }
            throw .system("open", errno, path)
        }
        defer { _ = Glue.close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw .system("fstat", errno, path) }
        // A record another user planted is not trusted (it would choose what is resumed).
        guard (info.st_mode & S_IFMT) == S_IFREG, info.st_uid == geteuid() else { throw .notRegular(path) }
        guard info.st_size <= limit else { return nil }
        var data = Data(count: limit + 1)
        var total = 0
        let failed = data.withUnsafeMutableBytes { buffer -> Bool in
            while total < buffer.count {
                let count = Glue.read(descriptor, buffer.baseAddress! + total, buffer.count - total)
                if count < 0, errno == EINTR { continue }
                if count < 0 { return true }
                if count == 0 { break }
                total += count
            }
            return false
        }
        guard !failed, total <= limit else { return nil }
        return data.prefix(total)
    }

    /// Blocking: writes `bytes` at `offset`.
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(Failure) {
        var done = 0
        while done < bytes.count {
            let count = pwrite(descriptor, bytes.baseAddress! + done, bytes.count - done, off_t(offset + Int64(done)))
            if count < 0 {
                if errno == EINTR { continue }
                throw .system("write", errno, path)
            }
            done += count
        }
    }

    /// Blocking: copies the first `length` bytes of `source` to this file.
    func copy(_ length: Int64, from source: PartialFile) throws(Failure) {
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var offset: Int64 = 0
        while offset < length {
            let wanted = Int(min(Int64(buffer.count), length - offset))
            let count = buffer.withUnsafeMutableBytes { pread(source.descriptor, $0.baseAddress!, wanted, off_t(offset)) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { throw .system("read", count < 0 ? errno : EIO, source.path) }
            let failure = buffer.withUnsafeBytes { bytes -> Failure? in
                do throws(Failure) { try write(UnsafeRawBufferPointer(rebasing: bytes[0..<count]), at: offset) } catch { return error }
                return nil
            }
            if let failure { throw failure }
            offset += Int64(count)
        }
    }

    /// Blocking: syncs the file, gives it the mode of the file at `destination` (kept when replacing
    /// one) or of a new file, renames it into place, syncs the folder. The descriptor stays open (and
    /// locked) until ``close()``.
    func commit(to destination: String) throws(Failure) {
        guard fsync(descriptor) == 0 else { throw .system("fsync", errno, path) }
        var existing = stat()
        let mode: mode_t
        if lstat(destination, &existing) == 0, (existing.st_mode & S_IFMT) == S_IFREG {
            mode = existing.st_mode & 0o7777
        } else {
            mode = 0o666 & ~Self.creationMask
        }
        guard fchmod(descriptor, mode) == 0 else { throw .system("fchmod", errno, path) }
        guard Self.names(descriptor, path) else { throw .busy(path) }
        guard rename(path, destination) == 0 else { throw .system("rename", errno, destination) }
        Self.syncFolder(of: destination)
    }

    /// Blocking: removes the partial file (when the path still names it), and first the resume record at
    /// `record` if given (it describes this file), keeping the descriptor open until ``close()``.
    func unlinkIfOwned(record: String? = nil) {
        guard Self.names(descriptor, path) else { return }
        if let record { unlink(record) }
        unlink(path)
    }

    /// Blocking: closes the descriptor, which releases the lock.
    func close() {
        _ = Glue.close(descriptor)
    }

    /// Blocking: syncs the folder holding `path` (a rename is durable once its folder is).
    static func syncFolder(of path: String) {
        let folder = (path as NSString).deletingLastPathComponent
        let descriptor = Glue.open(folder.isEmpty ? "." : folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0)
        guard descriptor >= 0 else { return }
        _ = fsync(descriptor)
        _ = Glue.close(descriptor)
    }

    /// Whether `path` names the file open as `descriptor` (not a link, not another file).
    private static func names(_ descriptor: Int32, _ path: String) -> Bool {
        var open = stat()
        var named = stat()
        guard fstat(descriptor, &open) == 0, lstat(path, &named) == 0 else { return false }
        return open.st_dev == named.st_dev && open.st_ino == named.st_ino
    }

    /// The process's file creation mask, read without changing it (Linux: `/proc/self/status`); 022
    /// when it cannot be read (`umask(2)` can only be read by setting it, which races other threads).
    static let creationMask: mode_t = {
        #if os(Linux)
        if let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Umask:") }),
            let mask = mode_t(line.dropFirst("Umask:".count).trimmingCharacters(in: .whitespaces), radix: 8)
        {
            return mask
        }
        #endif
        return 0o022
    }()
}

/// The C library's calls by names that do not clash with ``PartialFile``'s methods.
private enum Glue {
    static func open(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 {
        #if canImport(Glibc)
        Glibc.open(path, flags, mode)
        #elseif canImport(Musl)
        Musl.open(path, flags, mode)
        #else
        Darwin.open(path, flags, mode)
        #endif
    }

    static func read(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
        #if canImport(Glibc)
        Glibc.read(descriptor, buffer, count)
        #elseif canImport(Musl)
        Musl.read(descriptor, buffer, count)
        #else
        Darwin.read(descriptor, buffer, count)
        #endif
    }

    static func close(_ descriptor: Int32) -> Int32 {
        #if canImport(Glibc)
        Glibc.close(descriptor)
        #elseif canImport(Musl)
        Musl.close(descriptor)
        #else
        Darwin.close(descriptor)
        #endif
    }
}
