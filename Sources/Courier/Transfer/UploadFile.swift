import Foundation
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A file open for reading while an upload (or a freeze) streams it, by descriptor; every system call on
/// NIO's blocking thread pool, never on the cooperative pool or the caller's thread.
///
/// It is opened non-blocking and must then be a regular file (`fstat`): a path swapped for a FIFO, a device
/// or a folder after the body was measured fails at once with ``NetworkError/Code/fileUnavailable``, where a
/// plain `open(2)` of a FIFO would wait for a writer forever, holding a pool thread (and, for a freeze, an
/// open database transaction). Symbolic links are followed, as they are when the body is measured: the
/// user named the path, and reading through a link writes nothing.
///
/// It is closed when its segment ends or fails, and by `deinit` (on the thread pool) when the stream is
/// abandoned half-way.
final class UploadFile {
    let url: URL
    /// The bytes the file must yield.
    let size: Int64
    private let descriptor: CInt
    private var isClosed = false

    private init(url: URL, descriptor: CInt, size: Int64) {
        self.url = url
        self.descriptor = descriptor
        self.size = size
    }

    /// Opens the regular file at `url`.
    /// - Parameter expectedSize: The size the body was measured with; the file's own size when `nil`.
    /// - Throws: ``NetworkError/Code/fileUnavailable`` when it is missing, unreadable or not a regular file.
    static func open(_ url: URL, expectedSize: Int64?) async throws -> UploadFile {
        let path = url.path
        let opened: Result<(CInt, Int64), NetworkError>
        do {
            opened = try await NIOThreadPool.singleton.runIfActive { openRegularFile(path) }
        } catch {
            throw FileErrors.unavailable(url, doing: "opened", error)
        }
        let (descriptor, size) = try opened.get()
        return UploadFile(url: url, descriptor: descriptor, size: expectedSize ?? size)
    }

    /// Up to `length` bytes from `offset`: fewer only at the end of the file.
    func read(at offset: Int64, length: Int) async throws -> ByteBuffer {
        let descriptor = descriptor
        let outcome: Result<ByteBuffer, POSIXError>
        do {
            outcome = try await NIOThreadPool.singleton.runIfActive { Self.readChunk(descriptor, at: offset, length: length) }
        } catch {
            throw FileErrors.unavailable(url, doing: "read", error)
        }
        switch outcome {
        case .success(let buffer): return buffer
        case .failure(let error): throw FileErrors.unavailable(url, doing: "read", error)
        }
    }

    /// Closes the file (once), even in a cancelled task.
    func close() async {
        guard !isClosed else { return }
        isClosed = true
        let descriptor = descriptor
        await uncancelled { _ = try? await NIOThreadPool.singleton.runIfActive { closeDescriptor(descriptor) } }
    }

    deinit {
        guard !isClosed else { return }
        let descriptor = descriptor
        NIOThreadPool.singleton.submit { _ in closeDescriptor(descriptor) }
    }

    /// Blocking: opens `path` for reading without waiting for a FIFO's writer, and keeps it only when it is
    /// a regular file (the one rule for every file Courier reads to send: uploads, and copies into the outbox).
    /// - Returns: The descriptor (the caller closes it) and the file's size, or a
    ///   ``NetworkError/Code/fileUnavailable`` error.
    static func openRegularFile(_ path: String) -> Result<(CInt, Int64), NetworkError> {
        let descriptor = openDescriptor(path)
        guard descriptor >= 0 else {
            let code = errno
            let reason = switch code {
            case ENOENT: "it does not exist"
            case EACCES, EPERM: "permission denied"
            default: String(cString: strerror(code))
            }
            return .failure(NetworkError(.fileUnavailable, "the file \(path) could not be opened: \(reason)",
                                         underlying: POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)))
        }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            let code = errno
            closeDescriptor(descriptor)
            return .failure(NetworkError(.fileUnavailable, "the file \(path) could not be measured: \(String(cString: strerror(code)))"))
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            closeDescriptor(descriptor)
            return .failure(NetworkError(.fileUnavailable, "the file \(path) is not a regular file (a FIFO, a device or a folder is never read)"))
        }
        // Reads of a regular file never wait on O_NONBLOCK; cleared anyway, so that a short read means the end.
        let flags = fcntl(descriptor, F_GETFL)
        if flags >= 0 { _ = fcntl(descriptor, F_SETFL, flags & ~O_NONBLOCK) }
        return .success((descriptor, Int64(info.st_size)))
    }

    /// Blocking: up to `length` bytes at `offset`, or the `errno` of a failed read.
    private static func readChunk(_ descriptor: CInt, at offset: Int64, length: Int) -> Result<ByteBuffer, POSIXError> {
        var buffer = ByteBufferAllocator().buffer(capacity: length)
        var total = 0
        while total < length {
            let want = length - total
            var failure: Int32 = 0
            let count = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: want) { bytes in
                let count = pread(descriptor, bytes.baseAddress, want, off_t(offset + Int64(total)))
                if count < 0 { failure = errno }
                return max(count, 0)
            }
            if failure == EINTR { continue }
            if failure != 0 { return .failure(POSIXError(POSIXErrorCode(rawValue: failure) ?? .EIO)) }
            if count == 0 { break }   // the end of the file
            total += count
        }
        return .success(buffer)
    }
}

/// Blocking `open(2)` for reading, non-blocking (a FIFO does not wait for a writer), close-on-exec.
private func openDescriptor(_ path: String) -> CInt {
    open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
}

/// Blocking `close(2)`.
private func closeDescriptor(_ descriptor: CInt) {
    _ = close(descriptor)
}
