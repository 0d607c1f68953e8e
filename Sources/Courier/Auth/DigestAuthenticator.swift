public import Foundation
public import HTTPTypes
import NIOConcurrencyHelpers

/// Answers `WWW-Authenticate: Digest` challenges (RFC 7616: SHA-256, MD5 and their `-sess` forms,
/// `qop=auth`, `userhash`): an interceptor that comes with Courier.
///
/// The first request to an origin goes without credentials; its 401 carries the challenge, and the
/// request is sent again with the answer. Later requests answer at once, counting the nonce (`nc`)
/// up, with one session per protection space (the origin and the challenge's realm): two realms of
/// one origin each keep their own nonce. When a server offers SHA-256 and MD5, SHA-256 is used.
/// An `Authentication-Info` `nextnonce` is used by the next request. A new challenge after a nonce
/// the server had accepted (`stale=true`, or a server that restarted or a node behind a balancer that
/// never saw the nonce) is answered once with the new nonce; a 401 to credentials just sent otherwise
/// means they are wrong: the operation fails with ``NetworkError/Code/authenticationFailed``, never
/// loops. Attempts are counted per challenge, whatever other interceptors retried before.
///
/// Nothing is sent, and no challenge answered, for a request to another origin than the engine's
/// (``InterceptorContext/isCrossOrigin``).
/// ```swift
/// configuration.interceptors = [DigestAuthenticator(user: "ada", password: "secret")]
/// ```
public final class DigestAuthenticator: RequestInterceptor {
    /// A request as sent, to find the decision about its 401 when the pipeline asks whether to retry.
    private struct SentRequest: Hashable {
        var method: String
        var scheme: String?
        var authority: String?
        var path: String?
        var authorization: String?

        init(_ request: HTTPRequest) {
            method = request.method.rawValue
            scheme = request.scheme
            authority = request.authority
            path = request.path
            authorization = request.headerFields[.authorization]
        }
    }

    private struct State {
        var machine: DigestAuthenticationStateMachine
        /// What ``DigestAuthenticator/didReceive(_:for:context:)`` decided about 401s, for ``retry(_:after:attempt:)``
        /// to return (a queue per request: identical requests may be refused at once). Oldest first.
        var decisions: [(request: SentRequest, action: DigestAuthenticationStateMachine.ChallengeAction)] = []
    }

    /// Decisions kept for `retry` (one per refused request in flight; a decision `retry` is never
    /// asked about, when an interceptor before this one retried, is dropped after this many others).
    private static let maximumPendingDecisions = 256

    /// The credentials answered with.
    public let credentials: PasswordCredentials
    private let state: NIOLockedValueBox<State>

    /// Creates an authenticator for these credentials.
    /// - Parameter credentials: The user and password.
    public init(credentials: PasswordCredentials) {
        self.credentials = credentials
        self.state = NIOLockedValueBox(State(machine: DigestAuthenticationStateMachine(credentials: credentials)))
    }

    /// Creates an authenticator for a user and password.
    /// - Parameters:
    ///   - user: The user name.
    ///   - password: The password.
    public convenience init(user: String, password: String) {
        self.init(credentials: PasswordCredentials(user: user, password: password))
    }

    /// The user and a digest of the password, for the cache's partition (the header itself changes with
    /// every nonce).
    /// - Parameter url: The request's URL (unused: the same for every origin).
    /// - Returns: A stable field that tells one user from another.
    public func cacheCredentials(for url: URL) -> HTTPFields {
        [.authorization: "Digest " + Digests.sha256Hex(Data("\(credentials.user):\(credentials.password)".utf8))]
    }

    /// Answers the protection space's last challenge, when there is one, for the engine's origin only.
    /// - Parameters:
    ///   - request: The request as the previous interceptors left it.
    ///   - context: Where the hop goes.
    /// - Returns: The request with `Authorization: Digest ...`, or unchanged.
    public func adapt(_ request: HTTPRequest, context: InterceptorContext) async throws -> HTTPRequest {
        guard !context.isCrossOrigin else { return request }
        let target = Self.target(of: request, context: context)
        let clientNonce = Self.makeClientNonce()
        let value = state.withLockedValue {
            $0.machine.authorization(for: target, method: request.method.rawValue, requestTarget: request.path ?? "/", clientNonce: clientNonce)
        }
        guard let value else { return request }
        var request = request
        request.headerFields[.authorization] = value
        return request
    }

    /// Reads what the engine's origin answered: a 401's challenges (the decision ``retry(_:after:attempt:)``
    /// returns), or the acceptance of the credentials sent and its `Authentication-Info`.
    /// - Parameters:
    ///   - response: The status and header fields.
    ///   - request: The request as sent.
    ///   - context: Where it went.
    public func didReceive(_ response: HTTPResponse, for request: HTTPRequest, context: InterceptorContext) async {
        guard !context.isCrossOrigin else { return }
        let target = Self.target(of: request, context: context)
        let sent = DigestAuthenticationStateMachine.Sent(authorization: request.headerFields[.authorization])
        if response.status.code == 401 {
            let challenges = AuthenticationChallenge.challenges(in: response.headerFields)
            state.withLockedValue { state in
                let action = state.machine.receivedChallenges(challenges, for: target, sent: sent)
                guard action != .ignore else { return }
                state.decisions.append((SentRequest(request), action))
                if state.decisions.count > Self.maximumPendingDecisions { state.decisions.removeFirst() }
            }
        } else if let sent {
            let info = response.headerFields[.authenticationInfo]
            state.withLockedValue { $0.machine.receivedSuccess(for: target, sent: sent, authenticationInfo: info) }
        }
    }

    /// On a 401 from the engine's origin with a Digest challenge: retries with the answer, or fails
    /// with ``NetworkError/Code/authenticationFailed`` when the credentials just sent were refused.
    /// - Parameters:
    ///   - request: The request as last sent.
    ///   - failure: The failed attempt; a 401 carries its response.
    ///   - attempt: Not used: challenges are counted per protection space and nonce.
    /// - Returns: The decision.
    public func retry(_ request: HTTPRequest, after failure: NetworkError, attempt: Int) async -> RetryDecision {
        guard let response = failure.response, response.statusCode == 401 else { return .doNotRetry }
        let key = SentRequest(request)
        let action = state.withLockedValue { state -> DigestAuthenticationStateMachine.ChallengeAction? in
            guard let index = state.decisions.firstIndex(where: { $0.request == key }) else { return nil }
            return state.decisions.remove(at: index).action
        }
        switch action {
        case .retry:
            return .retry(after: .zero)
        case .fail(let reason):
            return .fail(NetworkError(.authenticationFailed, reason.message, url: failure.url, response: response))
        case .ignore, nil:
            return .doNotRetry
        }
    }

    /// The origin and path of a hop, as the state machine keys them.
    static func target(of request: HTTPRequest, context: InterceptorContext) -> DigestAuthenticationStateMachine.Target {
        let url = request.url ?? context.url
        let path = (request.path ?? "/").split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? "/"
        return DigestAuthenticationStateMachine.Target(origin: OutboxRecord.origin(of: url), path: path.isEmpty ? "/" : path)
    }

    /// A fresh cnonce: 16 random bytes, base64.
    static func makeClientNonce() -> String {
        var generator = SystemRandomNumberGenerator()
        return Data((0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }).base64EncodedString()
    }
}
