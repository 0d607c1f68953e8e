public import Foundation
public import HTTPTypes
import NIOConcurrencyHelpers

/// Answers `WWW-Authenticate: Digest` challenges (RFC 7616: MD5, SHA-256 and their `-sess` forms,
/// `qop=auth`): an interceptor that comes with Courier.
///
/// The first request to an origin goes without credentials; its 401 carries the challenge, and the
/// request is sent again with the answer. Later requests to that origin answer the same challenge at
/// once, counting the nonce (`nc`) up. A challenge marked `stale=true` (an expired nonce) is answered
/// again with the new nonce; a 401 to credentials just sent, without `stale`, means they are wrong: the
/// operation fails with ``NetworkError/Code/authenticationFailed``, never loops. Nothing is sent to
/// another origin after a redirect.
/// ```swift
/// configuration.interceptors = [DigestAuthenticator(user: "ada", password: "secret")]
/// ```
public final class DigestAuthenticator: RequestInterceptor {
    private struct Session {
        var challenge: DigestChallenge
        var nonceCount: UInt32 = 0
        let clientNonce: String
    }

    /// The credentials answered with.
    public let credentials: PasswordCredentials
    /// The challenge answered per origin (`scheme://host:port`).
    private let sessions = NIOLockedValueBox<[String: Session]>([:])

    /// Creates an authenticator for these credentials.
    public init(credentials: PasswordCredentials) {
        self.credentials = credentials
    }

    /// Creates an authenticator for a user and password.
    public convenience init(user: String, password: String) {
        self.init(credentials: PasswordCredentials(user: user, password: password))
    }

    /// The user and a digest of the password, for the cache's partition (the header itself changes with
    /// every nonce).
    public func cacheCredentials(for url: URL) -> HTTPFields {
        [.authorization: "Digest " + Digests.sha256Hex(Data("\(credentials.user):\(credentials.password)".utf8))]
    }

    /// Answers the origin's last challenge, when there is one.
    public func adapt(_ request: HTTPRequest, context: InterceptorContext) async throws -> HTTPRequest {
        guard !context.isCrossOrigin, let origin = Self.origin(of: context.url) else { return request }
        let answer = sessions.withLockedValue { sessions -> (DigestChallenge, UInt32, String)? in
            guard var session = sessions[origin] else { return nil }
            session.nonceCount &+= 1
            sessions[origin] = session
            return (session.challenge, session.nonceCount, session.clientNonce)
        }
        guard let (challenge, count, clientNonce) = answer else { return request }
        var request = request
        request.headerFields[.authorization] = challenge.authorization(
            credentials: credentials, method: request.method.rawValue, requestTarget: request.path ?? "/",
            nonceCount: count, clientNonce: clientNonce)
        return request
    }

    /// On a 401 with a Digest challenge: retries with the answer, unless the credentials just sent were
    /// refused.
    public func retry(_ request: HTTPRequest, after failure: NetworkError, attempt: Int) async -> RetryDecision {
        // Three attempts at most: without credentials, with them, and once more for a stale nonce (a
        // 401 from another origin, which gets no credentials, cannot make it loop).
        guard attempt <= 3, let response = failure.response, response.statusCode == 401, let url = request.url,
            let origin = Self.origin(of: url), origin == Self.origin(of: response.url)
        else { return .doNotRetry }
        let offered = AuthenticationChallenge.challenges(in: response.headers).filter { $0.scheme == "digest" }
        guard !offered.isEmpty else { return .doNotRetry }
        guard let challenge = offered.lazy.compactMap({ try? DigestChallenge($0) }).first else {
            return .fail(NetworkError(
                .authenticationFailed, "the server's Digest challenge cannot be answered (unknown algorithm, or qop=auth-int only)",
                url: failure.url, response: response))
        }
        let sentNonce = Self.sentNonce(in: request)
        if sentNonce != nil, !challenge.isStale || sentNonce == challenge.nonce || attempt > 3 {
            return .fail(NetworkError(
                .authenticationFailed, "the server refused the Digest credentials for \(challenge.realm)",
                url: failure.url, response: response))
        }
        sessions.withLockedValue { $0[origin] = Session(challenge: challenge, clientNonce: Self.makeClientNonce()) }
        return .retry(after: .zero)
    }

    /// The nonce of the `Authorization: Digest` field the request carried, if any.
    static func sentNonce(in request: HTTPRequest) -> String? {
        guard let value = request.headerFields[.authorization], value.lowercased().hasPrefix("digest ") else { return nil }
        return AuthenticationChallenge.parse(value).first?.parameter("nonce") ?? ""
    }

    static func origin(of url: URL) -> String? {
        guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased() else { return nil }
        let port = url.port ?? (scheme == "https" ? 443 : 80)
        return "\(scheme)://\(host):\(port)"
    }

    static func makeClientNonce() -> String {
        var generator = SystemRandomNumberGenerator()
        return Data((0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }).base64EncodedString()
    }
}
