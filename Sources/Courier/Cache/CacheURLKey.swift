import Foundation

/// Normalised URLs: the cache key of a stored response and the strings invalidation reports
/// (RFC 9111 §2 keys on the target URI; RFC 9110 §4.2.3 gives the normalisations used here).
enum CacheURLKey {
    /// A URL's origin (RFC 9110 §4.3.1): lowercased scheme and host, and the port, made explicit
    /// when it is the scheme's default.
    struct Origin: Sendable, Hashable {
        var scheme: String
        var host: String
        var port: Int?
    }

    /// The URL as a cache key: scheme and host lowercased, the default port dropped, an empty path
    /// written "/", user info and fragment dropped, path and query kept as sent (percent-encoded).
    /// `nil` without a scheme or host.
    static func key(for url: URL) -> String? {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: true),
            let origin = origin(of: components)
        else { return nil }
        var key = origin.scheme + "://" + bracketed(origin.host)
        if let port = origin.port, port != defaultPort(for: origin.scheme) { key += ":\(port)" }
        let path = components.percentEncodedPath
        key += path.isEmpty ? "/" : path
        if let query = components.percentEncodedQuery { key += "?" + query }
        return key
    }

    /// The origin of `url`, or `nil` without a scheme or host.
    static func origin(of url: URL) -> Origin? {
        URLComponents(url: url, resolvingAgainstBaseURL: true).flatMap(origin(of:))
    }

    private static func origin(of components: URLComponents) -> Origin? {
        guard let scheme = components.scheme, !scheme.isEmpty,
            let host = components.percentEncodedHost, !host.isEmpty
        else { return nil }
        let lowerScheme = CacheHeaderSyntax.asciiLowercased(scheme)
        var lowerHost = CacheHeaderSyntax.asciiLowercased(host)
        if lowerHost.hasPrefix("["), lowerHost.hasSuffix("]") { lowerHost = String(lowerHost.dropFirst().dropLast()) }
        return Origin(scheme: lowerScheme, host: lowerHost, port: components.port ?? defaultPort(for: lowerScheme))
    }

    /// 80 for http and ws, 443 for https and wss, else `nil`.
    static func defaultPort(for scheme: String) -> Int? {
        switch scheme {
        case "http", "ws": 80
        case "https", "wss": 443
        default: nil
        }
    }

    /// An IPv6 literal in brackets, as URIs write it.
    private static func bracketed(_ host: String) -> String {
        host.contains(":") ? "[" + host + "]" : host
    }
}
