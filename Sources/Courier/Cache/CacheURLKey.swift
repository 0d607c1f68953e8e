import Foundation

/// Normalised URLs: the cache key of a stored response and the strings invalidation reports
/// (RFC 9111 §2 keys on the target URI; RFC 9110 §4.2.3 gives the normalisations used here).
enum CacheURLKey {
    /// The URL as a cache key: scheme and host lowercased, the default port dropped, an empty path
    /// written "/", user info and fragment dropped, path and query kept as sent (percent-encoded).
    /// `nil` without a scheme or host.
    static func key(for url: URL) -> String? {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: true),
            let origin = Origin(components)
        else { return nil }
        var key = origin.scheme + "://" + bracketed(origin.host)
        if let port = origin.port, port != defaultPort(for: origin.scheme) { key += ":\(port)" }
        let path = components.percentEncodedPath
        key += path.isEmpty ? "/" : path
        if let query = components.percentEncodedQuery { key += "?" + query }
        return key
    }

    /// 80 for http and ws, 443 for https and wss, else `nil`.
    static func defaultPort(for scheme: String) -> Int? { Origin.defaultPort(for: scheme) }

    /// An IPv6 literal in brackets, as URIs write it.
    private static func bracketed(_ host: String) -> String {
        host.contains(":") ? "[" + host + "]" : host
    }
}
