#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Courier
import Foundation
import NIOConcurrencyHelpers

/// Where `-o FILE` writes a body, and how.
///
/// A regular file (or one that does not exist yet) is written with the download machinery: beside it
/// under a temporary name, renamed into place when the whole body is there. Anything else cannot be
/// replaced by a rename (`/dev/null`, `/dev/stdout`, a named pipe another program reads): it is opened
/// and written in place as the body arrives, as `-o` always did with such targets.
enum OutputFile: Equatable {
    /// Written beside the file and renamed into place (``NetworkOperation/download(to:resumable:)-(URL,_)``).
    /// A symbolic link to a regular file names the file it points to, so the link stays a link.
    case replaced(URL)
    /// Opened and written in place, in the order the bytes arrive: a character device, a named pipe, a
    /// socket, a symbolic link to one of them or to nothing yet.
    case inPlace(String)

    /// The path written to.
    var path: String {
        switch self {
        case .replaced(let file): file.path
        case .inPlace(let path): path
        }
    }

    /// How `-o path` is written, from what is at `path` now.
    /// - Parameter path: The path given to `-o`.
    /// - Returns: ``replaced(_:)`` for a regular file or nothing (a folder that does not exist is
    ///   reported by the download), ``inPlace(_:)`` for everything else.
    static func at(_ path: String) -> OutputFile {
        // A process's own descriptors (`/dev/stdout`, `/dev/fd/1`, `/proc/self/fd/1`) may lead to a regular
        // file (`>> log.txt`): replacing it would lose what it held. They are written in place.
        if path.hasPrefix("/dev/") || path.hasPrefix("/proc/") || isStandardOutputOrError(path) { return .inPlace(path) }
        var info = stat()
        guard lstat(path, &info) == 0 else { return .replaced(URL(fileURLWithPath: path)) }
        switch info.st_mode & S_IFMT {
        case S_IFREG:
            return .replaced(URL(fileURLWithPath: path))
        case S_IFLNK:
            var target = stat()
            guard stat(path, &target) == 0, target.st_mode & S_IFMT == S_IFREG, let resolved = realpath(path, nil) else {
                return .inPlace(path)
            }
            defer { free(resolved) }
            return .replaced(URL(fileURLWithPath: String(cString: resolved)))
        default:
            return .inPlace(path)
        }
    }

    /// How a file named after the URL (`download` without `-o`) is written: as an entry of the current
    /// folder, replaced once complete, and nothing else. Unlike `-o`, nothing already there is followed or
    /// written into: a symbolic link under that name (planted in a shared folder, pointing out of it), a
    /// named pipe, a device or a folder is refused.
    /// - Parameter name: One entry of the current folder (``OptionValue/downloadFileName(percentEncodedPath:)``).
    /// - Returns: ``replaced(_:)`` for a regular file or nothing; `nil` for anything else.
    static func inCurrentFolder(_ name: String) -> OutputFile? {
        var info = stat()
        guard lstat(name, &info) == 0, info.st_mode & S_IFMT != S_IFREG else { return .replaced(URL(fileURLWithPath: name)) }
        return nil
    }

    /// Whether `path` is the file standard output or standard error is writing to (same device and inode).
    private static func isStandardOutputOrError(_ path: String) -> Bool { standardDescriptor(for: path) != nil }

    /// 1 or 2 when `path` is what standard output or standard error writes to, else `nil`.
    fileprivate static func standardDescriptor(for path: String) -> Int32? {
        var target = stat()
        guard stat(path, &target) == 0 else { return nil }
        for descriptor: Int32 in [1, 2] {
            var open = stat()
            if fstat(descriptor, &open) == 0, open.st_dev == target.st_dev, open.st_ino == target.st_ino { return descriptor }
        }
        return nil
    }

    /// The queue the in-place writes block on: never the cooperative pool (opening a named pipe waits
    /// for its reader, a write waits for room).
    fileprivate static let queue = DispatchQueue(label: "courier.cli.output")

    fileprivate static func failure(_ path: String, errno code: Int32) -> CLIFailure {
        CLIFailure(exitCode: 1, message: "cannot write \(path): \(String(cString: strerror(code)))")
    }

    /// Runs blocking work on ``queue`` and waits for it without blocking a thread of the pool.
    static func onQueue<Value: Sendable>(_ work: @escaping @Sendable () -> Value) async -> Value {
        await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: work()) }
        }
    }
}

/// Writes a response body to a file in place (``OutputFile/inPlace(_:)``), chunk by chunk as it arrives
/// (constant memory), its blocking opens and writes on ``OutputFile``'s queue. A body that cannot be
/// written cancels the operation; ``failure`` then says why, as soon as the operation has failed.
final class InPlaceWriter: Sendable {
    /// The path that names the program's own standard output.
    static let standardOutput = "/dev/stdout"

    /// The `-o` path.
    let path: String
    private let recorded = NIOLockedValueBox<CLIFailure?>(nil)
    private let task = NIOLockedValueBox<Task<Void, Never>?>(nil)
    /// Whether the response's head goes first (`-i` with the body streamed to standard output).
    private let writesHead: Bool
    /// Whether this is `get`'s standard output (not an `-o` path).
    private let writesToStandardOutput: Bool

    /// Why the body could not be written (exit 1, naming the file), once it is known.
    var failure: CLIFailure? { recorded.withLockedValue { $0 } }

    /// Starts writing an operation's body stream to `path`; the file is opened (created and emptied if it
    /// is a file) at once, before the first chunk is read.
    /// - Parameters:
    ///   - operation: The operation, not yet enqueued.
    ///   - path: The `-o` path.
    ///   - writesHead: Whether the status line and header fields go before the body (`-i`).
    ///   - isStandardOutput: Whether this is `get`'s own output (not an `-o` path): a reader that goes away
    ///     then ends the program quietly with status 23.
    init(_ operation: NetworkOperation, to path: String, writesHead: Bool = false, isStandardOutput: Bool = false) {
        self.path = path
        self.writesHead = writesHead
        writesToStandardOutput = isStandardOutput
        let stream = operation.bodyStream
        task.withLockedValue { $0 = Task { [self] in await write(stream, for: operation) } }
    }

    /// Waits until every byte that arrived is written (or writing failed).
    func finish() async {
        await task.withLockedValue { $0 }?.value
    }

    private func write(_ stream: ResponseBodyStream, for operation: NetworkOperation) async {
        let path = self.path
        let (descriptor, openError) = await OutputFile.onQueue { () -> (Int32, Int32) in
            // Standard output or error itself (`-o /dev/stdout >> log.txt`): its own descriptor, so an
            // appended file is appended to, not emptied by opening it again.
            let descriptor = OutputFile.standardDescriptor(for: path).map { dup($0) }
                ?? open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o666)
            return (descriptor, descriptor < 0 ? errno : 0)
        }
        guard descriptor >= 0 else { return fail(OutputFile.failure(path, errno: openError), operation) }
        defer { _ = close(descriptor) }
        var headPending = writesHead
        // The head as the body starts (a streamed body has it before its first chunk), or at the end of an
        // empty one.
        func writeHead() async -> Int32? {
            guard headPending, let head = operation.responseHead else { return nil }
            headPending = false
            let text = ResponsePrinter.head(status: head.status, headers: head.headerFields, version: operation.responseVersion)
            return await OutputFile.onQueue { StandardStream.writeAll(Data(text.utf8), to: descriptor) }
        }
        do {
            for try await chunk in stream {
                if let code = await writeHead() { return fail(failure(errno: code), operation) }
                if let code = await OutputFile.onQueue({ StandardStream.writeAll(chunk, to: descriptor) }) {
                    return fail(failure(errno: code), operation)
                }
            }
            if let code = await writeHead() { return fail(failure(errno: code), operation) }
        } catch {
            // The operation failed: its own error is what the command reports.
        }
    }

    /// Why a write failed: standard output whose reader went away (`courier get URL | head`) ends the
    /// program quietly with status 23, as every other write to it does; a file names itself.
    private func failure(errno code: Int32) -> CLIFailure {
        if code == EPIPE, writesToStandardOutput { return CLIFailure(exitCode: StandardStream.brokenPipeStatus, message: "") }
        return OutputFile.failure(path, errno: code)
    }

    /// Records why, then cancels the operation (so whoever hears its failure finds the reason here).
    private func fail(_ failure: CLIFailure, _ operation: NetworkOperation) {
        recorded.withLockedValue { $0 = failure }
        operation.cancel()
    }
}
