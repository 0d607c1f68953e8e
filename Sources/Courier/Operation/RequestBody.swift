public import Foundation
public import NIOCore

/// The body of a request, built with one of the static factories.
///
/// ```swift
/// engine.operation(path: "/posts", method: .post, body: .json(NewPost(title: "Hi")))
/// engine.operation(path: "/login", method: .post, body: .form(["user": "ada", "remember": true]))
/// ```
/// A body that cannot be encoded does not throw where it is built: the operation fails with
/// ``NetworkError/Code/encodingFailed`` when it is enqueued, like every other bad input.
public struct RequestBody: Sendable {
    enum Storage: Sendable {
        case bytes(Data)
        /// A body streamed from a file, a multipart form or a caller's sequence, never held whole.
        case streamed(RequestBodySource)
        case invalid(NetworkError)
    }

    let storage: Storage
    /// The `Content-Type` this body is sent with, unless the operation sets its own.
    public let contentType: String?

    /// URL-encoded form fields (`application/x-www-form-urlencoded`), keys sorted, nested values as `a[b]=v`.
    /// - Parameter fields: The fields.
    /// - Returns: The body.
    public static func form(_ fields: [String: ParameterValue]) -> RequestBody {
        RequestBody(storage: .bytes(Data(FormEncoder.encode(fields).utf8)), contentType: "application/x-www-form-urlencoded; charset=utf-8")
    }

    /// A JSON document encoded from any `Encodable` value.
    /// - Parameters:
    ///   - value: The value to encode.
    ///   - encoder: The encoder; a default `JSONEncoder` when omitted.
    /// - Returns: The body, or one that fails the operation with ``NetworkError/Code/encodingFailed``.
    public static func json<Value: Encodable>(_ value: Value, encoder: JSONEncoder = JSONEncoder()) -> RequestBody {
        do {
            return RequestBody(storage: .bytes(try encoder.encode(value)), contentType: "application/json")
        } catch {
            return RequestBody(
                storage: .invalid(NetworkError(.encodingFailed, "the body could not be encoded as JSON: \(error)", underlying: error)),
                contentType: "application/json")
        }
    }

    /// Raw bytes with a content type.
    /// - Parameters:
    ///   - data: The bytes.
    ///   - contentType: Their media type; `application/octet-stream` (bytes of no known type, RFC 9110
    ///     §8.3) by default; `nil` sends no `Content-Type` at all.
    /// - Returns: The body.
    public static func data(_ data: Data, contentType: String? = "application/octet-stream") -> RequestBody {
        RequestBody(storage: .bytes(data), contentType: contentType)
    }

    /// Text, sent as UTF-8.
    /// - Parameters:
    ///   - text: The text.
    ///   - contentType: Its media type; `text/plain; charset=utf-8` by default.
    /// - Returns: The body.
    public static func text(_ text: String, contentType: String = "text/plain; charset=utf-8") -> RequestBody {
        RequestBody(storage: .bytes(Data(text.utf8)), contentType: contentType)
    }

    /// A file's contents, read in chunks as they are sent (constant memory whatever its size), with a
    /// `Content-Length` from the file's size when it is sent. The declared length is what is sent: a file
    /// that grows while it is sent is uploaded as it was when measured (its first `Content-Length` bytes;
    /// not an error, the request is delivered whole), while a file that is missing, or that shrinks before
    /// all its declared bytes went, fails the operation with ``NetworkError/Code/fileUnavailable``. Re-sent on a 307
    /// or 308 redirect. A freezable operation with a file body can be frozen: the file is copied into the
    /// outbox then (see ``NetworkEngine/Configuration/maximumFrozenBodySize``), so the replay sends the
    /// bytes as they were, whatever happens to the file meanwhile.
    /// - Parameters:
    ///   - url: The file.
    ///   - contentType: Its media type; guessed from the file name's extension when `nil`
    ///     (`application/octet-stream` for an unknown one).
    /// - Returns: The body.
    public static func file(_ url: URL, contentType: String? = nil) -> RequestBody {
        RequestBody(storage: .streamed(.file(url)), contentType: contentType ?? MIMEType.forFileName(url.lastPathComponent))
    }

    /// A `multipart/form-data` body (RFC 7578), streamed part by part (files read in chunks), with an
    /// exact `Content-Length` computed without reading the files. Re-sent on a 307 or 308 redirect. A
    /// freezable operation with a form can be frozen: its files are copied into the outbox, its fields and
    /// data kept with the request, and the replay sends the same form with the same boundary.
    /// - Parameter form: The form.
    /// - Returns: The body.
    public static func multipart(_ form: MultipartForm) -> RequestBody {
        RequestBody(storage: .streamed(.multipart(form)), contentType: form.contentType)
    }

    /// A body read from your own asynchronous sequence of byte chunks, as it is sent. It can be sent
    /// once: a 307/308 redirect that needs it again fails with ``NetworkError/Code/bodyNotReplayable``,
    /// and such an operation cannot be frozen.
    /// - Parameters:
    ///   - chunks: The chunks (`ByteBuffer`s).
    ///   - length: The total length, when known (sent as `Content-Length`; otherwise the body is chunked).
    ///   - contentType: The media type; `application/octet-stream` by default.
    /// - Returns: The body.
    public static func stream<Chunks: AsyncSequence & Sendable>(
        _ chunks: Chunks, length: Int64? = nil, contentType: String? = "application/octet-stream"
    ) -> RequestBody where Chunks.Element == ByteBuffer {
        RequestBody(storage: .streamed(.stream(chunks, length: length)), contentType: contentType)
    }

    /// A body read from your own asynchronous sequence of byte arrays; see ``stream(_:length:contentType:)-(Chunks,_,_)``.
    /// - Parameters:
    ///   - chunks: The chunks (`[UInt8]`).
    ///   - length: The total length, when known.
    ///   - contentType: The media type; `application/octet-stream` by default.
    /// - Returns: The body.
    public static func stream<Chunks: AsyncSequence & Sendable>(
        _ chunks: Chunks, length: Int64? = nil, contentType: String? = "application/octet-stream"
    ) -> RequestBody where Chunks.Element == [UInt8] {
        RequestBody(storage: .streamed(.stream(chunks, length: length)), contentType: contentType)
    }

    /// A body of `length` bytes read from a sequence that starts over each time it is iterated (a frozen
    /// body an outbox store reads back in chunks): replayable, so a redirect or a retry sends it again.
    package static func replayable<Chunks: AsyncSequence & Sendable>(
        _ chunks: Chunks, length: Int64, contentType: String?
    ) -> RequestBody where Chunks.Element == ByteBuffer {
        RequestBody(storage: .streamed(.replayable(chunks, length: length)), contentType: contentType)
    }

    /// The streamed source, for bodies that are not bytes in memory.
    var source: RequestBodySource? {
        if case .streamed(let source) = storage { return source }
        return nil
    }

    /// The encoded bytes, or `nil` when encoding failed.
    public var data: Data? {
        if case .bytes(let data) = storage { return data }
        return nil
    }
}
