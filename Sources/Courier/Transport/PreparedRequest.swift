import Foundation
import HTTPTypes
import Logging

/// A request fully composed and validated, with every setting its flight needs.
struct PreparedRequest: Sendable {
    var method: HTTPRequest.Method
    var url: URL
    var headers: HTTPFields
    var body: Data?
    /// A streamed body (file, form, caller's sequence) instead of `body`.
    var bodySource: RequestBodySource?
    var options: TransportOptions
    var redirects: RedirectPolicy
    var maximumBodySize: Int
    var totalTimeout: Duration?
    var logger: Logger
    /// Lowercase names of the fields that carry credentials for this request: dropped on a cross-origin
    /// redirect, masked in logs.
    var sensitiveNames: Set<String> = SensitiveHeaders.defaultNames
    /// Whether interim (1xx) responses are to be reported (an operation has an informational handler).
    var reportsInformational = false
    /// Whether the engine has event monitors: the flight then reports each hop, head and redirect to its
    /// subscribers (without monitors it does not look them up at all).
    var isMonitored = false
    /// Where the response body goes: memory by default; files and/or a body stream for downloads.
    var destination = ResponseDestination()
    /// The missing bytes of a stored partial response the cache asked for with `Range` and `If-Range`;
    /// an answer that does not complete it is dropped and the request sent again without them.
    var cacheCompletion: CachePartialContent.Completion?
    /// The interceptors that adapt each hop and decide on retries.
    var interceptors = InterceptorChain()
    /// Which attempt this is: 1 for the first, 2 for the first retry.
    var attempt = 1
    /// When the first attempt began (for retry policies with a total time).
    var firstAttemptAt: ContinuousClock.Instant?
    /// The header fields of the last hop as the interceptors left them (set when the flight ends).
    var adaptedHeaders: HTTPFields?
}
