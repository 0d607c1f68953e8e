public import Foundation
public import NIOCore
import NIOConcurrencyHelpers
import NIOFileSystem

/// A `multipart/form-data` body (RFC 7578): text fields, bytes and files, streamed part by part.
///
/// Files are never read whole: ``contentLength()`` measures them without reading, and
/// ``bodyStream(chunkSize:)`` reads them in chunks as the body is sent, so a 1 GiB upload costs a chunk
/// of memory and its first byte leaves at once.
///
/// ```swift
/// var form = MultipartForm()
/// form.addField("Holiday", name: "album")
/// form.addFile(URL(filePath: "/tmp/beach.jpg"), name: "photo")   // image/jpeg, filename "beach.jpg"
/// form.addData(thumbnail, name: "thumb", filename: "thumb.png")
/// let length = try await form.contentLength()
/// for try await chunk in form.bodyStream() { send(chunk) }
/// ```
///
/// **The boundary** is `courier-` and 128 random bits in hex unless you choose one. It never occurs in
/// the fields and data of the form: each one added is checked, and the boundary is drawn again (even
/// one you chose) when it occurs, so read ``boundary`` and ``contentType`` after adding the parts.
/// Files are not read in advance to check; for them the 128 random bits are relied on, a chance of
/// about 2⁻¹²⁸ per position.
///
/// **Names and file names** are quoted, with `"`, CR and LF percent-encoded as browsers do (RFC 7578
/// §4.2, the WHATWG form encoding); other characters, UTF-8 included, are sent as they are.
public struct MultipartForm: Sendable {
    /// The delimiter between parts, without its leading `--`.
    public private(set) var boundary: String
    /// The parts, in order (read by the outbox to freeze a form: see `FrozenBody`).
    private(set) var parts: [Part] = []
    /// File sizes measured by the last ``contentLength()`` of this form or a copy, by path: the sizes the
    /// stream then holds each file to.
    private let measuredSizes = NIOLockedValueBox<[String: Int64]>([:])

    /// Creates an empty form.
    /// - Parameter boundary: The delimiter between parts: 1 to 70 characters of RFC 2046's `bchars`
    ///   (letters, digits, `'()+_,-./:=?` and space, not ending in a space). Random when omitted, which
    ///   is what you want unless a server insists on a fixed one.
    public init(boundary: String? = nil) {
        if let boundary {
            precondition(Self.isValidBoundary(boundary), "a multipart boundary is 1 to 70 of RFC 2046's bchars")
            self.boundary = boundary
        } else {
            self.boundary = Self.randomBoundary()
        }
    }

    /// A form rebuilt from parts already checked against its boundary (a frozen form replayed): the
    /// boundary is kept as it is, so the `Content-Type` frozen with the request still matches.
    init(checkedBoundary boundary: String, parts: [Part]) {
        self.boundary = boundary
        self.parts = parts
    }

    /// The `Content-Type` to send the form with: `multipart/form-data; boundary=...`.
    public var contentType: String {
        // A parameter value is a token or a quoted string (RFC 9110 §5.6.6); bchars such as `:` or space
        // are not token characters.
        let tokenPunctuation = Set("!#$%&'*+-.^_`|~".utf8)
        let isToken = boundary.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A) || tokenPunctuation.contains(byte)
        }
        return "multipart/form-data; boundary=" + (isToken ? boundary : "\"\(boundary)\"")
    }

    /// Adds a text field, sent as UTF-8 with no `Content-Type` (so `text/plain`, RFC 7578 §4.4).
    /// - Parameters:
    ///   - value: The field's value.
    ///   - name: The field's name.
    public mutating func addField(_ value: String, name: String) {
        append(Part(name: name, filename: nil, contentType: nil, content: .bytes(Data(value.utf8))))
    }

    /// Adds bytes in memory, as a file when `filename` is given.
    /// - Parameters:
    ///   - data: The bytes.
    ///   - name: The field's name.
    ///   - filename: The file name to report, if any.
    ///   - contentType: The bytes' media type. When omitted it is guessed from the file name's extension
    ///     (`application/octet-stream` when unknown), and not sent at all without a file name.
    public mutating func addData(_ data: Data, name: String, filename: String? = nil, contentType: String? = nil) {
        let type = contentType ?? filename.map(MIMEType.forFileName)
        append(Part(name: name, filename: filename, contentType: type, content: .bytes(data)))
    }

    /// Adds a file on disk, read in chunks while the body is sent (never whole into memory).
    ///
    /// Nothing is read here: a missing or unreadable file fails ``contentLength()`` or the stream with
    /// ``NetworkError/Code/fileUnavailable``, and so does a file whose size changes between the two.
    /// - Parameters:
    ///   - url: The file's URL.
    ///   - name: The field's name.
    ///   - filename: The file name to report; the URL's last component when omitted.
    ///   - contentType: The file's media type; guessed from the file name's extension when omitted
    ///     (`application/octet-stream` when unknown).
    public mutating func addFile(_ url: URL, name: String, filename: String? = nil, contentType: String? = nil) {
        let filename = filename ?? url.lastPathComponent
        let type = contentType ?? MIMEType.forFileName(filename.contains(".") ? filename : url.lastPathComponent)
        append(Part(name: name, filename: filename, contentType: type, content: .file(url)))
    }

    /// The exact length of the encoded form in bytes, computed from the sizes of its fields, data and
    /// files without reading the files (their sizes come from the file system, off the caller's thread).
    ///
    /// The sizes measured here are the ones the next ``bodyStream(chunkSize:)`` holds the files to: a file
    /// that then has fewer or more bytes fails the stream.
    /// - Returns: The length, for `Content-Length`.
    /// - Throws: ``NetworkError/Code/fileUnavailable`` when a file is missing or is not a regular file.
    public func contentLength() async throws(NetworkError) -> Int64 {
        let measurement = try await measure()
        measuredSizes.withLockedValue { $0.merge(measurement.fileSizes) { _, new in new } }
        return measurement.length
    }

    /// The encoded form as chunks of at most `chunkSize` bytes: each part's delimiter and headers, its
    /// bytes (a file's read from disk chunk by chunk), then the closing delimiter.
    ///
    /// The stream can be iterated more than once (each iteration reads the files again), so a body built
    /// on it can be sent again on a 307/308 redirect or a retry.
    /// - Parameter chunkSize: The largest chunk to yield; 64 KiB by default.
    /// - Returns: The stream. It fails with ``NetworkError/Code/fileUnavailable`` when a file cannot be
    ///   opened or read, or has a size other than the one ``contentLength()`` measured (or, without a
    ///   measurement, than when the stream opened it).
    public func bodyStream(chunkSize: Int = 64 * 1024) -> Stream {
        Stream(base: ByteSegmentStream(segments: segments(fileSizes: measuredSizes.withLockedValue { $0 }), chunkSize: chunkSize))
    }

    /// The chunks of an encoded form; see ``MultipartForm/bodyStream(chunkSize:)``.
    public struct Stream: AsyncSequence, Sendable {
        /// A chunk of the encoded form.
        public typealias Element = ByteBuffer
        /// Any error; a file that cannot be read or changed size is a ``NetworkError``.
        public typealias Failure = any Error

        let base: ByteSegmentStream

        /// Starts reading the form from its first byte.
        /// - Returns: An iterator.
        public func makeAsyncIterator() -> Iterator { Iterator(base: base.makeAsyncIterator()) }

        /// Yields the chunks of an encoded form in order.
        public struct Iterator: AsyncIteratorProtocol {
            /// A chunk of the encoded form.
            public typealias Element = ByteBuffer
            /// Any error; a file that cannot be read or changed size is a ``NetworkError``.
            public typealias Failure = any Error

            var base: ByteSegmentStream.Iterator

            /// The next chunk, or `nil` after the closing delimiter.
            /// - Returns: At most the stream's chunk size of bytes.
            /// - Throws: ``NetworkError/Code/fileUnavailable`` when a file cannot be read or changed size.
            public mutating func next() async throws -> ByteBuffer? { try await base.next() }
        }
    }
}

// MARK: - Layout

extension MultipartForm {
    enum Content: Sendable {
        case bytes(Data)
        case file(URL)
    }

    struct Part: Sendable {
        var name: String
        var filename: String?
        var contentType: String?
        var content: Content

        /// The part's header fields and the blank line that ends them.
        var headerBlock: String {
            var text = "Content-Disposition: form-data; name=\"\(MultipartForm.escaped(name))\""
            if let filename { text += "; filename=\"\(MultipartForm.escaped(filename))\"" }
            text += "\r\n"
            if let contentType { text += "Content-Type: \(MultipartForm.escaped(contentType))\r\n" }
            return text + "\r\n"
        }
    }

    /// The form's total length and the file sizes it was computed with.
    struct Measurement: Sendable {
        var length: Int64
        var fileSizes: [String: Int64]
    }

    /// Measures the form: every file's size (from the file system, on its thread pool) and the total.
    func measure() async throws(NetworkError) -> Measurement {
        var sizes: [String: Int64] = [:]
        for part in parts {
            guard case .file(let url) = part.content else { continue }
            sizes[url.path] = try await FileErrors.regularFileSize(url)
        }
        var length: Int64 = 0
        for segment in segments(fileSizes: sizes) {
            switch segment {
            case .bytes(let data): length += Int64(data.count)
            case .file(_, let size): length += size ?? 0
            }
        }
        return Measurement(length: length, fileSizes: sizes)
    }

    /// The stream of a measured form (the sizes it holds files to are the measurement's).
    func bodyStream(chunkSize: Int, measurement: Measurement) -> Stream {
        Stream(base: ByteSegmentStream(segments: segments(fileSizes: measurement.fileSizes), chunkSize: chunkSize))
    }

    /// The encoded form as segments: framing and small parts packed together, large data and files apart.
    func segments(fileSizes: [String: Int64]) -> [ByteSegmentStream.Segment] {
        var segments: [ByteSegmentStream.Segment] = []
        var pending = Data()
        for part in parts {
            pending.append(contentsOf: "--\(boundary)\r\n\(part.headerBlock)".utf8)
            switch part.content {
            case .bytes(let data) where data.count <= 4096:
                pending.append(data)
            case .bytes(let data):
                segments.append(.bytes(pending))
                segments.append(.bytes(data))
                pending = Data()
            case .file(let url):
                segments.append(.bytes(pending))
                segments.append(.file(url, expectedSize: fileSizes[url.path]))
                pending = Data()
            }
            pending.append(contentsOf: "\r\n".utf8)
        }
        pending.append(contentsOf: "--\(boundary)--\r\n".utf8)
        segments.append(.bytes(pending))
        return segments
    }

    /// Adds a part, drawing a new boundary while the current one occurs in the form's bytes in memory.
    private mutating func append(_ part: Part) {
        parts.append(part)
        while parts.contains(where: { $0.contains(delimiter: boundary) }) {
            boundary = Self.randomBoundary()
        }
    }

    /// `courier-` and 32 hexadecimal digits (128 bits from the system's secure generator).
    static func randomBoundary() -> String {
        var generator = SystemRandomNumberGenerator()
        let high: UInt64 = generator.next(), low: UInt64 = generator.next()
        func hex(_ value: UInt64) -> String {
            let digits = String(value, radix: 16)
            return String(repeating: "0", count: 16 - digits.count) + digits
        }
        return "courier-" + hex(high) + hex(low)
    }

    /// RFC 2046 §5.1.1: `0*69<bchars> bcharsnospace`.
    static func isValidBoundary(_ boundary: String) -> Bool {
        let bchars = Set("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'()+_,-./:=? ".utf8)
        let bytes = Array(boundary.utf8)
        return (1...70).contains(bytes.count) && bytes.allSatisfy(bchars.contains) && bytes.last != UInt8(ascii: " ")
    }

    /// A header value made safe to quote: `"`, CR and LF percent-encoded, as browsers encode names and
    /// file names (RFC 7578 §4.2); NUL too, which no header may carry.
    static func escaped(_ value: String) -> String {
        var result = ""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": result += "%22"
            case "\r": result += "%0D"
            case "\n": result += "%0A"
            case "\0": result += "%00"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}

extension MultipartForm.Part {
    /// Whether `--boundary` occurs in this part's bytes in memory (files are not read).
    func contains(delimiter boundary: String) -> Bool {
        guard case .bytes(let data) = content else { return false }
        return data.range(of: Data("--\(boundary)".utf8)) != nil
    }
}
