public import Foundation
public import HTTPTypes

/// A complete HTTP response: status, headers, body and where it came from.
///
/// The typed accessors (``string``, ``json()``, ``decode(_:decoder:)``, ``xml``) interpret the body;
/// only ``body`` always works.
public struct NetworkResponse: Sendable {
    /// The status code and reason phrase.
    public var status: HTTPResponse.Status
    /// The response header fields, in the order received, duplicates kept.
    public var headers: HTTPFields
    /// The response body, decompressed when the engine decompresses.
    public var body: Data
    /// The final URL, after redirects.
    public var url: URL
    /// The URL first requested, before any redirect.
    public var originalURL: URL
    /// Every redirect followed, in order.
    public var redirectChain: [RedirectHop]
    /// Whether this response came from a cache rather than the network.
    public var isCachedResponse: Bool
    /// Where the response came from, when the engine has a ``ResponseCache``; `nil` otherwise.
    public var cacheOutcome: CacheOutcome?
    /// The files the body was written to, for a download (``NetworkOperation/download(to:resumable:)-([URL],_)``):
    /// complete, in place, in the order given. The body is then not kept in memory (``body`` is empty).
    public var fileURLs: [URL] = []
    /// The HTTP version the response came over (HTTP/2 when the server chose it), or `nil` when it is
    /// not known: served from the cache, or by a transport that does not say.
    public var version: ProtocolVersion?
    /// The trailer fields that followed the body (a chunked HTTP/1.1 body's, an HTTP/2 response's
    /// trailing HEADERS: a checksum, a gRPC status), or `nil` when there were none. Never from the cache
    /// (not stored), and not merged into ``headers``.
    public var trailers: HTTPFields?

    /// Creates a response.
    /// - Parameters:
    ///   - status: The status.
    ///   - headers: The header fields.
    ///   - body: The body bytes.
    ///   - url: The final URL.
    ///   - originalURL: The URL first requested; defaults to `url`.
    ///   - redirectChain: The redirects followed.
    ///   - isCachedResponse: Whether it came from a cache.
    public init(
        status: HTTPResponse.Status,
        headers: HTTPFields = [:],
        body: Data = Data(),
        url: URL,
        originalURL: URL? = nil,
        redirectChain: [RedirectHop] = [],
        isCachedResponse: Bool = false
    ) {
        self.status = status
        self.headers = headers
        self.body = body
        self.url = url
        self.originalURL = originalURL ?? url
        self.redirectChain = redirectChain
        self.isCachedResponse = isCachedResponse
    }

    /// The numeric status code.
    public var statusCode: Int { status.code }

    /// The media type of the body (`type/subtype`, lowercased, without parameters), if the server sent one.
    public var mediaType: String? { CharsetDetection.mediaType(of: headers[.contentType]) }

    /// The body as text, decoded with the charset named by `Content-Type` (UTF-8 when none is named).
    /// `nil` when the bytes are not valid in that charset.
    public var string: String? {
        String(data: body, encoding: CharsetDetection.encoding(forContentType: headers[.contentType]))
    }

    /// The body parsed as JSON (dictionaries, arrays, strings, numbers, `NSNull`).
    /// - Returns: The top-level JSON value.
    /// - Throws: ``NetworkError`` with code ``NetworkError/Code/decodingFailed`` when the body is not JSON.
    public func json() throws(NetworkError) -> Any {
        do {
            return try JSONSerialization.jsonObject(with: body, options: [.fragmentsAllowed])
        } catch {
            throw NetworkError(
                .decodingFailed, "the response body is not valid JSON",
                url: url.absoluteString, response: self, underlying: error)
        }
    }

    /// Decodes the body as JSON into a `Decodable` value.
    ///
    /// ```swift
    /// let rates = try response.decode(Rates.self)
    /// ```
    /// - Parameters:
    ///   - type: The type to decode.
    ///   - decoder: The decoder to use; a default `JSONDecoder` when omitted.
    /// - Returns: The decoded value.
    /// - Throws: ``NetworkError`` with code ``NetworkError/Code/decodingFailed``, the decoder's error as `underlying`.
    public func decode<T: Decodable>(_ type: T.Type = T.self, decoder: JSONDecoder = JSONDecoder()) throws(NetworkError) -> T {
        do {
            return try decoder.decode(T.self, from: body)
        } catch {
            throw NetworkError(
                .decodingFailed, "the response body could not be decoded as \(T.self): \(error)",
                url: url.absoluteString, response: self, underlying: error)
        }
    }

    /// The body parsed as XML, or `nil` when it is not well-formed XML.
    public var xml: XMLDocumentTree? { XMLDocumentTree(data: body) }
}

/// One redirect followed on the way to a response.
public struct RedirectHop: Sendable, Hashable {
    /// The URL that answered with a redirect.
    public var url: URL
    /// The redirect status code (301, 302, 303, 307 or 308).
    public var statusCode: Int
    /// The URL the redirect pointed to.
    public var location: URL

    /// Creates a hop.
    /// - Parameters:
    ///   - url: The URL that redirected.
    ///   - statusCode: Its status code.
    ///   - location: Where it pointed.
    public init(url: URL, statusCode: Int, location: URL) {
        self.url = url
        self.statusCode = statusCode
        self.location = location
    }
}
