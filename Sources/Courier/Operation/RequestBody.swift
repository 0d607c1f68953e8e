public import Foundation

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

    /// The encoded bytes, or `nil` when encoding failed.
    public var data: Data? {
        if case .bytes(let data) = storage { return data }
        return nil
    }
}
