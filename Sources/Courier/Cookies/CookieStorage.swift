import Foundation

/// The cookies of a jar, as a pure value: RFC 6265 §5.3's storage model and §5.4's `Cookie` header,
/// with RFC 6265bis's stricter rules where they make a client safer. No I/O, no clock, no lock:
/// ``CookieJar`` owns one behind a lock, passes the time in, and persists the ``Change``s it returns.
///
/// Rules, in the order they apply to one `Set-Cookie` field from a request URL:
/// - the field must parse (see ``SetCookie``); a URL without a host stores nothing;
/// - `Max-Age` wins over `Expires`; `Max-Age` ≤ 0 means "expired now"; an expiry more than 400 days
///   away is brought back to 400 days (RFC 6265bis §5.5);
/// - `Domain` must domain-match the request host, else the cookie is ignored; without it, or for an
///   IP address host, the cookie is host-only. A `Domain` that is a public suffix (the Public Suffix
///   List, see ``PublicSuffixList``: `co.uk`, `github.io`, and any single label such as `com` or
///   `localhost`) is accepted only when it is the request host itself, and the cookie is then
///   host-only; otherwise the cookie is ignored (RFC 6265bis §5.7 step 9);
/// - a host with a trailing dot (`a.com.`) is another host than `a.com`, as in Chromium: its cookies
///   (host-only, or `Domain=a.com.`) go only to names ending in `a.com.`, `Domain=com.` is a public
///   suffix, and `1.2.3.4.` is an IP address;
/// - `Path` must start with `/`, else the default path (§5.1.4) applies;
/// - a `Secure` cookie is refused from a non-https URL (http to localhost included), and a non-https
///   URL cannot overwrite or shadow a `Secure` cookie of the same name (RFC 6265bis §5.7 step 16,
///   "leave secure cookies alone"); `__Secure-` names need `Secure`, `__Host-` names need `Secure`,
///   no `Domain` and an explicit `Path=/` attribute (a default path of `/` is not enough);
/// - a cookie with the same name, domain and path is replaced, keeping its creation date; an expired
///   one deletes it instead;
/// - expired cookies go first; then, beyond ``Limits/perSite`` cookies for one site (registrable
///   domain, eTLD+1: `a.example.com` and `b.example.com` count together) the site's own least recently
///   used, and beyond ``Limits/total`` in all the least recently used of any site (RFC 6265 §5.3 step
///   12; Chromium counts per registrable domain too). Cookies restored from disk whose domain is a
///   public suffix (stored before the list was used) are dropped.
struct CookieStorage: Sendable {
    /// Something the storage changed that a persistent jar must write.
    enum Change: Hashable, Sendable {
        /// The cookie was stored, replaced, or used (its last-access date moved).
        case stored(Cookie)
        /// The cookie with this key is gone (expired, deleted by its server, evicted or removed).
        case removed(CookieKey)
        /// Every cookie is gone.
        case removedAll
    }

    /// How many cookies are kept.
    struct Limits: Sendable {
        /// Cookies of one site, its registrable domain (RFC 6265 §6.1 asks for at least 50 per domain;
        /// Chromium keeps 180 per registrable domain).
        var perSite = 180
        /// Cookies in all (RFC 6265 §6.1 asks for at least 3000).
        var total = 3000
    }

    /// The longest expiry from now (RFC 6265bis §5.5: 400 days).
    static let maximumLifetime: TimeInterval = 400 * 86_400

    private struct Entry {
        var cookie: Cookie
        /// The site it counts against (``CookieMatching/site(of:)`` of its domain).
        var site: String
        /// Order of first storage, to break ties between equal creation dates.
        var sequence: UInt64
    }

    let limits: Limits
    private var entries: [CookieKey: Entry] = [:]
    private var nextSequence: UInt64 = 0

    /// An empty storage.
    /// - Parameter limits: The count limits.
    init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// Every cookie, ordered by domain, then path, then creation.
    var allCookies: [Cookie] {
        entries.values.sorted { lhs, rhs in
            if lhs.cookie.domain != rhs.cookie.domain { return lhs.cookie.domain < rhs.cookie.domain }
            if lhs.cookie.path != rhs.cookie.path { return lhs.cookie.path < rhs.cookie.path }
            return lhs.sequence < rhs.sequence
        }.map(\.cookie)
    }

    /// How many cookies there are.
    var count: Int { entries.count }

    // MARK: Events

    /// Puts back cookies read from disk (oldest first), then drops the expired ones and applies the limits.
    /// - Returns: What the disk must forget (expired or evicted cookies).
    mutating func restore(_ cookies: [Cookie], now: Date) -> [Change] {
        var changes: [Change] = []
        for cookie in cookies.sorted(by: { $0.creationDate < $1.creationDate }) {
            guard cookie.isHostOnly || !CookieMatching.isPublicSuffix(cookie.domain) else {
                changes.append(.removed(cookie.key))
                continue
            }
            entries[cookie.key] = Entry(cookie: cookie, site: CookieMatching.site(of: cookie.domain), sequence: nextSequence)
            nextSequence += 1
        }
        changes += removeExpired(now: now)
        changes += evict(site: nil)
        return changes
    }

    /// Stores the cookies of a response's `Set-Cookie` fields.
    /// - Parameters:
    ///   - values: The field values, one cookie each (never split on commas).
    ///   - url: The URL the response came from (for a redirect, the URL that answered with it).
    ///   - now: The time the response was received.
    /// - Returns: What changed.
    mutating func store(_ values: some Sequence<String>, from url: URL, now: Date) -> [Change] {
        var changes = removeExpired(now: now)
        for value in values {
            guard let parsed = SetCookie(value) else { continue }
            changes += store(parsed, from: url, now: now)
        }
        return changes
    }

    /// Stores one parsed cookie (RFC 6265 §5.3, RFC 6265bis §5.7).
    mutating func store(_ parsed: SetCookie, from url: URL, now: Date) -> [Change] {
        guard let host = CookieMatching.canonicalHost(of: url) else { return [] }
        let isSecureOrigin = CookieMatching.isSecure(url)
        var expires: Date?
        if let maxAge = parsed.maxAge {
            expires = maxAge <= 0 ? Date.distantPast : now.addingTimeInterval(min(TimeInterval(maxAge), Self.maximumLifetime))
        } else if let date = parsed.expires {
            expires = min(date, now.addingTimeInterval(Self.maximumLifetime))
        }
        var domain = host
        var isHostOnly = true
        if let attribute = parsed.domain {
            guard CookieMatching.domainMatches(host, attribute) else { return [] }
            if CookieMatching.isPublicSuffix(attribute) {
                guard attribute == host else { return [] }
            } else if !CookieMatching.isIPAddress(host) {
                domain = attribute
                isHostOnly = false
            }
        }
        let path = parsed.path ?? CookieMatching.defaultPath(of: url)
        if parsed.isSecure && !isSecureOrigin { return [] }
        let lowercasedName = parsed.name.lowercased()
        if lowercasedName.hasPrefix("__secure-") && !parsed.isSecure { return [] }
        if lowercasedName.hasPrefix("__host-") && !(parsed.isSecure && parsed.domain == nil && parsed.path == "/") { return [] }
        if !parsed.isSecure && !isSecureOrigin && shadowsSecureCookie(name: parsed.name, domain: domain, path: path) {
            return []
        }
        var cookie = Cookie(
            name: parsed.name, value: parsed.value, domain: domain, isHostOnly: isHostOnly, path: path, expires: expires,
            isSecure: parsed.isSecure, isHTTPOnly: parsed.isHTTPOnly, sameSite: parsed.sameSite,
            creationDate: now, lastAccessDate: now)
        let key = cookie.key
        let old = entries[key]
        if let expires, expires <= now {
            guard old != nil else { return [] }
            entries[key] = nil
            return [.removed(key)]
        }
        if let old { cookie.creationDate = old.cookie.creationDate }
        let site = old?.site ?? CookieMatching.site(of: domain)
        entries[key] = Entry(cookie: cookie, site: site, sequence: old?.sequence ?? nextSequence)
        if old == nil { nextSequence += 1 }
        return [.stored(cookie)] + evict(site: site)
    }

    /// The cookies to send to a URL, in `Cookie` header order (longer paths first, then earlier
    /// creation); their last-access dates move to `now`.
    /// - Returns: The cookies and what changed (expired cookies dropped, last-access dates).
    mutating func cookies(for url: URL, now: Date) -> (cookies: [Cookie], changes: [Change]) {
        var changes = removeExpired(now: now)
        let matching = matchingEntries(for: url, now: now)
        var cookies: [Cookie] = []
        for entry in matching {
            var cookie = entry.cookie
            cookie.lastAccessDate = now
            entries[cookie.key]?.cookie = cookie
            cookies.append(cookie)
            changes.append(.stored(cookie))
        }
        return (cookies, changes)
    }

    /// The `Cookie` header field value for a request to a URL (`a=1; b=2`), or `nil` when no cookie
    /// applies; the cookies sent count as used.
    mutating func cookieHeader(for url: URL, now: Date) -> (value: String?, changes: [Change]) {
        let (cookies, changes) = cookies(for: url, now: now)
        guard !cookies.isEmpty else { return (nil, changes) }
        return (cookies.map { "\($0.name)=\($0.value)" }.joined(separator: "; "), changes)
    }

    /// The cookies that would be sent to a URL, in header order, without marking them used.
    func peekCookies(for url: URL, now: Date) -> [Cookie] {
        matchingEntries(for: url, now: now).map(\.cookie)
    }

    /// Removes the cookies with a name in a domain (any path, host-only or not).
    /// - Parameters:
    ///   - name: The cookie's name.
    ///   - domain: The domain or host (case-insensitive; a leading dot is ignored).
    mutating func remove(name: String, domain: String) -> [Change] {
        var domain = domain.lowercased()
        if domain.hasPrefix(".") { domain.removeFirst() }
        let keys = entries.keys.filter { $0.name == name && $0.domain == domain }
        for key in keys { entries[key] = nil }
        return keys.map(Change.removed)
    }

    /// Removes every cookie.
    mutating func removeAll() -> [Change] {
        entries.removeAll()
        return [.removedAll]
    }

    /// Drops the cookies expired at `now`.
    mutating func removeExpired(now: Date) -> [Change] {
        let expired = entries.filter { $0.value.cookie.expires.map { $0 <= now } ?? false }.keys
        for key in expired { entries[key] = nil }
        return expired.map(Change.removed)
    }

    // MARK: Pieces

    private func matchingEntries(for url: URL, now: Date) -> [Entry] {
        guard let host = CookieMatching.canonicalHost(of: url) else { return [] }
        let path = CookieMatching.requestPath(of: url)
        let isSecure = CookieMatching.isSecure(url)
        return entries.values.filter { entry in
            let cookie = entry.cookie
            let domainMatches = cookie.isHostOnly ? host == cookie.domain : CookieMatching.domainMatches(host, cookie.domain)
            return domainMatches && CookieMatching.pathMatches(path, cookie.path) && (isSecure || !cookie.isSecure)
                && (cookie.expires.map { $0 > now } ?? true)
        }.sorted { lhs, rhs in
            let (left, right) = (lhs.cookie.path.utf8.count, rhs.cookie.path.utf8.count)
            if left != right { return left > right }
            if lhs.cookie.creationDate != rhs.cookie.creationDate { return lhs.cookie.creationDate < rhs.cookie.creationDate }
            return lhs.sequence < rhs.sequence
        }
    }

    /// RFC 6265bis §5.7 step 16: a Secure cookie of that name whose domain matches either way and whose
    /// path the new one's path is within.
    private func shadowsSecureCookie(name: String, domain: String, path: String) -> Bool {
        entries.values.contains { entry in
            let cookie = entry.cookie
            return cookie.name == name && cookie.isSecure
                && (CookieMatching.domainMatches(cookie.domain, domain) || CookieMatching.domainMatches(domain, cookie.domain))
                && CookieMatching.pathMatches(path, cookie.path)
        }
    }

    /// Removes the least recently used cookies beyond the limits: of `site` (every site when `nil`),
    /// then in all. (Expired cookies are gone before: every event removes them first.)
    private mutating func evict(site: String?) -> [Change] {
        var changes: [Change] = []
        let sites = site.map { [$0] } ?? Array(Set(entries.values.map(\.site)))
        for site in sites {
            let ofSite = entries.values.filter { $0.site == site }
            if ofSite.count > limits.perSite {
                changes += evict(leastRecentlyUsedFirst(ofSite).prefix(ofSite.count - limits.perSite))
            }
        }
        if entries.count > limits.total {
            changes += evict(leastRecentlyUsedFirst(Array(entries.values)).prefix(entries.count - limits.total))
        }
        return changes
    }

    private mutating func evict(_ victims: ArraySlice<Entry>) -> [Change] {
        victims.map { victim in
            entries[victim.cookie.key] = nil
            return .removed(victim.cookie.key)
        }
    }

    private func leastRecentlyUsedFirst(_ candidates: [Entry]) -> [Entry] {
        candidates.sorted { lhs, rhs in
            if lhs.cookie.lastAccessDate != rhs.cookie.lastAccessDate { return lhs.cookie.lastAccessDate < rhs.cookie.lastAccessDate }
            return lhs.sequence < rhs.sequence
        }
    }
}
