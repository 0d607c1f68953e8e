public import Foundation

/// One HTTP cookie, as a ``CookieJar`` keeps it (RFC 6265 §5.3's storage model).
///
/// A cookie is identified by its ``name``, ``domain`` and ``path``: storing another one with the same
/// three replaces it (keeping the first one's ``creationDate``).
///
/// The ``value`` is a secret (it often carries a session): ``description`` never shows it, and Courier
/// never logs it.
///
/// ```swift
/// for cookie in await jar.cookies(for: URL(string: "https://example.com/")!) {
///     print(cookie.name, cookie.isSession ? "(session)" : "until \(cookie.expires!)")
/// }
/// ```
public struct Cookie: Hashable, Sendable, CustomStringConvertible {
    /// The `SameSite` attribute (RFC 6265bis §5.6.7). Stored and reported only: Courier is not a
    /// browser and has no notion of a "site for cookies", so it never withholds a cookie because of it.
    public struct SameSite: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }

        /// `SameSite=Strict`.
        public static let strict = SameSite("strict")
        /// `SameSite=Lax`.
        public static let lax = SameSite("lax")
        /// `SameSite=None`.
        public static let none = SameSite("none")
        /// No `SameSite` attribute, or one whose value is not recognised.
        public static let unspecified = SameSite("unspecified")

        /// The lowercase name: `strict`, `lax`, `none` or `unspecified`.
        public var description: String { name }

        /// The value of a `SameSite` attribute (case-insensitive); ``unspecified`` for anything else.
        /// - Parameter attributeValue: The attribute's value, e.g. `Lax`.
        public init(attributeValue: some StringProtocol) {
            switch attributeValue.lowercased() {
            case "strict": self = .strict
            case "lax": self = .lax
            case "none": self = .none
            default: self = .unspecified
            }
        }
    }

    /// The cookie's name (never empty).
    public var name: String
    /// The cookie's value, exactly as the server sent it (quotes included). A secret.
    public var value: String
    /// The lowercase host (for a host-only cookie) or domain (without a leading dot) it belongs to.
    public var domain: String
    /// Whether the cookie goes only to exactly ``domain``: true when the server gave no `Domain`
    /// attribute (and always for IP addresses). Otherwise it also goes to every subdomain of ``domain``.
    public var isHostOnly: Bool
    /// The path the cookie applies to: request paths equal to it or below it (`/docs` matches `/docs`
    /// and `/docs/web`, never `/docsets`).
    public var path: String
    /// When the cookie expires; `nil` for a session cookie, which lives as long as its jar (and is not
    /// persisted unless the jar was asked to: see ``CookieJar/init(persistingIn:keepsSessionCookies:logger:)``).
    public var expires: Date?
    /// Whether the cookie is sent only over https (the `Secure` attribute).
    public var isSecure: Bool
    /// The `HttpOnly` attribute. Courier only speaks HTTP, so it changes nothing here; it is kept for callers.
    public var isHTTPOnly: Bool
    /// The `SameSite` attribute (stored only).
    public var sameSite: SameSite
    /// When the first cookie with this name, domain and path was stored (kept when it is replaced).
    public var creationDate: Date
    /// When the cookie was last sent (or stored).
    public var lastAccessDate: Date

    /// Whether this is a session cookie (no `Expires` nor `Max-Age`).
    public var isSession: Bool { expires == nil }

    /// Makes a cookie. Jars make their own from `Set-Cookie` fields; this is for tests and callers that
    /// inspect or compare cookies.
    /// - Parameters:
    ///   - name: The name.
    ///   - value: The value.
    ///   - domain: The host or domain, lowercase, without a leading dot.
    ///   - isHostOnly: Whether it goes only to exactly `domain`.
    ///   - path: The path, starting with `/`.
    ///   - expires: The expiry; `nil` for a session cookie.
    ///   - isSecure: The `Secure` attribute.
    ///   - isHTTPOnly: The `HttpOnly` attribute.
    ///   - sameSite: The `SameSite` attribute.
    ///   - creationDate: When it was first stored.
    ///   - lastAccessDate: When it was last used; `creationDate` when `nil`.
    public init(
        name: String, value: String, domain: String, isHostOnly: Bool = true, path: String = "/", expires: Date? = nil,
        isSecure: Bool = false, isHTTPOnly: Bool = false, sameSite: SameSite = .unspecified,
        creationDate: Date, lastAccessDate: Date? = nil
    ) {
        self.name = name
        self.value = value
        self.domain = domain
        self.isHostOnly = isHostOnly
        self.path = path
        self.expires = expires
        self.isSecure = isSecure
        self.isHTTPOnly = isHTTPOnly
        self.sameSite = sameSite
        self.creationDate = creationDate
        self.lastAccessDate = lastAccessDate ?? creationDate
    }

    /// The cookie without its value: `name=<n bytes>; Domain=…; Path=…` and its flags.
    public var description: String {
        var text = "\(name)=<\(value.utf8.count) bytes>; \(isHostOnly ? "Host" : "Domain")=\(domain); Path=\(path)"
        if let expires { text += "; Expires=\(HTTPDate.format(expires))" }
        if isSecure { text += "; Secure" }
        if isHTTPOnly { text += "; HttpOnly" }
        if sameSite != .unspecified { text += "; SameSite=\(sameSite)" }
        return text
    }

    /// The identity of a cookie in a jar: name, domain and path (RFC 6265 §5.3 step 11).
    var key: CookieKey { CookieKey(name: name, domain: domain, path: path) }
}

/// A cookie's identity in a jar: two cookies with the same key cannot both be stored.
struct CookieKey: Hashable, Sendable {
    var name: String
    var domain: String
    var path: String
}
