import Foundation
import HTTPTypes
import Logging

/// A request fully composed and validated, with every setting its flight needs.
///
/// What changes from hop to hop and attempt to attempt (method, URL, fields, body) is stored inline; the
/// settings fixed when the operation starts sit in one copy-on-write box (``Settings``). A request is
/// copied into the async frames of every step of a flight (redirects, interceptors, retries): kept small,
/// those frames fit the task's allocator instead of each taking a block of its own from `malloc`.
struct PreparedRequest: Sendable {
    var method: HTTPRequest.Method
    var url: URL
    var headers: HTTPFields
    var body: Data?
    /// A streamed body (file, form, caller's sequence) instead of `body`.
    var bodySource: RequestBodySource?
    /// The missing bytes of a stored partial response the cache asked for with `Range` and `If-Range`;
    /// an answer that does not complete it is dropped and the request sent again without them.
    var cacheCompletion: CachePartialContent.Completion?
    /// Which attempt this is: 1 for the first, 2 for the first retry.
    var attempt = 1
    /// When the first attempt began (for retry policies with a total time).
    var firstAttemptAt: ContinuousClock.Instant?
    /// The header fields of the last hop as the interceptors left them (set when the flight ends).
    var adaptedHeaders: HTTPFields?
    private var settings: Settings

    /// The settings fixed for the operation, set while it is prepared (when the box is not shared yet).
    final class Settings: Sendable {
        let options: TransportOptions
        let redirects: RedirectPolicy
        let maximumBodySize: Int
        let totalTimeout: Duration?
        let logger: Logger
        let sensitiveNames: Set<String>
        let reportsInformational: Bool
        let isMonitored: Bool
        let destination: ResponseDestination
        let interceptors: InterceptorChain

        init(
            options: TransportOptions, redirects: RedirectPolicy, maximumBodySize: Int, totalTimeout: Duration?, logger: Logger,
            sensitiveNames: Set<String>, reportsInformational: Bool, isMonitored: Bool, destination: ResponseDestination,
            interceptors: InterceptorChain
        ) {
            self.options = options
            self.redirects = redirects
            self.maximumBodySize = maximumBodySize
            self.totalTimeout = totalTimeout
            self.logger = logger
            self.sensitiveNames = sensitiveNames
            self.reportsInformational = reportsInformational
            self.isMonitored = isMonitored
            self.destination = destination
            self.interceptors = interceptors
        }

        /// A copy with one setting changed.
        func with<Value>(_ path: WritableKeyPath<Values, Value>, _ value: Value) -> Settings {
            var values = Values(self)
            values[keyPath: path] = value
            return values.settings
        }

        /// The settings as a value, to change one.
        struct Values {
            var options: TransportOptions
            var redirects: RedirectPolicy
            var maximumBodySize: Int
            var totalTimeout: Duration?
            var logger: Logger
            var sensitiveNames: Set<String>
            var reportsInformational: Bool
            var isMonitored: Bool
            var destination: ResponseDestination
            var interceptors: InterceptorChain

            init(_ settings: Settings) {
                options = settings.options
                redirects = settings.redirects
                maximumBodySize = settings.maximumBodySize
                totalTimeout = settings.totalTimeout
                logger = settings.logger
                sensitiveNames = settings.sensitiveNames
                reportsInformational = settings.reportsInformational
                isMonitored = settings.isMonitored
                destination = settings.destination
                interceptors = settings.interceptors
            }

            var settings: Settings {
                Settings(
                    options: options, redirects: redirects, maximumBodySize: maximumBodySize, totalTimeout: totalTimeout, logger: logger,
                    sensitiveNames: sensitiveNames, reportsInformational: reportsInformational, isMonitored: isMonitored,
                    destination: destination, interceptors: interceptors)
            }
        }
    }

    init(
        method: HTTPRequest.Method, url: URL, headers: HTTPFields, body: Data?, bodySource: RequestBodySource? = nil,
        options: TransportOptions, redirects: RedirectPolicy, maximumBodySize: Int, totalTimeout: Duration?, logger: Logger,
        sensitiveNames: Set<String> = SensitiveHeaders.defaultNames, reportsInformational: Bool = false, isMonitored: Bool = false,
        destination: ResponseDestination = ResponseDestination(), interceptors: InterceptorChain = InterceptorChain()
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.bodySource = bodySource
        settings = Settings(
            options: options, redirects: redirects, maximumBodySize: maximumBodySize, totalTimeout: totalTimeout, logger: logger,
            sensitiveNames: sensitiveNames, reportsInformational: reportsInformational, isMonitored: isMonitored,
            destination: destination, interceptors: interceptors)
    }

    private mutating func set<Value>(_ path: WritableKeyPath<Settings.Values, Value>, _ value: Value) {
        settings = settings.with(path, value)
    }

    var options: TransportOptions {
        get { settings.options }
        set { set(\.options, newValue) }
    }
    var redirects: RedirectPolicy {
        get { settings.redirects }
        set { set(\.redirects, newValue) }
    }
    var maximumBodySize: Int {
        get { settings.maximumBodySize }
        set { set(\.maximumBodySize, newValue) }
    }
    var totalTimeout: Duration? {
        get { settings.totalTimeout }
        set { set(\.totalTimeout, newValue) }
    }
    var logger: Logger {
        get { settings.logger }
        set { set(\.logger, newValue) }
    }
    /// Lowercase names of the fields that carry credentials for this request: dropped on a cross-origin
    /// redirect, masked in logs.
    var sensitiveNames: Set<String> {
        get { settings.sensitiveNames }
        set { set(\.sensitiveNames, newValue) }
    }
    /// Whether interim (1xx) responses are to be reported (an operation has an informational handler).
    var reportsInformational: Bool {
        get { settings.reportsInformational }
        set { set(\.reportsInformational, newValue) }
    }
    /// Whether the engine has event monitors: the flight then reports each hop, head and redirect to its
    /// subscribers (without monitors it does not look them up at all).
    var isMonitored: Bool {
        get { settings.isMonitored }
        set { set(\.isMonitored, newValue) }
    }
    /// Where the response body goes: memory by default; files and/or a body stream for downloads.
    var destination: ResponseDestination {
        get { settings.destination }
        set { set(\.destination, newValue) }
    }
    /// The interceptors that adapt each hop and decide on retries.
    var interceptors: InterceptorChain {
        get { settings.interceptors }
        set { set(\.interceptors, newValue) }
    }
}
