public import Foundation
public import NIOCore
public import HTTPTypes

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

    /// This body followed by trailer fields (RFC 9110 §6.5), for example a checksum of what was sent.
    ///
    /// The fields are announced in the request's `Trailer` header field and sent after the body, which
    /// then goes without `Content-Length` (chunked in HTTP/1.1; in HTTP/2 a `HEADERS` frame after the
    /// data). A field that may not be a trailer (`Content-Length`, `Host`, `Authorization`, `Cookie`,
    /// `Content-Type`, and the others of RFC 9110 §6.5.1), a field named like one of the engine's
    /// credentials (``NetworkEngine/Configuration/sensitiveHeaderNames``, which trailers would carry past
    /// the checks that keep them from other origins) or a value with control characters fails the
    /// operation with ``NetworkError/Code/invalidHeader`` when it is enqueued. A body with trailers is
    /// never coalesced and cannot be frozen (``NetworkError/Code/bodyNotReplayable``).
    /// ```swift
    /// let body = RequestBody.data(report).trailers([HTTPField.Name("Digest-Check")!: checksum])
    /// ```
    /// - Parameter fields: The trailer fields.
    /// - Returns: The body with its trailers.
    public func trailers(_ fields: HTTPFields) -> RequestBody {
        if let error = RequestTrailers.validate(fields) { return RequestBody(storage: .invalid(error), contentType: contentType) }
        return withTrailers(RequestTrailers(fixed: fields))
    }

    /// This body followed by trailer fields computed once the body has been sent, by each attempt that
    /// sends it (a redirect that re-sends the body, a retry): a checksum or a signature over a stream you
    /// write, a status known only at its end.
    ///
    /// See ``trailers(_:)`` for how they are sent and which fields are refused; a refused field or an
    /// error thrown by `make` (wrapped in ``NetworkError/Code/encodingFailed``) fails the request after
    /// its body went: the exchange is aborted so that the server never sees the body as complete.
    /// ```swift
    /// let body = RequestBody.stream(chunks)
    ///     .trailers(announcing: [HTTPField.Name("Content-SHA256")!]) {
    ///         [HTTPField.Name("Content-SHA256")!: await digest.finalHex()]  // `digest` saw every chunk
    ///     }
    /// ```
    /// - Parameters:
    ///   - names: The names to announce in the `Trailer` header field (RFC 9110 §6.6.2); may be empty.
    ///   - make: Returns the fields; called after the last byte of the body was handed to the transport.
    /// - Returns: The body with its trailers.
    public func trailers(
        announcing names: [HTTPField.Name] = [], _ make: @escaping @Sendable () async throws -> HTTPFields
    ) -> RequestBody {
        if let error = RequestTrailers.validate(names: names) { return RequestBody(storage: .invalid(error), contentType: contentType) }
        return withTrailers(RequestTrailers(names: names, make: make))
    }

    private func withTrailers(_ trailers: RequestTrailers) -> RequestBody {
        var source: RequestBodySource
        switch storage {
        case .invalid: return self
        case .bytes(let data): source = .data(data)
        case .streamed(let streamed): source = streamed
        }
        source.trailers = trailers
        return RequestBody(storage: .streamed(source), contentType: contentType)
    }

    /// The `Trailer` header field's value announcing this body's trailer fields, if it has any to announce.
    var trailerAnnouncement: String? {
        guard let names = source?.trailers?.names, !names.isEmpty else { return nil }
        return names.map(\.rawName).joined(separator: ", ")
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
