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

    /// The settings fixed for the operation: one immutable box shared by the request's copies, replaced
    /// as a whole when one changes (only while the operation is prepared).
    final class Settings: Sendable {
        let values: Values
        init(_ values: Values) { self.values = values }
    }

    /// The settings as a value.
    struct Values: Sendable {
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
        settings = Settings(Values(
            options: options, redirects: redirects, maximumBodySize: maximumBodySize, totalTimeout: totalTimeout, logger: logger,
            sensitiveNames: sensitiveNames, reportsInformational: reportsInformational, isMonitored: isMonitored,
            destination: destination, interceptors: interceptors))
    }

    private mutating func set<Value>(_ path: WritableKeyPath<Values, Value>, _ value: Value) {
        var values = settings.values
        values[keyPath: path] = value
        settings = Settings(values)
    }

    var options: TransportOptions {
        get { settings.values.options }
        set { set(\.options, newValue) }
    }
    var redirects: RedirectPolicy {
        get { settings.values.redirects }
        set { set(\.redirects, newValue) }
    }
    var maximumBodySize: Int {
        get { settings.values.maximumBodySize }
        set { set(\.maximumBodySize, newValue) }
    }
    var totalTimeout: Duration? {
        get { settings.values.totalTimeout }
        set { set(\.totalTimeout, newValue) }
    }
    var logger: Logger {
        get { settings.values.logger }
        set { set(\.logger, newValue) }
    }
    /// Lowercase names of the fields that carry credentials for this request: dropped on a cross-origin
    /// redirect, masked in logs.
    var sensitiveNames: Set<String> {
        get { settings.values.sensitiveNames }
        set { set(\.sensitiveNames, newValue) }
    }
    /// Whether interim (1xx) responses are to be reported (an operation has an informational handler).
    var reportsInformational: Bool {
        get { settings.values.reportsInformational }
        set { set(\.reportsInformational, newValue) }
    }
    /// Whether the engine has event monitors: the flight then reports each hop, head and redirect to its
    /// subscribers (without monitors it does not look them up at all).
    var isMonitored: Bool {
        get { settings.values.isMonitored }
        set { set(\.isMonitored, newValue) }
    }
    /// Where the response body goes: memory by default; files and/or a body stream for downloads.
    var destination: ResponseDestination {
        get { settings.values.destination }
        set { set(\.destination, newValue) }
    }
    /// The interceptors that adapt each hop and decide on retries.
    var interceptors: InterceptorChain {
        get { settings.values.interceptors }
        set { set(\.interceptors, newValue) }
    }
}
