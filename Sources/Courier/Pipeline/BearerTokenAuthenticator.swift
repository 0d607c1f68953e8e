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
/// causes one refresh, not one per wave); a later refusal tries again. An operation refreshes at most once: refused again with the new token, it fails,
/// never loops. The token is added only to requests for the origin the operation asked for, never
/// after a redirect to another one.
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

    /// Creates an authenticator.
    /// - Parameters:
    ///   - token: The token to start with; `nil` sends no `Authorization` until the first refresh (made
    ///     when a request is refused).
    ///   - refresh: Gets a new token.
    public init(token: String?, refresh: @escaping Refresh) {
        state = NIOLockedValueBox(State(machine: TokenRefreshStateMachine(token: token)))
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

    /// On a 401 to a request that carried a token of this authenticator (or none, for an origin it
    /// serves): retries with a newer token, refreshing it first when nobody has yet.
    public func retry(_ request: HTTPRequest, after failure: NetworkError, attempt: Int, elapsed: Duration) async -> RetryDecision {
        guard failure.response?.statusCode == 401 else { return .doNotRetry }
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
            case .retryNow, .fail:
                return (decision, nil)
            }
        }
        switch decision {
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
        do {
            let token = try await refresh(refused)
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
