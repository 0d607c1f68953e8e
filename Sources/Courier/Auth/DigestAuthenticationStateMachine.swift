/// Digest access authentication (RFC 7616) as a pure state machine: which challenge to answer, the
/// nonce count, `stale` handling and when to give up. No I/O, no clock; the caller injects the
/// client nonce (16+ random bytes, base64 or hex) and runs the returned actions.
///
/// Events, in the order a request meets them:
/// 1. ``authorization(method:requestTarget:clientNonce:)`` when an attempt is built: `nil` before
///    any challenge; else the `Authorization` value, with `nc` one higher than the last one sent under
///    the same nonce.
/// 2. ``receivedChallenges(_:)`` on a 401 (or 407) answering that attempt: `.retry` (build the next
///    attempt, which will carry credentials) or `.fail` (never retry: wrong credentials, or no
///    challenge Courier can answer).
/// 3. ``receivedSuccess(authenticationInfo:)`` on any other answer to an attempt that carried
///    credentials: they were accepted; an `Authentication-Info` `nextnonce` is adopted.
///
/// Never loops: after credentials are sent under a nonce, a new challenge is retried only when it
/// says `stale=true` with a different nonce, or when the nonce sent had been accepted before (a nonce
/// reused across requests may have expired without the server saying `stale`), and at most
/// ``maximumRenewalsWithoutSuccess`` times in a row. Everything else is a wrong password: `.fail`.
///
/// `qop=auth` only: a challenge offering only `auth-int` is refused (RFC 7616 has no fallback for it)
/// and the next supported challenge of the response is used instead, if any. A challenge without
/// `qop` is answered the RFC 2069 way. For `-sess` algorithms the first cnonce used under a nonce is
/// kept for that nonce (session key, §3.4.2).
struct DigestAuthenticationStateMachine: Sendable {
    /// What to do about a challenge.
    enum ChallengeAction: Equatable, Sendable {
        /// Send the request again; its ``DigestAuthenticationStateMachine/authorization(method:requestTarget:clientNonce:)``
        /// will carry credentials.
        case retry
        /// Do not retry; fail the request with this reason.
        case fail(Failure)
    }

    /// Why authentication cannot succeed.
    enum Failure: Equatable, Sendable {
        /// The server challenged again for the credentials just sent, without `stale=true`.
        case credentialsRejected
        /// No Digest challenge with a supported algorithm and `qop`, realm and nonce.
        case unsupportedChallenge

        /// The typed error for this failure.
        var error: NetworkError {
            switch self {
            case .credentialsRejected:
                NetworkError(.authenticationFailed, "The server rejected the Digest credentials")
            case .unsupportedChallenge:
                NetworkError(.authenticationFailed, "No Digest challenge Courier can answer (algorithm or qop not supported)")
            }
        }
    }

    /// The challenge in use and what was sent under it.
    private struct Session: Sendable {
        var challenge: DigestChallenge
        /// The nc of the last request sent under this nonce (0: none yet).
        var nonceCount: UInt32 = 0
        /// The cnonce of the first request under this nonce, for `-sess` algorithms.
        var sessionClientNonce: String?
        /// Whether a request under this nonce was answered with something other than a challenge.
        var wasAccepted = false
    }

    private enum State: Sendable {
        /// No challenge seen yet.
        case initial
        /// A challenge to answer; nothing sent under it since it arrived or was last accepted.
        case ready(Session)
        /// Credentials sent under the session's nonce, no answer yet.
        case sent(Session)
        /// Authentication failed; nothing more is sent.
        case failed(Failure)
    }

    private var state: State = .initial
    /// Nonce renewals (`stale`, or an accepted nonce gone) since credentials were last accepted.
    private var renewalsWithoutSuccess = 0
    /// A server that keeps answering `stale=true` with new nonces is not believed forever.
    static let maximumRenewalsWithoutSuccess = 2
    /// The user and password.
    let credentials: PasswordCredentials

    /// A machine that has seen no challenge yet.
    /// - Parameter credentials: The user and password to answer with.
    init(credentials: PasswordCredentials) {
        self.credentials = credentials
    }

    /// The failure, once authentication has failed.
    var failure: Failure? {
        if case .failed(let failure) = state { return failure }
        return nil
    }

    /// The nonce in use, if any.
    var currentNonce: String? {
        switch state {
        case .ready(let session), .sent(let session): session.challenge.nonce
        case .initial, .failed: nil
        }
    }

    // MARK: Events

    /// The `Authorization` value for the next attempt, or `nil` when there is no challenge to answer
    /// (none yet, or authentication failed). Counts one use of the nonce.
    /// - Parameters:
    ///   - method: The request method, as sent (`GET`).
    ///   - requestTarget: The request-target, as sent (`/dir/index.html?x=1`).
    ///   - clientNonce: A fresh random cnonce (the caller's; injected for tests).
    mutating func authorization(method: String, requestTarget: String, clientNonce: String) -> String? {
        switch state {
        case .initial, .failed:
            return nil
        case .ready(var session), .sent(var session):
            guard session.nonceCount < UInt32.max else {
                state = .failed(.credentialsRejected)
                return nil
            }
            session.nonceCount += 1
            if session.challenge.algorithm.isSession, session.sessionClientNonce == nil {
                session.sessionClientNonce = clientNonce
            }
            let value = session.challenge.authorization(
                credentials: credentials, method: method, requestTarget: requestTarget,
                nonceCount: session.nonceCount, clientNonce: session.sessionClientNonce ?? clientNonce)
            state = .sent(session)
            return value
        }
    }

    /// A 401 (`WWW-Authenticate`) or 407 (`Proxy-Authenticate`) answered the last attempt.
    /// - Parameter challenges: All the response's challenges, in order (see
    ///   ``AuthenticationChallenge/challenges(in:proxy:)``); the first Digest one Courier can answer is
    ///   used (servers list them most preferred first, RFC 7616 §3.7).
    /// - Returns: Whether to retry.
    mutating func receivedChallenges(_ challenges: [AuthenticationChallenge]) -> ChallengeAction {
        if case .failed(let failure) = state { return .fail(failure) }
        guard let challenge = challenges.lazy.compactMap({ try? DigestChallenge($0) }).first else {
            // An attempt that sent credentials and got a challenge Courier cannot answer is a failure
            // either way.
            state = .failed(.unsupportedChallenge)
            return .fail(.unsupportedChallenge)
        }
        switch state {
        case .failed(let failure):
            return .fail(failure)
        case .initial, .ready:
            state = .ready(Session(challenge: challenge))
            return .retry
        case .sent(let sent):
            let isNewNonce = challenge.nonce != sent.challenge.nonce
            if (challenge.isStale || sent.wasAccepted) && isNewNonce && renewalsWithoutSuccess < Self.maximumRenewalsWithoutSuccess {
                renewalsWithoutSuccess += 1
                state = .ready(Session(challenge: challenge))
                return .retry
            }
            state = .failed(.credentialsRejected)
            return .fail(.credentialsRejected)
        }
    }

    /// A response other than a challenge answered an attempt that carried credentials.
    /// - Parameter authenticationInfo: The response's `Authentication-Info` value, if any; its
    ///   `nextnonce` (RFC 7616 §3.5) replaces the nonce for later requests.
    mutating func receivedSuccess(authenticationInfo: String? = nil) {
        guard case .sent(var session) = state else { return }
        session.wasAccepted = true
        renewalsWithoutSuccess = 0
        if let authenticationInfo,
            let nextNonce = AuthenticationChallenge.parameters(ofInfo: authenticationInfo).first(where: { $0.name == "nextnonce" })?.value,
            !nextNonce.isEmpty, nextNonce != session.challenge.nonce {
            session.challenge.nonce = nextNonce
            session.challenge.isStale = false
            session.nonceCount = 0
            session.sessionClientNonce = nil
        }
        state = .ready(session)
    }
}
