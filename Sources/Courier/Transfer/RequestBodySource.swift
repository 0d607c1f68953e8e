package import Foundation
package import NIOCore
import NIOFileSystem

/// Where a request body's bytes come from, and how they are streamed to the transport.
///
/// `RequestBody` keeps one of these. Before each exchange the executor calls ``prepare()`` (which
/// measures files, off the caller's thread) and reads ``length`` for `Content-Length`; each attempt then
/// sends ``makeStream()``. A replayable source (data, file, multipart) yields the same bytes every time,
/// so a 307/308 redirect or a retry can send it again; a one-shot stream cannot, and its second
/// ``makeStream()`` fails with ``NetworkError/Code/bodyNotReplayable`` (check ``isReplayable`` first).
package struct RequestBodySource: Sendable {
    enum Kind: Sendable {
        case data(Data)
        case file(URL)
        case multipart(MultipartForm)
        case stream(OneShotByteStream)
        /// A sequence that starts over each time it is iterated (a store's chunks of a frozen body).
        case replayable(ErasedByteStream)
    }

    let kind: Kind
    /// The body's length in bytes when known: at once for data and for a stream given a length; for a
    /// file or a form, after ``prepare()``.
    package private(set) var length: Int64?
    /// The sizes the file (file body) or the files (form) are held to, from ``prepare()``.
    private var measurement: MultipartForm.Measurement?
    /// Trailer fields sent after the body, asked for again by each attempt once the body has gone; a body
    /// with trailers is sent without `Content-Length`.
    var trailers: RequestTrailers?
    /// The chunk size used when reading files: 256 KiB, so a large upload costs few steps through the
    /// stream (each one a read, a task and a write) while its memory stays a few chunks whatever its size.
    var chunkSize = 256 * 1024

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

    /// A sequence that yields the same bytes from the start each time it is iterated (a frozen body a
    /// store reads back in chunks), sent as often as needed.
    /// - Parameters:
    ///   - sequence: The chunks; each iteration starts over.
    ///   - length: The total, for `Content-Length`.
    /// - Returns: A replayable source of known length.
    static func replayable<Chunks: AsyncSequence & Sendable>(_ sequence: Chunks, length: Int64) -> RequestBodySource
    where Chunks.Element == ByteBuffer {
        RequestBodySource(kind: .replayable(ErasedByteStream(base: sequence)), length: length)
    }

    /// Whether the body is a file or a multipart form (read from files when sent), as opposed to bytes in
    /// memory or a caller's stream.
    package var isFileOrForm: Bool {
        switch kind {
        case .file, .multipart: true
        case .data, .stream, .replayable: false
        }
    }

    /// The bytes, for a source of bytes in memory.
    package var bytes: Data? {
        if case .data(let data) = kind { return data }
        return nil
    }

    /// Whether the body can be sent more than once (a redirect, a retry, freezing).
    package var isReplayable: Bool {
        if case .stream = kind { return false }
        return true
    }

    /// Measures what must be measured before sending: a file's size, a form's files and total. Call it
    /// before each exchange; the stream that follows holds files to the sizes measured here.
    /// - Throws: ``NetworkError/Code/fileUnavailable`` when a file is missing or is not a regular file.
    package mutating func prepare() async throws(NetworkError) {
        switch kind {
        case .data, .stream, .replayable:
            return
        case .file(let url):
            let size = try await FileErrors.regularFileSize(url)
            measurement = MultipartForm.Measurement(length: size, fileSizes: [url.path: size])
            length = size
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
    package func makeStream() -> any AsyncSequence<ByteBuffer, any Error> & Sendable {
        switch kind {
        case .data(let data):
            return ByteSegmentStream(segments: [.bytes(data)], chunkSize: chunkSize)
        case .file(let url):
            return ReadAhead(base: ByteSegmentStream(
                segments: [.file(url, expectedSize: measurement?.fileSizes[url.path])], chunkSize: chunkSize))
        case .multipart(let form):
            if let measurement { return ReadAhead(base: form.bodyStream(chunkSize: chunkSize, measurement: measurement)) }
            return ReadAhead(base: form.bodyStream(chunkSize: chunkSize))
        case .stream(let oneShot):
            return oneShot.take()
        case .replayable(let stream):
            return stream
        }
    }
}
