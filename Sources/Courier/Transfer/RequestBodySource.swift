import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOFileSystem

/// Where a request body's bytes come from, and how they are streamed to the transport.
///
/// `RequestBody` keeps one of these. Before each exchange the executor calls ``prepare()`` (which
/// measures files, off the caller's thread) and reads ``length`` for `Content-Length`; each attempt then
/// sends ``makeStream()``. A replayable source (data, file, multipart) yields the same bytes every time,
/// so a 307/308 redirect or a retry can send it again; a one-shot stream cannot, and its second
/// ``makeStream()`` fails with ``NetworkError/Code/bodyNotReplayable`` (check ``isReplayable`` first).
struct RequestBodySource: Sendable {
    enum Kind: Sendable {
        case data(Data)
        case file(URL)
        case multipart(MultipartForm)
        case stream(OneShotByteStream)
    }

    let kind: Kind
    /// The body's length in bytes when known: at once for data and for a stream given a length; for a
    /// file or a form, after ``prepare()``.
    private(set) var length: Int64?
    /// The sizes the file (file body) or the files (form) are held to, from ``prepare()``.
    private var measurement: MultipartForm.Measurement?
    /// The chunk size used when reading files.
    var chunkSize = 64 * 1024

    private init(kind: Kind, length: Int64?) {
        self.kind = kind
        self.length = length
    }

    /// Bytes in memory.
    /// - Parameter data: The bytes.
    /// - Returns: A replayable source of known length.
    static func data(_ data: Data) -> RequestBodySource { RequestBodySource(kind: .data(data), length: Int64(data.count)) }

    /// A file's contents, read in chunks when sent; its length comes from ``prepare()``.
    /// - Parameter url: The file's URL.
    /// - Returns: A replayable source.
    static func file(_ url: URL) -> RequestBodySource { RequestBodySource(kind: .file(url), length: nil) }

    /// A `multipart/form-data` form; its length comes from ``prepare()``.
    /// - Parameter form: The form.
    /// - Returns: A replayable source.
    static func multipart(_ form: MultipartForm) -> RequestBodySource { RequestBodySource(kind: .multipart(form), length: nil) }

    /// A caller's sequence of buffers, sent once.
    /// - Parameters:
    ///   - sequence: The chunks.
    ///   - length: The total, for `Content-Length`; `nil` sends the body chunked.
    /// - Returns: A one-shot source.
    static func stream<Chunks: AsyncSequence & Sendable>(_ sequence: Chunks, length: Int64?) -> RequestBodySource
    where Chunks.Element == ByteBuffer {
        RequestBodySource(kind: .stream(OneShotByteStream(ErasedByteStream(base: sequence))), length: length)
    }

    /// A caller's sequence of byte arrays, sent once.
    /// - Parameters:
    ///   - sequence: The chunks.
    ///   - length: The total, for `Content-Length`; `nil` sends the body chunked.
    /// - Returns: A one-shot source.
    static func stream<Chunks: AsyncSequence & Sendable>(_ sequence: Chunks, length: Int64?) -> RequestBodySource
    where Chunks.Element == [UInt8] {
        RequestBodySource(kind: .stream(OneShotByteStream(ErasedByteStream(bytes: sequence))), length: length)
    }

    /// Whether the body can be sent more than once (a redirect, a retry, freezing).
    var isReplayable: Bool {
        if case .stream = kind { return false }
        return true
    }

    /// Measures what must be measured before sending: a file's size, a form's files and total. Call it
    /// before each exchange; the stream that follows holds files to the sizes measured here.
    /// - Throws: ``NetworkError/Code/fileUnavailable`` when a file is missing or is not a regular file.
    mutating func prepare() async throws(NetworkError) {
        switch kind {
        case .data, .stream:
            return
        case .file(let url):
            let info: FileInfo?
            do {
                info = try await FileSystem.shared.info(forFileAt: FilePath(url.path))
            } catch {
                throw FileErrors.unavailable(url, doing: "measured", error)
            }
            guard let info else { throw NetworkError(.fileUnavailable, "the file \(url.path) does not exist") }
            guard info.type == .regular else {
                throw NetworkError(.fileUnavailable, "the file \(url.path) is not a regular file (\(info.type))")
            }
            measurement = MultipartForm.Measurement(length: info.size, fileSizes: [url.path: info.size])
            length = info.size
        case .multipart(let form):
            let measured = try await form.measure()
            measurement = measured
            length = measured.length
        }
    }

    /// The body's bytes for one attempt.
    ///
    /// A replayable source returns a fresh sequence each time; a one-shot stream returns the caller's
    /// sequence the first time and, after that, a sequence that fails at once with
    /// ``NetworkError/Code/bodyNotReplayable``.
    /// - Returns: The chunks.
    func makeStream() -> any AsyncSequence<ByteBuffer, any Error> & Sendable {
        switch kind {
        case .data(let data):
            return ByteSegmentStream(segments: [.bytes(data)], chunkSize: chunkSize)
        case .file(let url):
            return ByteSegmentStream(
                segments: [.file(url, expectedSize: measurement?.fileSizes[url.path])], chunkSize: chunkSize)
        case .multipart(let form):
            if let measurement { return form.bodyStream(chunkSize: chunkSize, measurement: measurement) }
            return form.bodyStream(chunkSize: chunkSize)
        case .stream(let oneShot):
            return oneShot.take()
        }
    }
}

/// A caller's stream that may be taken once. Later takers get a sequence that fails with
/// ``NetworkError/Code/bodyNotReplayable``.
final class OneShotByteStream: Sendable {
    private let stream: NIOLockedValueBox<ErasedByteStream?>

    init(_ stream: ErasedByteStream) {
        self.stream = NIOLockedValueBox(stream)
    }

    /// The stream the first time, a failing one after.
    func take() -> any AsyncSequence<ByteBuffer, any Error> & Sendable {
        if let stream = stream.withLockedValue({ value in defer { value = nil }; return value }) { return stream }
        return FailingByteStream(
            error: NetworkError(
                .bodyNotReplayable,
                "the request body is a one-shot stream that was already sent; it cannot be sent again (a 307/308 redirect, a retry or freezing needed it)"))
    }
}

/// Any sendable sequence of buffers or byte arrays, as buffers with untyped errors.
struct ErasedByteStream: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    typealias Failure = any Error

    private let makeNext: @Sendable () -> (() async throws -> ByteBuffer?)

    init<Base: AsyncSequence & Sendable>(base: Base) where Base.Element == ByteBuffer {
        makeNext = {
            let box = IteratorBox(base.makeAsyncIterator())
            return { try await box.next() }
        }
    }

    init<Base: AsyncSequence & Sendable>(bytes base: Base) where Base.Element == [UInt8] {
        makeNext = {
            let box = IteratorBox(base.makeAsyncIterator())
            return { try await box.next().map { ByteBuffer(bytes: $0) } }
        }
    }

    func makeAsyncIterator() -> Iterator { Iterator(advance: makeNext()) }

    struct Iterator: AsyncIteratorProtocol {
        typealias Element = ByteBuffer
        typealias Failure = any Error
        let advance: () async throws -> ByteBuffer?
        mutating func next() async throws -> ByteBuffer? { try await advance() }
    }
}

/// Holds a base iterator so that a closure can advance it; used by one consumer at a time, as any
/// iterator is (it is not `Sendable`, and never leaves the iterating task).
private final class IteratorBox<Base: AsyncIteratorProtocol> {
    private var base: Base
    init(_ base: Base) { self.base = base }
    func next() async throws -> Base.Element? { try await base.next() }
}

/// A sequence that fails at its first element.
struct FailingByteStream: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    typealias Failure = any Error
    let error: NetworkError

    func makeAsyncIterator() -> Iterator { Iterator(error: error) }

    struct Iterator: AsyncIteratorProtocol {
        typealias Element = ByteBuffer
        typealias Failure = any Error
        let error: NetworkError
        mutating func next() async throws -> ByteBuffer? { throw error }
    }
}
