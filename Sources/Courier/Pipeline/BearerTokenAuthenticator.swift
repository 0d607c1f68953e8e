public import Foundation
public import HTTPTypes
import NIOConcurrencyHelpers

/// Adds `Authorization: Bearer <token>` to the engine's requests and refreshes the token once when
/// requests are refused with 401: an interceptor that comes with Courier.
///
/// However many requests are refused at once, the refresh runs once; every one of them is then sent
/// again with the new token. A refresh that fails fails them all with one
/// ``NetworkError/Code/authenticationFailed`` error (its ``NetworkError/underlying`` is what the
/// refresh threw), and so do requests refused with the same token in the 10 seconds after it (a burst
/// causes one refresh, not one per wave); a later refusal tries again. An operation refreshes at most
/// once: refused again with the new token, it fails, never loops.
///
/// The token goes only to the engine's origin, and only on a chain that never left it
/// (``InterceptorContext/isCrossOrigin``): not to an absolute URL elsewhere, not after a redirect away,
/// not after a redirect from elsewhere back to the engine's host. Only a 401 from the engine's origin to
/// a request that carried one of this authenticator's tokens (or none, before the first token) is
/// refreshed or retried: a CDN's 401, or a 401 to the app's own `Authorization` for a partner, is left
/// alone. A refresh that does not return within `refreshTimeout` fails like a refresh that threw; the
/// operation's total timeout and its cancellation end the wait for it sooner.
///
/// ```swift
/// let auth = BearerTokenAuthenticator(token: keychain.accessToken) { refused in
///     try await session.refresh()          // through an engine without this authenticator
/// }
/// configuration.interceptors = [auth]
/// ```
///
/// The refresh must not go through an engine that has this authenticator (its own 401 would wait for
/// itself). Requests adapted while a refresh runs carry the current token: waiting for the refresh
/// there would hold the queue's slots, and a refresh sent through the same queue would wait for them.
/// The token is kept in memory only, never written to the outbox, the cache or logs.
public final class BearerTokenAuthenticator: RequestInterceptor {
    /// Gets a new token; called with the token that was refused.
    public typealias Refresh = @Sendable (_ refused: String?) async throws -> String

    private struct State {
        var machine: TokenRefreshStateMachine
        var refresh: Task<String, any Error>?
        var refreshFailure: NetworkError?
        var refreshCount = 0
    }

    private let state: NIOLockedValueBox<State>
    private let refresh: Refresh
    /// How long a refresh may take before it counts as failed.
    public let refreshTimeout: Duration

    /// Creates an authenticator.
    /// - Parameters:
    ///   - token: The token to start with; `nil` sends no `Authorization` until the first refresh (made
    ///     when a request is refused).
    ///   - refreshTimeout: How long a refresh may take before it counts as failed (the requests waiting
    ///     for it fail with ``NetworkError/Code/authenticationFailed``); 30 seconds by default.
    ///   - refresh: Gets a new token.
    public init(token: String?, refreshTimeout: Duration = .seconds(30), refresh: @escaping Refresh) {
        state = NIOLockedValueBox(State(machine: TokenRefreshStateMachine(token: token)))
        self.refreshTimeout = refreshTimeout
        self.refresh = refresh
    }

    /// The token requests carry now.
    public var token: String? { state.withLockedValue { $0.machine.token } }

    /// How many refreshes have started (for tests and metrics).
    public var refreshCount: Int { state.withLockedValue { $0.refreshCount } }

    /// Replaces the token (after a new login): requests from now on carry it.
    public func setToken(_ token: String?) {
        state.withLockedValue { $0.machine.setToken(token) }
    }

    /// Adds the current token, for the operation's own origin only.
    public func adapt(_ request: HTTPRequest, context: InterceptorContext) async throws -> HTTPRequest {
        guard !context.isCrossOrigin, let token else { return request }
        var request = request
        request.headerFields[.authorization] = "Bearer " + token
        return request
    }

    /// The current token, for the cache's partition.
    public func cacheCredentials(for url: URL) -> HTTPFields {
        guard let token else { return [:] }
        return [.authorization: "Bearer " + token]
    }

    /// Decides with no time spent so far.
    public func retry(_ request: HTTPRequest, after failure: NetworkError, attempt: Int) async -> RetryDecision {
        await retry(request, after: failure, attempt: attempt, elapsed: .zero)
    }

    /// ``retry(_:after:context:)`` for a request taken to be for the engine's origin.
    public func retry(_ request: HTTPRequest, after failure: NetworkError, attempt: Int, elapsed: Duration) async -> RetryDecision {
        let url = failure.response?.url ?? request.url ?? URL(fileURLWithPath: "/")
        var context = InterceptorContext(attempt: attempt, originalURL: url)
        context.elapsed = elapsed
        return await retry(request, after: failure, context: context)
    }

    /// On a 401 from the engine's origin to a request that carried a token of this authenticator (or
    /// none, before the first token): retries with a newer token, refreshing it first when nobody has yet.
    public func retry(_ request: HTTPRequest, after failure: NetworkError, context: InterceptorContext) async -> RetryDecision {
        guard failure.response?.statusCode == 401, !context.isCrossOrigin else { return .doNotRetry }
        let elapsed = context.elapsed
        let sent = Self.bearerToken(in: request)
        // A request that went without the token while there is one was not this authenticator's (another
        // origin, after a redirect or an absolute URL): its 401 is not about the token.
        if sent == nil, token != nil { return .doNotRetry }
        let now = ContinuousClock.now
        let startedAt = now - elapsed
        let url = failure.url
        let (decision, task) = state.withLockedValue { state -> (TokenRefreshStateMachine.Refused, Task<String, any Error>?) in
            let decision = state.machine.refused(sent: sent, startedAt: startedAt, now: now)
            switch decision {
            case .startRefresh:
                state.refreshCount += 1
                state.refreshFailure = nil
                // Not a child of this request's task: cancelling one request must not cancel the refresh
                // the others wait for. It records its outcome before anyone waiting hears it, so all of
                // them retry with the new token (or fail with the one error).
                state.refresh = Task { try await self.runRefresh(refused: sent, url: url) }
                return (decision, state.refresh)
            case .join:
                return (decision, state.refresh)
            case .retryNow, .fail, .notOurs:
                return (decision, nil)
            }
        }
        switch decision {
        case .notOurs:
            return .doNotRetry
        case .retryNow:
            return .retry(after: .zero)
        case .fail(.freshTokenRefused):
            return .fail(NetworkError(
                .authenticationFailed, "the server refused the token obtained by a refresh", url: url, response: failure.response))
        case .fail(.refreshFailed):
            return .fail(state.withLockedValue { $0.refreshFailure } ?? NetworkError(.authenticationFailed, "the token refresh failed", url: url))
        case .startRefresh, .join:
            guard let task else { return .doNotRetry }
            do {
                _ = try await task.value
                return .retry(after: .zero)
            } catch {
                return .fail(error as? NetworkError ?? NetworkError(.authenticationFailed, "the token refresh failed", url: url, underlying: error))
            }
        }
    }

    /// Runs the app's refresh and records its outcome in the state machine.
    private func runRefresh(refused: String?, url: String?) async throws -> String {
        let refresh = self.refresh
        let outcome = await BoundedWait<Result<String, any Error>>.run(until: .now + refreshTimeout) {
            do { return .success(try await refresh(refused)) } catch { return .failure(error) }
        }
        do {
            let token: String
            switch outcome {
            case .value(let result): token = try result.get()
            case .timedOut: throw NetworkError(.timeout, "the token refresh did not return within \(refreshTimeout)", url: url)
            case .cancelled: throw NetworkError.cancelled(url: url)
            }
            state.withLockedValue { $0.machine.refreshSucceeded(token, at: .now) }
            return token
        } catch {
            let reported = NetworkError(.authenticationFailed, "the token refresh failed: \(error)", url: url, underlying: error)
            state.withLockedValue { state in
                state.machine.refreshFailed(at: .now)
                state.refreshFailure = reported
            }
            throw reported
        }
    }

    /// The token of an `Authorization: Bearer` field, if the request has one.
    static func bearerToken(in request: HTTPRequest) -> String? {
        guard let value = request.headerFields[.authorization] else { return nil }
        let parts = value.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        return String(parts[1])
    }
}
