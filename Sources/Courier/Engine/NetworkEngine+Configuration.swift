public import Dispatch
public import Logging

extension NetworkEngine {
    /// Everything about how an engine's operations behave on the wire.
    ///
    /// ```swift
    /// let engine = NetworkEngine(host: "api.example.com", apiPath: "v2") {
    ///     $0.timeouts.read = .seconds(20)
    ///     $0.acceptableContentTypes = ["application/json"]
    /// }
    /// ```
    public struct Configuration: Sendable {
        /// Connect, read and total timeouts.
        public var timeouts = Timeouts()
        /// The largest response body held in memory (after decompression); a larger one fails with
        /// ``NetworkError/Code/bodyTooLarge``. 64 MiB by default.
        public var maximumResponseBodySize = 64 * 1024 * 1024
        /// Transparent gzip/deflate decompression with a ratio limit; on (ratio 100) by default.
        public var decompression = Decompression.enabled(maximumRatio: 100)
        /// How redirects are followed; up to 10, never https to http, by default.
        public var redirects = RedirectPolicy.follow()
        /// Status codes that count as success; others fail with ``NetworkError/Code/unacceptableStatus``. 200..<300 by default.
        public var acceptableStatusCodes = Set(200..<300)
        /// Media types (`type/subtype`, or `type/*`) a non-empty body may have; `nil` (the default) accepts any.
        public var acceptableContentTypes: Set<String>?
        /// Whether identical GET and HEAD operations share one request by default. On by default.
        public var coalescesRequests = true
        /// The queue closure handlers are called on, in order for each operation. A shared serial
        /// queue by default; pass `.main` to update UI directly.
        public var callbackQueue: DispatchQueue = .courierCallbacks
        /// The `User-Agent` sent with every request; `Courier/<version> (<OS>)` by default.
        public var userAgent: String = DefaultHeaders.userAgent(version: CourierLibrary.version)
        /// The `Accept-Language` sent with every request; built from the user's preferred languages by default.
        public var acceptLanguage: String = DefaultHeaders.acceptLanguage
        /// The HTTP cache, shared by the engines given it; `nil` (the default) means no caching.
        public var cache: ResponseCache?
        /// How operations use ``cache`` unless they set their own; the HTTP rules by default.
        public var cachePolicy = CachePolicy.useProtocol
        /// Whether a network failure (or a 500, 502, 503, 504) is answered with the stored response, marked
        /// as cached and stale (ASIHTTPRequest's fallback). Off by default; `stale-if-error` applies regardless.
        public var fallsBackToCacheOnError = false
        /// Where the engine logs (debug and trace only). Silent by default.
        public var logger: Logger = .courierSilent

        /// The defaults.
        public init() {}

        /// The defaults, adjusted by `configure`.
        /// - Parameter configure: Changes to make to the defaults.
        public init(_ configure: (inout Configuration) -> Void) {
            configure(&self)
        }
    }

    /// Connect, read and total timeouts.
    public struct Timeouts: Sendable, Hashable {
        /// How long establishing a connection may take; 10 s by default.
        public var connect: Duration = .seconds(10)
        /// How long the server may stay silent while a response is awaited or read; 60 s by default.
        public var read: Duration = .seconds(60)
        /// How long a whole operation (redirects included) may take; no limit by default.
        public var total: Duration?

        /// Creates timeouts.
        /// - Parameters:
        ///   - connect: The connect timeout.
        ///   - read: The read timeout.
        ///   - total: The total timeout, if any.
        public init(connect: Duration = .seconds(10), read: Duration = .seconds(60), total: Duration? = nil) {
            self.connect = connect
            self.read = read
            self.total = total
        }
    }
}

/// Facts about the library itself.
public enum CourierLibrary {
    /// Courier's version, as sent in the default `User-Agent`.
    public static let version = "0.1.0"
}

extension DispatchQueue {
    /// The serial queue Courier calls closure handlers on unless an engine names another.
    public static let courierCallbacks = DispatchQueue(label: "courier.callbacks")
}
