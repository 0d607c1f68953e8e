/// The decisions of ``BearerTokenAuthenticator``: which token requests carry, and what a 401 leads to.
/// A pure value: time is passed in.
///
/// Rules:
/// - N requests refused at once cause one refresh: the first starts it, the others join it;
/// - a request refused with a token that is no longer the current one is retried at once with the
///   current one (a refresh happened meanwhile);
/// - an operation refreshes at most once: refused again with a token obtained after it began, it fails
///   (the server does not take fresh tokens either: retrying would loop);
/// - a failed refresh fails every request waiting for it with one error, and every request refused
///   with the same token that began before the failure or is refused within ``failureHold`` after it:
///   a burst of requests causes one refresh, failed or not. A later refusal may refresh again (the
///   failure may have been passing); ``setToken(_:)`` clears it;
/// - a 401 to a request that carried a token this authenticator never gave (the app's own
///   `Authorization` for a partner, a header set by hand) is not its business: no refresh, no retry.
struct TokenRefreshStateMachine {
    enum Refused: Equatable {
        /// Send again now, with the current token.
        case retryNow
        /// Start the refresh: this request waits for it, as all others refused meanwhile.
        case startRefresh
        /// A refresh is running: wait for it.
        case join
        /// The request carried a token this authenticator never gave: leave the 401 to others.
        case notOurs
        /// Give up with this error.
        case fail(FailureReason)
    }

    enum FailureReason: Equatable {
        /// The token obtained by a refresh after the operation began was refused too.
        case freshTokenRefused
        /// The refresh of this token already failed, after the operation began.
        case refreshFailed
    }

    private(set) var token: String?
    /// When the current token was obtained by a refresh (`nil`: given by the app).
    private var obtainedAt: ContinuousClock.Instant?
    private(set) var isRefreshing = false
    /// The token whose refresh failed last, and when.
    private var failed: (token: String?, at: ContinuousClock.Instant)?

    /// How long after a failed refresh refusals of the same token fail without another refresh.
    let failureHold: Duration

    init(token: String?, failureHold: Duration = .seconds(10)) {
        self.token = token
        self.failureHold = failureHold
    }

    /// The app set a token itself (after a login): it replaces whatever was there.
    mutating func setToken(_ token: String?) {
        remember(self.token)
        self.token = token
        obtainedAt = nil
        failed = nil
    }

    /// A request sent with `sent` was refused (401) at `now`; its operation's first attempt began at
    /// `startedAt`.
    mutating func refused(sent: String?, startedAt: ContinuousClock.Instant, now: ContinuousClock.Instant) -> Refused {
        if let sent, sent != token, !previous.contains(sent) { return .notOurs }
        if isRefreshing { return .join }
        if sent != token { return .retryNow }
        if let obtainedAt, obtainedAt >= startedAt { return .fail(.freshTokenRefused) }
        if let failed, failed.token == sent, failed.at >= startedAt || now < failed.at + failureHold { return .fail(.refreshFailed) }
        isRefreshing = true
        return .startRefresh
    }

    /// The refresh gave a new token.
    mutating func refreshSucceeded(_ newToken: String, at now: ContinuousClock.Instant) {
        isRefreshing = false
        remember(token)
        token = newToken
        obtainedAt = now
        failed = nil
    }

    /// The refresh failed: the token stays, and is not refreshed again for operations begun before now.
    mutating func refreshFailed(at now: ContinuousClock.Instant) {
        isRefreshing = false
        failed = (token, now)
    }

    /// Tokens this authenticator gave before the current one, newest last: a request refused with one
    /// of them was sent before a refresh and is retried with the current token.
    private(set) var previous: [String] = []

    /// How many earlier tokens are remembered.
    static let rememberedTokens = 8

    private mutating func remember(_ old: String?) {
        guard let old else { return }
        previous.removeAll { $0 == old }
        previous.append(old)
        if previous.count > Self.rememberedTokens { previous.removeFirst() }
    }
}
