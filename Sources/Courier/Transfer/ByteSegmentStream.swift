import Foundation
import NIOCore
import NIOFileSystem

/// A request body laid out as segments, bytes in memory and files on disk, streamed in chunks of at
/// most `chunkSize` bytes: the engine under ``MultipartForm/Stream`` and the file form of `RequestBodySource`.
///
/// Memory segments that follow each other are packed into one chunk (a part's closing CRLF, the next
/// part's headers and a short field travel together). A file segment is read at explicit offsets on
/// NIOFileSystem's thread pool, one chunk per `next()`, never whole, and never on the cooperative pool
/// or the caller's thread; the chunk is the buffer NIOFileSystem read into, not a copy.
///
/// A file yields exactly its expected size (measured when the body's length was computed, or when the
/// file is opened if it was not): that length is what the request declared, so it is what is sent. A
/// file that ends early (it shrank, or was truncated while being sent) fails the stream with
/// ``NetworkError/Code/fileUnavailable`` naming the file, before the request is complete, since the
/// `Content-Length` promised to the server cannot be kept. A file that grew after it was measured is
/// not an error: its first `expectedSize` bytes are sent, whole, and the request succeeds or fails on
/// its own (a log file being appended to is uploaded as it was when measured). A file that cannot be
/// opened (it disappeared, or may not be read) fails like one that shrank, and so does a path that no
/// longer names a regular file (swapped for a FIFO, which would otherwise wait for a writer forever).
struct ByteSegmentStream: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    typealias Failure = any Error

    /// One run of bytes of the body.
    enum Segment: Sendable {
        /// Bytes in memory.
        case bytes(Data)
        /// A file's whole contents, of `expectedSize` bytes when known.
        case file(URL, expectedSize: Int64?)
    }

    let segments: [Segment]
    let chunkSize: Int

    /// Creates a stream.
    /// - Parameters:
    ///   - segments: The body's segments, in order.
    ///   - chunkSize: The largest chunk to yield; at least 1.
    init(segments: [Segment], chunkSize: Int) {
        precondition(chunkSize > 0, "the chunk size must be positive")
        self.segments = segments
        self.chunkSize = chunkSize
    }

    func makeAsyncIterator() -> Iterator {
        Iterator(segments: segments, chunkSize: chunkSize)
    }

    /// Reads the segments one chunk at a time.
    struct Iterator: AsyncIteratorProtocol {
        typealias Element = ByteBuffer
        typealias Failure = any Error

        private let segments: [Segment]
        private let chunkSize: Int
        private var index = 0
        /// The position in the current segment.
        private var offset: Int64 = 0
        private var file: UploadFile?
        private var isFinished = false

        fileprivate init(segments: [Segment], chunkSize: Int) {
            self.segments = segments
            self.chunkSize = chunkSize
        }

        mutating func next() async throws -> ByteBuffer? {
            guard !isFinished else { return nil }
            do {
                return try await produce()
            } catch {
                isFinished = true
                if let file { await file.close() }   // closes even in a cancelled task
                file = nil
                throw error
            }
        }

        private mutating func produce() async throws -> ByteBuffer? {
            var buffer = ByteBuffer()
            while index < segments.count {
                switch segments[index] {
                case .bytes(let data):
                    let remaining = data.count - Int(offset)
                    if remaining == 0 {
                        advance()
                        continue
                    }
                    let room = chunkSize - buffer.readableBytes
                    if room == 0 { return buffer }
                    if buffer.capacity == 0 { buffer.reserveCapacity(Swift.min(chunkSize, remaining)) }
                    let start = data.startIndex + Int(offset)
                    let count = Swift.min(room, remaining)
                    buffer.writeBytes(data[start..<(start + count)])
                    offset += Int64(count)
                case .file(let url, let expectedSize):
                    // A file's chunks go as NIOFileSystem read them: flush what is packed first.
                    if buffer.readableBytes > 0 { return buffer }
                    if let chunk = try await readFile(url, expectedSize: expectedSize) { return chunk }
                    advance()
                }
            }
            isFinished = true
            return buffer.readableBytes > 0 ? buffer : nil
        }

        private mutating func advance() {
            index += 1
            offset = 0
        }

        /// The next chunk of the file, or `nil` once all of it went (and it was closed).
        private mutating func readFile(_ url: URL, expectedSize: Int64?) async throws -> ByteBuffer? {
            let open: UploadFile
            if let file {
                open = file
            } else {
                open = try await UploadFile.open(url, expectedSize: expectedSize)
                file = open
            }
            let remaining = open.size - offset
            if remaining > 0 {
                let chunk = try await open.read(at: offset, length: Int(Swift.min(Int64(chunkSize), remaining)))
                guard chunk.readableBytes > 0 else {
                    throw NetworkError(
                        .fileUnavailable,
                        "the file \(url.path) shrank while it was being sent: it ended after \(offset) of \(open.size) bytes")
                }
                offset += Int64(chunk.readableBytes)
                return chunk
            }
            // Every declared byte went: bytes appended since the file was measured are not part of this
            // request (the request was delivered whole; failing it now would make a retry send it twice).
            file = nil
            await open.close()
            return nil
        }
    }
}

/// The ``NetworkError/Code/fileUnavailable`` errors of the transfer components.
enum FileErrors {
    /// The size of the regular file at `url`, asked on the file system's thread pool.
    /// - Throws: ``NetworkError/Code/fileUnavailable`` when it is missing or not a regular file.
    static func regularFileSize(_ url: URL) async throws(NetworkError) -> Int64 {
        let info: FileInfo?
        do {
            info = try await FileSystem.shared.info(forFileAt: FilePath(url.path))
        } catch {
            throw unavailable(url, doing: "measured", error)
        }
        guard let info else { throw NetworkError(.fileUnavailable, "the file \(url.path) does not exist") }
        guard info.type == .regular else {
            throw NetworkError(.fileUnavailable, "the file \(url.path) is not a regular file (\(info.type))")
        }
        return info.size
    }

    /// A file operation that failed, as a typed error naming the file.
    /// - Parameters:
    ///   - url: The file.
    ///   - doing: What was being done, in the past participle (`"opened"`, `"read"`).
    ///   - error: The file system's error.
    /// - Returns: The error.
    static func unavailable(_ url: URL, doing: String, _ error: any Error) -> NetworkError {
        if let error = error as? NetworkError { return error }
        var reason = String(describing: error)
        if let error = error as? FileSystemError {
            switch error.code {
            case .notFound: reason = "it does not exist"
            case .permissionDenied: reason = "permission denied"
            case .resourceExhausted: reason = "the disk is full"
            default: reason = error.message
            }
        }
        return NetworkError(.fileUnavailable, "the file \(url.path) could not be \(doing): \(reason)", underlying: error)
    }
}
