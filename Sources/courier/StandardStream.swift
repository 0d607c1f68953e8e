#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Standard output or standard error, written with `write(2)`.
///
/// `FileHandle.write` crashes the process on Linux when the reader has gone (`courier get URL | head`),
/// and buffered `print` output would interleave badly with unbuffered writes. Every byte the CLI
/// writes goes through here: a closed pipe ends the program quietly with status 23, as curl does.
struct StandardStream: Sendable {
    /// The status the program exits with when the reader of its output has gone (curl's "write error").
    static let brokenPipeStatus: Int32 = 23

    /// The file descriptor written to.
    let descriptor: Int32

    /// Standard output.
    static let standardOutput = StandardStream(descriptor: 1)
    /// Standard error.
    static let standardError = StandardStream(descriptor: 2)

    /// Whether the descriptor is a terminal (`isatty`).
    var isTerminal: Bool { isatty(descriptor) == 1 }

    /// Stops a write to a closed pipe from killing the process with `SIGPIPE`: the write fails with
    /// `EPIPE` instead, which ``write(_:)-(Data)`` turns into exit status 23. Call once at start-up.
    static func ignoreBrokenPipeSignal() {
        signal(SIGPIPE, SIG_IGN)
    }

    /// Writes `text` and a newline.
    func line(_ text: String) {
        write(Data((text + "\n").utf8))
    }

    /// Writes `text` as UTF-8.
    func write(_ text: String) {
        write(Data(text.utf8))
    }

    /// Writes every byte of `data` to `descriptor`, retrying short and interrupted writes and waiting
    /// when a non-blocking descriptor (one inherited from the shell) is full.
    /// - Returns: `errno` of the write that failed, or `nil` when every byte was written.
    static func writeAll(_ data: Data, to descriptor: Int32) -> Int32? {
        data.withUnsafeBytes { buffer -> Int32? in
            guard var pointer = buffer.baseAddress else { return nil }
            var remaining = buffer.count
            while remaining > 0 {
                #if canImport(Glibc)
                let written = Glibc.write(descriptor, pointer, remaining)
                #elseif canImport(Musl)
                let written = Musl.write(descriptor, pointer, remaining)
                #else
                let written = Darwin.write(descriptor, pointer, remaining)
                #endif
                if written < 0 {
                    if errno == EINTR { continue }
                    if errno == EAGAIN {
                        var request = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
                        _ = poll(&request, 1, -1)
                        continue
                    }
                    return errno
                }
                remaining -= written
                pointer += written
            }
            return nil
        }
    }

    /// Writes every byte, retrying short and interrupted writes. When the reader has gone (`EPIPE`) the
    /// program exits at once with status 23 and no message; on any other error the rest is dropped.
    func write(_ data: Data) {
        guard !data.isEmpty else { return }
        let failure = Self.writeAll(data, to: descriptor)
        if failure == EPIPE { exit(Self.brokenPipeStatus) }
    }
}
