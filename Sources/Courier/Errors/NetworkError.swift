public import Foundation

/// The one error type Courier reports.
///
/// Every failure, whether it comes from bad input, the network, the server or decoding, is a
/// `NetworkError` with a ``Code``. Codes are static members of a struct rather than enum cases,
/// so new codes never break a caller's `switch`:
///
/// ```swift
/// do {
///     let rates = try await currencyEngine.rates()
/// } catch let error as NetworkError {
///     switch error.code {
///     case .notConnected, .cannotConnect: showOfflineBanner()
///     case .unacceptableStatus where error.response?.statusCode == 401: signIn()
///     default: show(error)
///     }
/// }
/// ```
public struct NetworkError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, as a stable, comparable code.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }

        /// The URL could not be built or is not an http(s) URL with a host.
        public static let invalidURL = Code("invalidURL")
        /// A header name is not a valid token, or a header value contains CR, LF or NUL.
        public static let invalidHeader = Code("invalidHeader")
        /// The HTTP method is not a valid token.
        public static let invalidMethod = Code("invalidMethod")
        /// The request body could not be encoded (for example a JSON encoding failure).
        public static let encodingFailed = Code("encodingFailed")
        /// The host could not be reached: the name did not resolve or the connection was refused.
        public static let cannotConnect = Code("cannotConnect")
        /// There is no network connection to the host.
        public static let notConnected = Code("notConnected")
        /// A connect, read or total timeout elapsed.
        public static let timeout = Code("timeout")
        /// The connection closed before the response was complete.
        public static let connectionLost = Code("connectionLost")
        /// The operation was cancelled.
        public static let cancelled = Code("cancelled")
        /// The status code is not one of the acceptable codes. ``NetworkError/response`` holds the response.
        public static let unacceptableStatus = Code("unacceptableStatus")
        /// The response's content type is not one of the acceptable types.
        public static let unacceptableContentType = Code("unacceptableContentType")
        /// The response body (after decompression) exceeds the configured limit.
        public static let bodyTooLarge = Code("bodyTooLarge")
        /// The response body could not be decoded as the requested type.
        public static let decodingFailed = Code("decodingFailed")
        /// More redirects than the redirect policy allows, or a redirect loop.
        public static let tooManyRedirects = Code("tooManyRedirects")
        /// A redirect from https to http, which the redirect policy forbids.
        public static let insecureRedirect = Code("insecureRedirect")
        /// The TLS handshake failed or the certificate was rejected.
        public static let tls = Code("tls")
        /// A configuration value cannot be used: a malformed certificate pin or host pattern, or a
        /// certificate, key or PKCS#12 file of a ``TrustPolicy`` that cannot be read or parsed. Nothing
        /// was sent.
        public static let invalidConfiguration = Code("invalidConfiguration")
        /// The server's response could not be parsed (malformed HTTP, corrupt compressed body).
        public static let invalidResponse = Code("invalidResponse")
        /// The cache policy allowed only the cache (``CachePolicy/cacheOnly``) and nothing is stored.
        public static let notCached = Code("notCached")
        /// A freezable request could not be written to (or read from) its outbox; it was not frozen.
        public static let outboxUnavailable = Code("outboxUnavailable")
        /// A frozen request was given up: its time to live ran out or it used up its attempts. It stays
        /// in the outbox's dead-letter state until dropped.
        public static let deadLettered = Code("deadLettered")
        /// The task awaiting a frozen operation (``NetworkOperation/response()``, ``NetworkEngine/send(_:)``)
        /// was cancelled. Only the waiting stopped: the request stays in the outbox and will be sent; its
        /// handlers and ``NetworkEngine/outboxEvents`` still hear the outcome. Only
        /// ``NetworkOperation/cancel()`` or `Outbox.drop(_:)` removes it.
        public static let stillFrozen = Code("stillFrozen")
        /// A file to upload, or a download's destination, could not be read or written: missing, not
        /// writable, disk full, or it changed size while being sent.
        public static let fileUnavailable = Code("fileUnavailable")
        /// A one-shot stream cannot be read again: a request body a 307/308 redirect or a retry needed to
        /// send again, a freezable operation whose body is a one-shot stream (`RequestBody.stream(_:length:contentType:)`),
        /// or a second iteration of ``NetworkOperation/bodyStream``.
        public static let bodyNotReplayable = Code("bodyNotReplayable")
        /// A freezable request's body is larger than ``NetworkEngine/Configuration/maximumFrozenBodySize``
        /// (or its file grew past it while it was copied), so it was not frozen: the operation fails with
        /// this instead, ``NetworkError/underlying`` holding the network error that made it freeze.
        /// Nothing of it is left in the outbox.
        public static let frozenBodyTooLarge = Code("frozenBodyTooLarge")
        /// A ``RequestInterceptor`` threw while adapting the request (``NetworkError/underlying`` holds what
        /// it threw): nothing was sent.
        public static let interceptorFailed = Code("interceptorFailed")
        /// Any other transport failure; ``NetworkError/underlying`` holds the cause.
        public static let transport = Code("transport")
        /// Credentials that cannot be sent as given: a Basic user-id containing `:`, or a user-id or
        /// password containing a control character (RFC 7617 §2).
        public static let invalidCredentials = Code("invalidCredentials")
        /// Authentication did not succeed: the server challenged again for credentials just sent (they
        /// are wrong; Courier never retries them in a loop), or it offered no challenge Courier can
        /// answer (an unknown scheme or Digest algorithm, or only `qop=auth-int`); or a
        /// ``BearerTokenAuthenticator``'s refresh failed (``NetworkError/underlying`` holds why) or the
        /// server refused the token the refresh gave.
        public static let authenticationFailed = Code("authenticationFailed")

        /// The bytes are not in an image format the decoders know (`CourierImages`).
        public static let unsupportedImageFormat = Code("unsupportedImageFormat")
        /// The image is corrupt or truncated, or its pixels do not match its size (`CourierImages`).
        public static let invalidImage = Code("invalidImage")
        /// The image declares more pixels than the decoder's limit allows; refused before its pixels
        /// were allocated (`CourierImages`).
        public static let imageTooLarge = Code("imageTooLarge")
        /// The image could not be encoded (`CourierImages`).
        public static let imageEncodingFailed = Code("imageEncodingFailed")
        /// The image's codec is not available on this machine (`CourierImages` on Linux): its library is
        /// not installed, or its headers were missing when Courier was built. The message names the
        /// Debian package to install (`libwebp7` at run time, `libwebp-dev` to build, and so on).
        public static let imageCodecUnavailable = Code("imageCodecUnavailable")
        public var description: String { name }
    }

    /// What went wrong.
    public var code: Code
    /// A human-readable explanation, fit for a log line.
    public var message: String
    /// The URL of the request, when there was one.
    public var url: String?
    /// The response, when the server answered (for example with ``Code/unacceptableStatus``).
    public var response: NetworkResponse?
    /// The error that caused this one, if any.
    public var underlying: (any Error)?

    /// Creates an error.
    /// - Parameters:
    ///   - code: What went wrong.
    ///   - message: A human-readable explanation; defaults to the code's name.
    ///   - url: The request's URL.
    ///   - response: The server's response, if there was one.
    ///   - underlying: The error that caused this one.
    public init(
        _ code: Code,
        _ message: String? = nil,
        url: String? = nil,
        response: NetworkResponse? = nil,
        underlying: (any Error)? = nil
    ) {
        self.code = code
        self.message = message ?? code.description
        self.url = url
        self.response = response
        self.underlying = underlying
    }

    /// The response body, when the server answered.
    public var body: Data? { response?.body }

    /// `code: message (url)`, fit for a log line. In the URL, a password and the query items with one of
    /// the default sensitive names (those ``NetworkEngine/Configuration/sensitiveParameterNames`` starts
    /// with: `access_token`, `api_key`, `password`, ..., in any case) show `***`; ``url`` itself is
    /// unchanged. (An error does not know its engine: names an app adds are masked in logs and
    /// ``NetworkOperation/curlCommand``, not here.)
    public var description: String {
        var text = "\(code): \(message)"
        if let url { text += " (\(SensitiveParameters.masked(url: url)))" }
        return text
    }

    /// Whether this error means the operation was cancelled.
    public var isCancellation: Bool { code == .cancelled }
}

extension NetworkError {
    static func cancelled(url: String?) -> NetworkError {
        NetworkError(.cancelled, "the operation was cancelled", url: url)
    }

    /// Wraps any error as a `NetworkError`, keeping one that already is.
    static func wrapping(_ error: any Error, url: String?) -> NetworkError {
        if var networkError = error as? NetworkError {
            if networkError.url == nil { networkError.url = url }
            return networkError
        }
        if error is CancellationError { return .cancelled(url: url) }
        return NetworkError(.transport, String(describing: error), url: url, underlying: error)
    }
}
