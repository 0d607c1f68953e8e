public import Foundation
public import HTTPTypes

/// A step of the request pipeline: it adapts each request before it goes (adds a token, signs it) and
/// decides whether a failed attempt is tried again (Alamofire's `RequestInterceptor`, OkHttp's
/// interceptors and authenticators).
///
/// Attach interceptors to an engine (``NetworkEngine/Configuration/interceptors``, in order) or to one
/// operation (``NetworkOperation/intercepted(by:)``, after the engine's). The pipeline calls them
/// outside any lock, on a task of the queue:
/// - ``adapt(_:context:)`` for every request that goes on the wire: the first attempt, each retry, each
///   redirect hop and each replay from the outbox. Interceptors run in order, each seeing the previous
///   one's result. A throwing adapter fails the operation with a ``NetworkError`` (its own, or
///   ``NetworkError/Code/interceptorFailed`` wrapping what it threw); nothing is sent.
/// - ``retry(_:after:context:)`` when an attempt failed: a transport error (connection refused, lost,
///   timed out) or a response with a status of 400 or more, even one the engine accepts (a 401 reaches
///   the authenticators whatever the app does with statuses). The first interceptor that does
///   not answer ``RetryDecision/doNotRetry`` decides. A retried operation waits outside the queue's
///   slots, then takes its old place in line (before work enqueued after it).
///
/// Both have default implementations that change nothing, so an interceptor implements what it needs.
///
/// ```swift
/// struct APIKey: RequestInterceptor {
///     func adapt(_ request: HTTPRequest, context: InterceptorContext) async throws -> HTTPRequest {
///         guard !context.isCrossOrigin else { return request }   // never hand the key to another host
///         var request = request
///         request.headerFields[HTTPField.Name("X-API-Key")!] = "secret"
///         return request
///     }
/// }
/// ```
///
/// An interceptor must not send its own request through the queue while adapting: adapting holds one of
/// the queue's slots, and a full queue would wait for itself. Do network work in
/// ``retry(_:after:attempt:)`` (the queue's slot is free by then), as ``BearerTokenAuthenticator`` does.
///
/// Headers an interceptor adds are not part of what is frozen to the outbox or stored in the cache key:
/// a replay runs the interceptors again, with the credentials of that moment.
public protocol RequestInterceptor: Sendable {
    /// The request to send instead of `request`.
    /// - Parameters:
    ///   - request: The request as the previous interceptors left it: method, URL parts and header fields.
    ///   - context: Which attempt and which redirect hop this is, and where the operation was going.
    func adapt(_ request: HTTPRequest, context: InterceptorContext) async throws -> HTTPRequest

    /// Whether to try again after a failed attempt.
    /// - Parameters:
    ///   - request: The request as it was last sent (adapted, after redirects).
    ///   - failure: What went wrong; for an unacceptable status, ``NetworkError/response`` is the response.
    ///   - attempt: The number of the attempt that failed: 1 for the first.
    func retry(_ request: HTTPRequest, after failure: NetworkError, attempt: Int) async -> RetryDecision

    /// ``retry(_:after:attempt:)`` with the time since the first attempt began, for a policy with a
    /// total time limit. This is what the pipeline calls; by default it calls ``retry(_:after:attempt:)``.
    func retry(_ request: HTTPRequest, after failure: NetworkError, attempt: Int, elapsed: Duration) async -> RetryDecision

    /// ``retry(_:after:attempt:elapsed:)`` with where the request stood: this is what the pipeline
    /// calls; by default it calls ``retry(_:after:attempt:elapsed:)``. `context.url` is the URL that
    /// failed, `context.isCrossOrigin` says whether the request (or its chain) was outside the
    /// engine's origin, `context.elapsed` the time since the first attempt began.
    ///
    /// The pipeline bounds the decision: when the engine's total timeout (the whole operation's, counted
    /// from its first attempt) runs out, or the operation is cancelled, while an interceptor decides (a
    /// token refresh that does not return), the operation fails with ``NetworkError/Code/timeout`` or
    /// ``NetworkError/Code/cancelled`` at once.
    ///
    /// Whatever interceptors decide, a redirect chain that changed the method (a `POST` answered `303`)
    /// is retried only when the original request may be repeated: an idempotent method (RFC 9110
    /// §9.2.2) or an `Idempotency-Key` field. A retry sends the original request again, not the last hop.
    func retry(_ request: HTTPRequest, after failure: NetworkError, context: InterceptorContext) async -> RetryDecision

    /// Sees the head of every response, redirects and refusals included, before anything else is done
    /// with it (a cookie jar stores `Set-Cookie` here). Interim (1xx) responses are not included.
    /// - Parameters:
    ///   - response: The status and header fields.
    ///   - request: The request it answers, as sent.
    ///   - context: Which attempt and redirect hop it answers.
    func didReceive(_ response: HTTPResponse, for request: HTTPRequest, context: InterceptorContext) async

    /// The credentials this interceptor would add to a request for `url` now, as header fields (or any
    /// stable fields that tell one user from another: they are only hashed, never sent or stored).
    ///
    /// The cache looks a response up before any interceptor has run, and keeps each user's responses
    /// apart by their credentials: an interceptor that adds credentials declares them here, so that
    /// one user's response is never served to another. The default declares none. A response to a
    /// request that carried credentials (`Authorization`, `Cookie`, or another sensitive field) that no
    /// interceptor declared and the operation did not set itself is not stored.
    func cacheCredentials(for url: URL) -> HTTPFields
}

extension RequestInterceptor {
    /// Sends the request unchanged.
    public func adapt(_ request: HTTPRequest, context: InterceptorContext) async throws -> HTTPRequest { request }

    /// Never retries.
    public func retry(_ request: HTTPRequest, after failure: NetworkError, attempt: Int) async -> RetryDecision { .doNotRetry }

    /// Declares none.
    public func cacheCredentials(for url: URL) -> HTTPFields { [:] }

    /// Does nothing.
    public func didReceive(_ response: HTTPResponse, for request: HTTPRequest, context: InterceptorContext) async {}

    /// Calls ``retry(_:after:attempt:)``.
    public func retry(_ request: HTTPRequest, after failure: NetworkError, attempt: Int, elapsed: Duration) async -> RetryDecision {
        await retry(request, after: failure, attempt: attempt)
    }

    /// Calls ``retry(_:after:attempt:elapsed:)`` with the context's attempt and elapsed time.
    public func retry(_ request: HTTPRequest, after failure: NetworkError, context: InterceptorContext) async -> RetryDecision {
        await retry(request, after: failure, attempt: context.attempt, elapsed: context.elapsed)
    }
}

/// What an interceptor decides about a failed attempt.
public enum RetryDecision: Sendable {
    /// Let the next interceptor decide; when none retries, the failure is the operation's.
    case doNotRetry
    /// Try the whole request again (from its original URL) after waiting this long, outside the queue's
    /// slots.
    case retry(after: Duration)
    /// Stop here and fail the operation with this error instead (a token refresh that failed).
    case fail(NetworkError)
}

/// Where a request stands when an interceptor adapts it.
public struct InterceptorContext: Sendable {
    /// 1 for the first attempt, 2 for the first retry, and so on.
    public var attempt: Int
    /// How many redirects were followed before this request: 0 for the request itself.
    public var redirectCount: Int
    /// The URL the operation asked for, before any redirect.
    public var originalURL: URL
    /// The URL this request goes to.
    public var url: URL
    /// Whether the request is a replay of a frozen request, sent from the outbox.
    public var isReplay: Bool
    /// The engine's origin (`scheme://host:port`), when it has a host.
    var engineOrigin: String?

    /// Creates a context (for testing an interceptor on its own).
    public init(attempt: Int = 1, redirectCount: Int = 0, originalURL: URL, url: URL? = nil, isReplay: Bool = false) {
        self.attempt = attempt
        self.redirectCount = redirectCount
        self.originalURL = originalURL
        self.url = url ?? originalURL
        self.isReplay = isReplay
    }

    /// Whether the request is outside its engine's origin (scheme, host and port), or its chain passed
    /// through another origin: an absolute URL elsewhere (a CDN link), a redirect away, a redirect back
    /// from elsewhere (a foreign origin that redirects to the API must not make an authenticated request
    /// there), or an earlier interceptor that rewrote the URL to another host. (For an engine without a
    /// host of its own, the operation's URL is the origin.) Credentials for the engine's host must not
    /// be added then; the authenticators that come with Courier add nothing to such a request, and a
    /// 401 from such a request starts no token refresh.
    public var isCrossOrigin: Bool {
        if let crossOrigin { return crossOrigin }
        return Self.crossOrigin(url: url, originalURL: originalURL, visited: [], engineOrigin: engineOrigin)
    }

    /// Time since the first attempt began (``RequestInterceptor/retry(_:after:context:)``; zero while adapting).
    public var elapsed: Duration = .zero

    /// Set by the pipeline, which knows the whole chain (``crossOrigin(url:originalURL:visited:engineOrigin:)``).
    var crossOrigin: Bool?

    /// The chain rule: `url`, the original URL and every URL `visited` before it (redirect hops) all
    /// have the engine's origin (or the original URL's, for an engine without one).
    static func crossOrigin(url: URL, originalURL: URL, visited: [URL], engineOrigin: String?) -> Bool {
        guard let home = engineOrigin ?? Origin(originalURL)?.description else { return true }
        if Origin(url)?.description != home { return true }
        if url != originalURL, Origin(originalURL)?.description != home { return true }
        return visited.contains { $0 != url && Origin($0)?.description != home }
    }
}
