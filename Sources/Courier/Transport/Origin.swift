package import Foundation

/// A URL's origin (RFC 6454, RFC 9110 §4.3.1): lowercased scheme and host, and the port, made explicit
/// when it is the scheme's default. The one same-origin test of the library: credentials, cookies'
/// `Secure` context, redirects, interceptors, the outbox and cache invalidation all compare these.
package struct Origin: Sendable, Hashable, CustomStringConvertible {
    /// The scheme, lowercased.
    package var scheme: String
    /// The host, lowercased, an IPv6 literal without its brackets.
    package var host: String
    /// The port, the scheme's default when the URL names none (`nil` for a scheme without one).
    package var port: Int?

    /// The origin of `url`, or `nil` without a scheme or host.
    package init?(_ url: URL) {
        // The URL's own parts, without building URLComponents (this runs for every request).
        let absolute = url.baseURL == nil ? url : url.absoluteURL
        guard let scheme = absolute.scheme, !scheme.isEmpty, let host = absolute.host(percentEncoded: true), !host.isEmpty else { return nil }
        self.init(scheme: scheme, host: host, port: absolute.port)
    }

    private init(scheme: String, host: String, port: Int?) {
        self.scheme = CacheHeaderSyntax.asciiLowercased(scheme)
        var lowerHost = CacheHeaderSyntax.asciiLowercased(host)
        if lowerHost.hasPrefix("["), lowerHost.hasSuffix("]") { lowerHost = String(lowerHost.dropFirst().dropLast()) }
        self.host = lowerHost
        self.port = port ?? Self.defaultPort(for: self.scheme)
    }

    /// The origin of `components`, or `nil` without a scheme or host.
    package init?(_ components: URLComponents) {
        guard let scheme = components.scheme, !scheme.isEmpty,
            let host = components.percentEncodedHost, !host.isEmpty
        else { return nil }
        self.init(scheme: scheme, host: host, port: components.port)
    }

    /// Whether `a` and `b` have one origin; a URL without an origin shares it with nothing.
    package static func same(_ a: URL, _ b: URL) -> Bool {
        guard let first = Origin(a) else { return false }
        return first == Origin(b)
    }

    /// `scheme://host:port`, the port always written: how outbox rows name the origin they belong to.
    package var description: String { "\(scheme)://\(host):\(port.map(String.init) ?? "")" }

    /// 80 for http and ws, 443 for https and wss, else `nil`.
    package static func defaultPort(for scheme: String) -> Int? {
        switch scheme {
        case "http", "ws": 80
        case "https", "wss": 443
        default: nil
        }
    }
}
