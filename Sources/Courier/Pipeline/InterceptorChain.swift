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

    /// The context of a request at `url` whose chain began at `originalURL` and went through `visited`
    /// (the redirect hops before it).
    func context(attempt: Int, visited: [URL], originalURL: URL, url: URL) -> InterceptorContext {
        var context = InterceptorContext(attempt: attempt, redirectCount: visited.count, originalURL: originalURL, url: url, isReplay: isReplay)
        context.engineOrigin = engineOrigin
        context.crossOrigin = InterceptorContext.crossOrigin(url: url, originalURL: originalURL, visited: visited, engineOrigin: engineOrigin)
        return context
    }

    var isEmpty: Bool { interceptors.isEmpty }

    /// The request after every interceptor adapted it, in order. Method, URL and header fields may
    /// change. Each interceptor sees the previous one's result and a context recomputed from it: after
    /// one rewrites the URL, the next ones (the cookie jar last) see the new URL, and the credential
    /// fields the request carried for the old origin (`Authorization`, `Cookie`, the engine's sensitive
    /// names) are dropped when the new URL has another origin; only what the rewriting interceptor set
    /// itself stays. A URL that is not http(s), or an error thrown by an interceptor, fails the request
    /// with a typed error.
    /// - Parameter visited: The URLs of the redirect hops before this one.
    func adapt(_ request: PreparedRequest, attempt: Int, visited: [URL], originalURL: URL) async throws -> PreparedRequest {
        guard !interceptors.isEmpty else { return request }
        var message = HTTPRequest(method: request.method, url: request.url, headerFields: request.headers)
        var context = context(attempt: attempt, visited: visited, originalURL: originalURL, url: request.url)
        let (scheme, authority, path) = (message.scheme, message.authority, message.path)
        for interceptor in interceptors {
            let before = message
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
            guard message.scheme != before.scheme || message.authority != before.authority || message.path != before.path else { continue }
            guard let url = message.url else { break }
            if message.scheme != before.scheme || message.authority != before.authority, Origin(url) != Origin(context.url) {
                message.headerFields = Self.droppingCarriedCredentials(
                    message.headerFields, before: before.headerFields, names: CredentialFields.names.union(request.sensitiveNames))
            }
            context = self.context(attempt: attempt, visited: visited + [context.url], originalURL: originalURL, url: url)
            context.redirectCount = visited.count
        }
        var adapted = request
        adapted.method = message.method
        if message.scheme != scheme || message.authority != authority || message.path != path {
            // Rebuilt (and checked) only when an interceptor changed it: parsing a URL costs.
            guard let url = message.url, let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https", url.host != nil else {
                throw NetworkError(.invalidURL, "an interceptor made the URL invalid", url: request.url.absoluteString)
            }
            adapted.url = url
        }
        // No field can carry CR or LF onto the wire: HTTPFields legalizes every value it is given
        // (control characters become spaces), so an interceptor cannot inject a header line.
        adapted.headers = message.headerFields
        return adapted
    }

    /// `fields` without the credential fields (`names`, canonical) it carries unchanged from `before`:
    /// what was added for the old origin. A value the rewriting interceptor set itself stays.
    static func droppingCarriedCredentials(_ fields: HTTPFields, before: HTTPFields, names: Set<String>) -> HTTPFields {
        var kept = HTTPFields()
        for field in fields {
            let name = field.name.canonicalName
            if names.contains(name), fields[values: field.name] == before[values: field.name] { continue }
            kept.append(field)
        }
        return kept
    }

    /// Shows every interceptor a response head.
    /// - Parameter visited: The URLs of the redirect hops before `request`'s.
    func didReceive(
        status: HTTPResponse.Status, headers: HTTPFields, for request: PreparedRequest, attempt: Int, visited: [URL], originalURL: URL
    ) async {
        guard !interceptors.isEmpty else { return }
        let message = HTTPRequest(method: request.method, url: request.url, headerFields: request.headers)
        let response = HTTPResponse(status: status, headerFields: headers)
        let context = context(attempt: attempt, visited: visited, originalURL: originalURL, url: request.url)
        for interceptor in interceptors { await interceptor.didReceive(response, for: message, context: context) }
    }

    /// The first decision other than ``RetryDecision/doNotRetry``, or `doNotRetry` when nobody retries,
    /// the attempt limit is reached, or a redirect chain changed the method of a request that may not
    /// be repeated (a retry sends `original` again, not the last hop).
    /// - Parameters:
    ///   - original: The first request of the attempt that failed, as sent: what a retry repeats.
    ///   - sent: The last request of that attempt, as sent: what failed.
    ///   - deadline: When the decision must be made by (the operation's total timeout); it and the task's
    ///     cancellation end a wait inside an interceptor (a token refresh).
    func retryDecision(
        original: PreparedRequest, sent: PreparedRequest, after failure: NetworkError, attempt: Int, elapsed: Duration,
        deadline: ContinuousClock.Instant?
    ) async -> RetryDecision {
        guard !interceptors.isEmpty, attempt < Self.attemptLimit, failure.code != .cancelled,
            !(freezesWhenOffline && NetworkOperation.freezes(after: failure))
        else { return .doNotRetry }
        if original.method != sent.method, !Self.mayRepeat(original) { return .doNotRetry }
        let message = HTTPRequest(method: sent.method, url: sent.url, headerFields: sent.headers)
        let response = failure.response
        var context = context(
            attempt: attempt, visited: response?.redirectChain.map(\.url) ?? [], originalURL: response?.originalURL ?? original.url, url: sent.url)
        context.elapsed = elapsed
        for interceptor in interceptors {
            let bounded = await BoundedWait<RetryDecision>.run(until: deadline) { [context] in
                await interceptor.retry(message, after: failure, context: context)
            }
            switch bounded {
            case .value(.doNotRetry): continue
            case .value(let decision): return decision
            case .timedOut:
                return .fail(NetworkError(
                    .timeout, "\(type(of: interceptor)) was still deciding whether to retry (a token refresh?) when the total timeout ran out",
                    url: failure.url ?? sent.url.absoluteString, underlying: failure))
            case .cancelled:
                return .fail(.cancelled(url: failure.url ?? sent.url.absoluteString))
            }
        }
        return .doNotRetry
    }

    /// Whether a request may be sent again: an idempotent method (RFC 9110 §9.2.2) or an
    /// `Idempotency-Key` field.
    static func mayRepeat(_ request: PreparedRequest) -> Bool {
        RetryPolicy.defaultIdempotentMethods.contains(request.method) || request.headers[RetryPolicy.idempotencyKey] != nil
    }
}

extension NetworkEngine.Configuration {
    /// An operation's pipeline: the engine's interceptors, the operation's own (`own`), then the cookie
    /// jar, last, so that it reads (and stores for) the URL the request really goes to.
    func pipeline(adding own: [any RequestInterceptor] = []) -> [any RequestInterceptor] {
        guard let cookieJar else { return interceptors + own }
        return interceptors + own + [cookieJar]
    }

    /// Whether operations of this engine run any interceptor of the engine's (the cookie jar included).
    var hasPipeline: Bool { cookieJar != nil || !interceptors.isEmpty }
}
