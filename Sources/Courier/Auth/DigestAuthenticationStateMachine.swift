import Foundation

/// Digest access authentication (RFC 7616) as a pure state machine: one session per protection space
/// (origin and realm), which challenge to answer, the nonce count, renewals and when to give up. No
/// I/O, no clock; the caller injects the client nonce (16+ random bytes, base64 or hex) and runs the
/// returned actions. ``DigestAuthenticator`` is its only user.
///
/// Events, in the order a request meets them (each names the request's ``Target``, and what its
/// `Authorization` field carried, ``Sent``, so that any number of requests may be in flight at once):
/// 1. ``authorization(for:method:requestTarget:clientNonce:)`` when a hop is built: `nil` before any
///    challenge from its origin; else the `Authorization` value for the protection space the path
///    belongs to, with `nc` one higher than the last one sent under that nonce.
/// 2. ``receivedChallenges(_:for:sent:)`` on a 401 answering that hop: `.retry` (build the next
///    attempt, which will carry credentials), `.fail` (never retry: wrong credentials, or no
///    challenge Courier can answer) or `.ignore` (not a Digest challenge).
/// 3. ``receivedSuccess(for:sent:authenticationInfo:)`` on any other answer to a hop that carried
///    credentials: they were accepted; an `Authentication-Info` `nextnonce` is adopted.
///
/// Never loops: after credentials are sent under a nonce, a challenge is answered again only when it
/// brings another nonce and either says `stale=true` or follows a nonce the server had accepted (a
/// server that restarted, or another node behind a balancer, forgets nonces without saying `stale`),
/// at most ``maximumRenewalsWithoutSuccess`` times in a row. A challenge for the nonce just sent, or a
/// new nonce after one never accepted, is a wrong password: `.fail`. The session keeps the newest
/// nonce either way, so the next request starts from it.
///
/// Which challenge: SHA-256 (or `SHA-256-sess`) before MD5 whatever the order the server lists them
/// in (RFC 7616 §3.7 lets local policy choose: MD5 is kept for old servers only), else the server's
/// order. `qop=auth` only: a challenge offering only `auth-int` is refused (RFC 7616 has no fallback
/// for it). A challenge without `qop` is answered the RFC 2069 way. For `-sess` algorithms the first
/// cnonce used under a nonce is kept for that nonce (session key, §3.4.2). `userhash=true` sends the
/// hashed user name (§3.4.4).
///
/// Which protection space a path belongs to: the realm that challenged that path, else the realm
/// whose `domain` URI (or, without `domain`, challenged directory) is the longest prefix of it,
/// else the realm that challenged the origin last (RFC 7616 §3.3: without `domain`, a realm covers
/// the whole origin). A 401 for another realm than the one answered is that realm's first challenge.
struct DigestAuthenticationStateMachine: Sendable {
    /// Where a request goes: its origin (`scheme://host:port`) and its path, without the query.
    struct Target: Hashable, Sendable {
        /// `scheme://host:port`, as ``OutboxRecord/origin(of:)`` spells it.
        var origin: String
        /// The path, without the query (`/dir/index.html`).
        var path: String
    }

    /// What an `Authorization: Digest` value answered: told back with the response to it.
    struct Sent: Hashable, Sendable {
        /// The realm answered.
        var realm: String
        /// The nonce answered.
        var nonce: String

        /// What `authorization` answered, or `nil` when it is not a Digest answer.
        init?(authorization: String?) {
            guard let authorization, let answer = AuthenticationChallenge.parse(authorization).first, answer.scheme == "digest",
                let realm = answer.parameter("realm"), let nonce = answer.parameter("nonce")
            else { return nil }
            self.realm = realm
            self.nonce = nonce
        }

        /// What an answer to `nonce` in `realm` sent.
        init(realm: String, nonce: String) {
            self.realm = realm
            self.nonce = nonce
        }
    }

    /// What to do about a 401.
    enum ChallengeAction: Equatable, Sendable {
        /// Send the request again; its ``DigestAuthenticationStateMachine/authorization(for:method:requestTarget:clientNonce:)``
        /// will carry credentials.
        case retry
        /// Do not retry; fail the request with this reason.
        case fail(Failure)
        /// No Digest challenge at all: not this machine's business.
        case ignore
    }

    /// Why authentication cannot succeed.
    enum Failure: Equatable, Sendable {
        /// The server challenged again for the credentials just sent.
        case credentialsRejected
        /// No Digest challenge with a supported algorithm and `qop`, realm and nonce.
        case unsupportedChallenge

        /// Why, in words, for ``NetworkError/message``.
        var message: String {
            switch self {
            case .credentialsRejected: "The server rejected the Digest credentials"
            case .unsupportedChallenge: "No Digest challenge Courier can answer (algorithm or qop not supported)"
            }
        }
    }

    /// A protection space: an origin and one of its realms (RFC 7616 §3.3, RFC 9110 §11.5).
    struct ProtectionSpace: Hashable, Sendable {
        var origin: String
        var realm: String
    }

    /// The challenge in use in one protection space and what was sent under it.
    private struct Session: Sendable {
        var challenge: DigestChallenge
        /// The nc of the last request sent under this nonce (0: none yet).
        var nonceCount: UInt32 = 0
        /// The cnonce of the first request under this nonce, for `-sess` algorithms.
        var sessionClientNonce: String?
        /// Whether a request under this nonce (or the one whose `nextnonce` it is) was accepted.
        var wasAccepted = false
        /// Nonce renewals (`stale`, or an accepted nonce gone) since credentials were last accepted.
        var renewalsWithoutSuccess = 0
    }

    private var sessions: [ProtectionSpace: Session] = [:]
    /// Per origin: challenges for another realm than the one answered, since credentials were last accepted.
    private var realmSwitchesWithoutSuccess: [String: Int] = [:]
    /// Which realm serves which paths of an origin; see ``Scope``.
    private var scopes: [Scope] = []
    /// A server that keeps answering with new nonces is not believed forever.
    static let maximumRenewalsWithoutSuccess = 2
    /// The paths remembered, all origins together (oldest forgotten first).
    static let maximumScopes = 64
    /// The user and password.
    let credentials: PasswordCredentials

    /// A machine that has seen no challenge yet.
    /// - Parameter credentials: The user and password to answer with.
    init(credentials: PasswordCredentials) {
        self.credentials = credentials
    }

    /// The nonce in use in a protection space, if any.
    func currentNonce(in space: ProtectionSpace) -> String? {
        sessions[space]?.challenge.nonce
    }

    /// The realm whose credentials a request to `target` carries, if any.
    func realm(for target: Target) -> String? {
        Scope.realm(for: target, in: scopes)
    }

    // MARK: Events

    /// The `Authorization` value for a hop, or `nil` when its origin has sent no challenge yet. Counts
    /// one use of the nonce.
    /// - Parameters:
    ///   - target: Where the hop goes.
    ///   - method: The request method, as sent (`GET`).
    ///   - requestTarget: The request-target, as sent (`/dir/index.html?x=1`).
    ///   - clientNonce: A fresh random cnonce (the caller's; injected for tests).
    /// - Returns: The field value.
    mutating func authorization(for target: Target, method: String, requestTarget: String, clientNonce: String) -> String? {
        guard let realm = realm(for: target) else { return nil }
        let space = ProtectionSpace(origin: target.origin, realm: realm)
        guard var session = sessions[space], session.nonceCount < UInt32.max else { return nil }
        session.nonceCount += 1
        if session.challenge.algorithm.isSession, session.sessionClientNonce == nil {
            session.sessionClientNonce = clientNonce
        }
        sessions[space] = session
        return session.challenge.authorization(
            credentials: credentials, method: method, requestTarget: requestTarget,
            nonceCount: session.nonceCount, clientNonce: session.sessionClientNonce ?? clientNonce)
    }

    /// A 401 answered a hop to `target` (of the engine's origin: the caller never reports another's).
    /// - Parameters:
    ///   - challenges: All the response's challenges, in order (see
    ///     ``AuthenticationChallenge/challenges(in:proxy:)``).
    ///   - target: Where the hop went.
    ///   - sent: What its `Authorization` field answered, `nil` when it carried no Digest answer.
    /// - Returns: Whether to retry.
    mutating func receivedChallenges(_ challenges: [AuthenticationChallenge], for target: Target, sent: Sent?) -> ChallengeAction {
        let offered = challenges.filter { $0.scheme == "digest" }
        guard !offered.isEmpty else { return .ignore }
        guard let challenge = Self.preferred(offered) else { return .fail(.unsupportedChallenge) }
        let space = ProtectionSpace(origin: target.origin, realm: challenge.realm)
        let mapped = realm(for: target)
        remember(challenge, challengedAt: target, domain: offered.first { $0.realm == challenge.realm }?.parameter("domain"))
        if let sent, sent.realm != challenge.realm, mapped == sent.realm {
            // Credentials for another realm went, and nothing had learned the move yet (requests in flight
            // that went before another one learned it are not counted): a move to another realm, answered a
            // bounded number of times in a row (a server bouncing between realms would loop otherwise).
            let switches = realmSwitchesWithoutSuccess[target.origin] ?? 0
            guard switches < Self.maximumRenewalsWithoutSuccess else { return .fail(.credentialsRejected) }
            realmSwitchesWithoutSuccess[target.origin] = switches + 1
        }
        guard let sent, sent.realm == challenge.realm, var session = sessions[space] else {
            // Nothing sent for this protection space: its first challenge (or another realm's credentials
            // went). Answered with this nonce unless the session already has it.
            if sessions[space]?.challenge.nonce != challenge.nonce {
                sessions[space] = Session(challenge: challenge, renewalsWithoutSuccess: sessions[space]?.renewalsWithoutSuccess ?? 0)
            }
            return .retry
        }
        if sent.nonce == challenge.nonce {
            // The answer to this very nonce was refused (with `stale=true` as well: that makes no sense).
            return .fail(.credentialsRejected)
        }
        if session.challenge.nonce != sent.nonce {
            // Another request renewed the nonce since this one was sent: try again with the session's.
            return .retry
        }
        let mayRenew = challenge.isStale || session.wasAccepted
        if mayRenew, session.renewalsWithoutSuccess < Self.maximumRenewalsWithoutSuccess {
            sessions[space] = Session(challenge: challenge, renewalsWithoutSuccess: session.renewalsWithoutSuccess + 1)
            return .retry
        }
        // A new nonce after one the server never accepted: the password is wrong. The next request
        // starts from the newest nonce (it may be right after all: the server may have restarted).
        session = Session(challenge: challenge, renewalsWithoutSuccess: session.renewalsWithoutSuccess)
        sessions[space] = session
        return .fail(.credentialsRejected)
    }

    /// A response other than a 401 answered a hop that carried credentials.
    /// - Parameters:
    ///   - target: Where the hop went.
    ///   - sent: What its `Authorization` field answered.
    ///   - authenticationInfo: The response's `Authentication-Info` value, if any; its `nextnonce`
    ///     (RFC 7616 §3.5) replaces the nonce for later requests, counting from 1 again.
    mutating func receivedSuccess(for target: Target, sent: Sent, authenticationInfo: String? = nil) {
        let space = ProtectionSpace(origin: target.origin, realm: sent.realm)
        realmSwitchesWithoutSuccess[target.origin] = nil
        guard var session = sessions[space] else { return }
        session.renewalsWithoutSuccess = 0
        guard session.challenge.nonce == sent.nonce else {
            // The session moved on to a newer nonce meanwhile; it stays there.
            sessions[space] = session
            return
        }
        session.wasAccepted = true
        if let authenticationInfo,
            let nextNonce = AuthenticationChallenge.parameters(ofInfo: authenticationInfo).first(where: { $0.name == "nextnonce" })?.value,
            !nextNonce.isEmpty, nextNonce != session.challenge.nonce {
            session.challenge.nonce = nextNonce
            session.challenge.isStale = false
            session.nonceCount = 0
            session.sessionClientNonce = nil
        }
        sessions[space] = session
    }

    // MARK: Choosing

    /// The challenge to answer among Digest ones: the first SHA-256 one Courier supports, else the
    /// first supported one.
    static func preferred(_ challenges: [AuthenticationChallenge]) -> DigestChallenge? {
        let supported = challenges.compactMap { try? DigestChallenge($0) }
        return supported.first { $0.algorithm.isSHA256 } ?? supported.first
    }

    /// Records which paths `challenge`'s realm covers: the one challenged, and the `domain` URIs of
    /// the same origin or, without them, the challenged path's directory.
    private mutating func remember(_ challenge: DigestChallenge, challengedAt target: Target, domain: String?) {
        var learned = [Scope(origin: target.origin, path: target.path, isPrefix: false, realm: challenge.realm)]
        let domain = (domain ?? "").split(separator: " ").map(String.init)
        if domain.isEmpty {
            let directory = target.path.lastIndex(of: "/").map { String(target.path[...$0]) } ?? "/"
            learned.append(Scope(origin: target.origin, path: directory, isPrefix: true, realm: challenge.realm))
        }
        for uri in domain {
            if uri.hasPrefix("/") {
                learned.append(Scope(origin: target.origin, path: uri, isPrefix: true, realm: challenge.realm))
            } else if let url = URL(string: uri), url.host != nil, OutboxRecord.origin(of: url) == target.origin {
                learned.append(Scope(origin: target.origin, path: url.path.isEmpty ? "/" : url.path, isPrefix: true, realm: challenge.realm))
            }
        }
        for scope in learned {
            scopes.removeAll { $0.origin == scope.origin && $0.path == scope.path && $0.isPrefix == scope.isPrefix }
            scopes.append(scope)
        }
        if scopes.count > Self.maximumScopes { scopes.removeFirst(scopes.count - Self.maximumScopes) }
        let known = Set(scopes.map { ProtectionSpace(origin: $0.origin, realm: $0.realm) })
        sessions = sessions.filter { known.contains($0.key) || $0.key.origin == target.origin && $0.key.realm == challenge.realm }
        let origins = Set(scopes.map(\.origin))
        realmSwitchesWithoutSuccess = realmSwitchesWithoutSuccess.filter { origins.contains($0.key) }
    }
}

extension DigestAuthenticationStateMachine {
    /// Paths of an origin a realm covers: one path exactly, or every path under a prefix. Newest last.
    struct Scope: Hashable, Sendable {
        var origin: String
        var path: String
        var isPrefix: Bool
        var realm: String

        /// The realm for `target`: an exact path, else the longest prefix, else the newest of its origin.
        static func realm(for target: Target, in scopes: [Scope]) -> String? {
            var best: Scope?
            var newest: Scope?
            for scope in scopes where scope.origin == target.origin {
                newest = scope
                if !scope.isPrefix {
                    if scope.path == target.path { return scope.realm }
                } else if target.path.hasPrefix(scope.path), scope.path.count >= (best?.path.count ?? 0) {
                    best = scope
                }
            }
            return (best ?? newest)?.realm
        }
    }
}
