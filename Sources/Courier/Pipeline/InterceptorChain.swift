import Foundation
import HTTPTypes

/// The interceptors of one operation, in the order they run: the engine's, then the operation's own.
struct InterceptorChain: Sendable {
    /// The most attempts any operation makes, whatever its interceptors decide: an interceptor that
    /// always answers "retry" cannot keep a request going forever.
    static let attemptLimit = 16

    var interceptors: [any RequestInterceptor] = []
    /// Whether the request is a replay from the outbox.
    var isReplay = false
    /// The engine's origin (`scheme://host:port`), when it has a host: credentials stay with it.
    var engineOrigin: String?
    /// Whether the operation freezes when it cannot be sent (freezable, not a replay): a failure that
    /// freezes it (``NetworkOperation/freezes(after:)``) is not retried here first. The outbox's own
    /// backoff takes over, at once, instead of a ``RetryPolicy`` waiting seconds before it freezes.
    var freezesWhenOffline = false

    func context(attempt: Int, redirectCount: Int, originalURL: URL, url: URL) -> InterceptorContext {
        var context = InterceptorContext(attempt: attempt, redirectCount: redirectCount, originalURL: originalURL, url: url, isReplay: isReplay)
        context.engineOrigin = engineOrigin
        return context
    }

    var isEmpty: Bool { interceptors.isEmpty }

    /// The request after every interceptor adapted it. Method, URL and header fields may change; a URL
    /// that is not http(s), or an error thrown by an interceptor, fails the request with a typed error.
    func adapt(_ request: PreparedRequest, attempt: Int, redirectCount: Int, originalURL: URL) async throws -> PreparedRequest {
        guard !interceptors.isEmpty else { return request }
        var message = HTTPRequest(method: request.method, url: request.url, headerFields: request.headers)
        let context = context(attempt: attempt, redirectCount: redirectCount, originalURL: originalURL, url: request.url)
        for interceptor in interceptors {
            do {
                message = try await interceptor.adapt(message, context: context)
            } catch let error as NetworkError {
                throw error
            } catch {
                if Task.isCancelled { throw NetworkError.cancelled(url: request.url.absoluteString) }
                throw NetworkError(
                    .interceptorFailed, "\(type(of: interceptor)) failed to adapt the request: \(error)",
                    url: request.url.absoluteString, underlying: error)
            }
        }
        var adapted = request
        adapted.method = message.method
        guard let url = message.url, let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https", url.host != nil else {
            throw NetworkError(.invalidURL, "an interceptor made the URL invalid", url: request.url.absoluteString)
        }
        adapted.url = url
        // No field can carry CR or LF onto the wire: HTTPFields legalizes every value it is given
        // (control characters become spaces), so an interceptor cannot inject a header line.
        adapted.headers = message.headerFields
        return adapted
    }

    /// Shows every interceptor a response head.
    func didReceive(
        status: HTTPResponse.Status, headers: HTTPFields, for request: PreparedRequest, attempt: Int, redirectCount: Int, originalURL: URL
    ) async {
        guard !interceptors.isEmpty else { return }
        let message = HTTPRequest(method: request.method, url: request.url, headerFields: request.headers)
        let response = HTTPResponse(status: status, headerFields: headers)
        let context = context(attempt: attempt, redirectCount: redirectCount, originalURL: originalURL, url: request.url)
        for interceptor in interceptors { await interceptor.didReceive(response, for: message, context: context) }
    }

    /// The first decision other than ``RetryDecision/doNotRetry``, or `doNotRetry` when nobody retries
    /// or the attempt limit is reached.
    func retryDecision(
        for request: PreparedRequest, after failure: NetworkError, attempt: Int, elapsed: Duration
    ) async -> RetryDecision {
        guard !interceptors.isEmpty, attempt < Self.attemptLimit, failure.code != .cancelled,
            !(freezesWhenOffline && NetworkOperation.freezes(after: failure))
        else { return .doNotRetry }
        let message = HTTPRequest(method: request.method, url: request.url, headerFields: request.headers)
        for interceptor in interceptors {
            let decision = await interceptor.retry(message, after: failure, attempt: attempt, elapsed: elapsed)
            if case .doNotRetry = decision { continue }
            return decision
        }
        return .doNotRetry
    }
}

extension NetworkEngine.Configuration {
    /// The engine's part of every operation's pipeline: the cookie jar, then the interceptors.
    var pipeline: [any RequestInterceptor] {
        guard let cookieJar else { return interceptors }
        return [cookieJar] + interceptors
    }
}
