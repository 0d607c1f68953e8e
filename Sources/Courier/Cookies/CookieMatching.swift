import Foundation

/// RFC 6265 §5.1's matching rules: canonical hosts, domain matching, public suffixes and sites, paths and
/// default paths.
enum CookieMatching {
    /// The URL's host, lowercase, without IPv6 brackets; `nil` when it has none.
    static func canonicalHost(of url: URL) -> String? {
        guard var host = url.host, !host.isEmpty else { return nil }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return host.lowercased()
    }

    /// Whether a host is an IP address (IPv6, or IPv4 in any dotted form whose last label is numeric,
    /// one trailing dot allowed as URL parsers allow it: `1.2.3.4.`): such hosts only ever get host-only
    /// cookies.
    static func isIPAddress(_ host: String) -> Bool {
        if host.contains(":") { return true }
        let name = host.hasSuffix(".") ? host.dropLast() : host[...]
        guard let last = name.split(separator: ".", omittingEmptySubsequences: false).last, !last.isEmpty else { return false }
        return last.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
            || (last.lowercased().hasPrefix("0x") && last.count > 2 && last.dropFirst(2).allSatisfy(\.isHexDigit))
    }

    /// Whether a `Domain` attribute names a public suffix (`co.uk`, `github.io`, a single label such as
    /// `com` or `localhost` by the list's default rule, `com.` with a trailing dot), for which no
    /// cookie may be scoped to every host below it (RFC 6265bis §5.7 step 9). Lowercase.
    static func isPublicSuffix(_ domain: String) -> Bool {
        PublicSuffixList.shared.isPublicSuffix(domain)
    }

    /// The site a cookie's domain counts against for the per-site limit: its registrable domain
    /// (eTLD+1: `example.co.uk` for `www.example.co.uk`), or the domain itself for an IP address or a
    /// public suffix (a host-only cookie of `localhost`). Lowercase.
    static func site(of domain: String) -> String {
        if isIPAddress(domain) { return domain }
        return PublicSuffixList.shared.registrableDomain(of: domain) ?? domain
    }

    /// RFC 6265 §5.1.3: `host` equals `domain`, or ends with `.domain` and is not an IP address.
    /// Both lowercase.
    static func domainMatches(_ host: String, _ domain: String) -> Bool {
        if host == domain { return true }
        guard host.utf8.count > domain.utf8.count, host.hasSuffix(domain), !isIPAddress(host) else { return false }
        return host.utf8.dropLast(domain.utf8.count).last == UInt8(ascii: ".")
    }

    /// RFC 6265 §5.1.4: the cookie path equals the request path, or is a prefix of it that ends with
    /// `/` or is followed by `/` in it (`/docs` matches `/docs/web` but not `/docsets`).
    static func pathMatches(_ requestPath: String, _ cookiePath: String) -> Bool {
        if requestPath == cookiePath { return true }
        guard requestPath.hasPrefix(cookiePath) else { return false }
        if cookiePath.hasSuffix("/") { return true }
        return requestPath.utf8.dropFirst(cookiePath.utf8.count).first == UInt8(ascii: "/")
    }

    /// The URL's path as sent (percent-encoded), `/` when empty.
    static func requestPath(of url: URL) -> String {
        let path = URLComponents(url: url, resolvingAgainstBaseURL: true)?.percentEncodedPath ?? url.path
        return path.isEmpty ? "/" : path
    }

    /// RFC 6265 §5.1.4's default path: the request path up to (not including) its last `/`, or `/`.
    static func defaultPath(of url: URL) -> String {
        let path = requestPath(of: url)
        guard path.hasPrefix("/"), let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return "/" }
        return String(path[..<slash])
    }

    /// Whether cookies marked `Secure` may be stored from and sent to this URL: https (and wss) only.
    /// Plain http to `localhost` or `127.0.0.1` counts as insecure too.
    static func isSecure(_ url: URL) -> Bool {
        let scheme = url.scheme?.lowercased()
        return scheme == "https" || scheme == "wss"
    }
}
