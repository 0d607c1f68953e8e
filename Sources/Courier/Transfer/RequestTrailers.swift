import HTTPTypes

/// Trailer fields sent after a request body (RFC 9110 §6.5): a checksum or a signature computed over the
/// bytes as they went, a status that is only known at the end of a stream.
///
/// Kept by ``RequestBodySource``; each attempt that sends the body asks for the fields again once its
/// last byte is handed to the transport. A body with trailers is sent without `Content-Length`
/// (chunked in HTTP/1.1, where trailers follow the last chunk; a `HEADERS` frame after the data in HTTP/2).
struct RequestTrailers: Sendable {
    /// The names announced in the request's `Trailer` header field, so the server can expect them.
    let names: [HTTPField.Name]
    /// The fields, when they were given as they are (checked before anything is sent).
    let fixed: HTTPFields?
    private let make: @Sendable () async throws -> HTTPFields

    init(names: [HTTPField.Name], make: @escaping @Sendable () async throws -> HTTPFields) {
        self.names = names
        self.fixed = nil
        self.make = make
    }

    init(fixed fields: HTTPFields) {
        var seen = Set<String>()
        self.names = fields.map(\.name).filter { seen.insert($0.canonicalName).inserted }
        self.fixed = fields
        self.make = { fields }
    }

    /// The fields for this attempt, validated.
    /// - Parameter sensitive: The request's credential names (lowercase): never sent as trailers, which
    ///   would carry them past the checks that keep them from other origins.
    /// - Returns: The fields.
    /// - Throws: ``NetworkError/Code/invalidHeader`` for a field that may not be a trailer or a value with
    ///   control characters; ``NetworkError/Code/encodingFailed`` wrapping what the closure threw.
    func fields(refusing sensitive: Set<String>) async throws(NetworkError) -> HTTPFields {
        let fields: HTTPFields
        do {
            fields = try await make()
        } catch let error as NetworkError {
            throw error
        } catch {
            throw NetworkError(.encodingFailed, "the request's trailer fields could not be made: \(error)", underlying: error)
        }
        if let error = Self.validate(fields) ?? Self.credential(in: fields.map(\.name), sensitive: sensitive) { throw error }
        return fields
    }

    /// Checks, before anything is sent, that no announced or given field is one of the request's
    /// credential names.
    /// - Parameter sensitive: The credential names (lowercase).
    /// - Returns: An ``NetworkError/Code/invalidHeader`` error, or `nil`.
    func refusal(sensitive: Set<String>) -> NetworkError? {
        Self.credential(in: names + (fixed?.map(\.name) ?? []), sensitive: sensitive)
    }

    private static func credential(in names: [HTTPField.Name], sensitive: Set<String>) -> NetworkError? {
        for name in names where sensitive.contains(name.canonicalName) || CredentialFields.names.contains(name.canonicalName) {
            return NetworkError(
                .invalidHeader, "'\(name.rawName)' is a credential of this engine and may not be sent as a trailer field")
        }
        return nil
    }

    /// Fields a sender must not put in a trailer section (RFC 9110 §6.5.1): framing, routing, request
    /// modifiers, authentication, and the content's own description, which a recipient has acted on
    /// before the trailers arrive.
    static let forbiddenNames: Set<String> = [
        "authorization", "cache-control", "connection", "content-encoding", "content-length", "content-range",
        "content-type", "cookie", "expect", "host", "if-match", "if-modified-since", "if-none-match", "if-range",
        "if-unmodified-since", "keep-alive", "max-forwards", "pragma", "proxy-authenticate", "proxy-authorization",
        "proxy-connection", "range", "set-cookie", "te", "trailer", "transfer-encoding", "upgrade", "www-authenticate",
    ]

    /// The first reason `fields` cannot be sent as trailers, or `nil` when they can.
    /// - Parameter fields: The trailer fields.
    /// - Returns: An ``NetworkError/Code/invalidHeader`` error, or `nil`.
    static func validate(_ fields: HTTPFields) -> NetworkError? {
        for field in fields {
            if forbiddenNames.contains(field.name.canonicalName) {
                return NetworkError(.invalidHeader, "'\(field.name.rawName)' may not be sent as a trailer field (RFC 9110 section 6.5.1)")
            }
            if !HeaderValidation.validateValue(field.value) {
                return NetworkError(.invalidHeader, "the trailer field '\(field.name.rawName)' has a control character in its value")
            }
        }
        return nil
    }

    /// Validates names announced in `Trailer`.
    /// - Parameter names: The names.
    /// - Returns: An ``NetworkError/Code/invalidHeader`` error, or `nil`.
    static func validate(names: [HTTPField.Name]) -> NetworkError? {
        for name in names where forbiddenNames.contains(name.canonicalName) {
            return NetworkError(.invalidHeader, "'\(name.rawName)' may not be sent as a trailer field (RFC 9110 section 6.5.1)")
        }
        return nil
    }
}
