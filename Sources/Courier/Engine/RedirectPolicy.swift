/// How an engine follows `3xx` redirects.
///
/// Redirects are followed by Courier itself (never by the transport), so the rules are the same
/// everywhere: at most ``maximumRedirects`` hops; never from https to http unless
/// ``allowsInsecureRedirects``; `Authorization`, `Cookie` and `Proxy-Authorization` are dropped when a hop
/// leaves the original origin; 303 (and 301/302 after a POST) continue as GET without a body, 307
/// and 308 keep the method and body. Every hop is kept in ``NetworkResponse/redirectChain``.
public struct RedirectPolicy: Sendable, Hashable {
    /// The most redirects one operation follows; beyond it the operation fails with
    /// ``NetworkError/Code/tooManyRedirects``. Zero means redirects are returned as responses.
    public var maximumRedirects: Int
    /// Whether a redirect from https to http is followed. When `false` such a hop fails with
    /// ``NetworkError/Code/insecureRedirect``.
    public var allowsInsecureRedirects: Bool

    /// Creates a policy.
    /// - Parameters:
    ///   - maximumRedirects: The most hops to follow.
    ///   - allowsInsecureRedirects: Whether https to http hops are allowed.
    public init(maximumRedirects: Int = 10, allowsInsecureRedirects: Bool = false) {
        self.maximumRedirects = max(0, maximumRedirects)
        self.allowsInsecureRedirects = allowsInsecureRedirects
    }

    /// Follow up to `maximum` redirects (10 by default).
    /// - Parameters:
    ///   - maximum: The most hops to follow.
    ///   - allowsInsecureRedirects: Whether https to http hops are allowed.
    /// - Returns: The policy.
    public static func follow(maximum: Int = 10, allowsInsecureRedirects: Bool = false) -> RedirectPolicy {
        RedirectPolicy(maximumRedirects: maximum, allowsInsecureRedirects: allowsInsecureRedirects)
    }

    /// Never follow: a `3xx` response is the operation's response.
    public static let disabled = RedirectPolicy(maximumRedirects: 0)
}
