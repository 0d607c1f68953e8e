public import Foundation

/// A proxy server: HTTP (a `CONNECT` tunnel for every request, http and https alike, with optional
/// Basic credentials) or SOCKS5 (without authentication).
///
/// The credentials go to the proxy only, in the `CONNECT` request's `Proxy-Authorization`: never to
/// the origin, the cache, the outbox or a log (``description`` masks the password).
public struct Proxy: Sendable, Hashable, CustomStringConvertible {
    enum Kind: Sendable, Hashable {
        case http(PasswordCredentials?)
        case socks5
    }

    /// The proxy's host.
    public let host: String
    /// The proxy's port.
    public let port: Int
    let kind: Kind

    private init(host: String, port: Int, kind: Kind) {
        self.host = host
        self.port = port
        self.kind = kind
    }

    /// An HTTP proxy, reached with `CONNECT`.
    /// - Parameters:
    ///   - host: The proxy's host.
    ///   - port: Its port; 8080 by default.
    ///   - credentials: Basic credentials for the proxy, if it asks for them.
    public static func http(host: String, port: Int = 8080, credentials: PasswordCredentials? = nil) -> Proxy {
        Proxy(host: host, port: port, kind: .http(credentials))
    }

    /// A SOCKS5 proxy (no authentication).
    /// - Parameters:
    ///   - host: The proxy's host.
    ///   - port: Its port; 1080 by default.
    public static func socks5(host: String, port: Int = 1080) -> Proxy {
        Proxy(host: host, port: port, kind: .socks5)
    }

    /// A proxy from a URL as curl and the `*_proxy` variables write them: `http://user:password@host:port`,
    /// `socks5://host:port`, or a bare `host:port` (HTTP); without a port, 1080 (curl's default). `nil` for
    /// anything else (an https proxy, a SOCKS4 one, a missing host, a port out of range).
    public init?(url: String) {
        let text = url.contains("://") ? url : "http://" + url
        guard let components = URLComponents(string: text), let host = components.host, !host.isEmpty,
            let scheme = components.scheme?.lowercased()
        else { return nil }
        let port = components.port
        guard port.map({ (1...65_535).contains($0) }) ?? true else { return nil }
        switch scheme {
        case "http":
            let credentials = components.percentEncodedUser.flatMap { user in
                PasswordCredentials(
                    user: user.removingPercentEncoding ?? user,
                    password: components.percentEncodedPassword.map { $0.removingPercentEncoding ?? $0 } ?? "")
            }
            self = .http(host: host, port: port ?? 1080, credentials: credentials)
        case "socks5", "socks5h":
            self = .socks5(host: host, port: port ?? 1080)
        default:
            return nil
        }
    }

    /// `http://host:port` or `socks5://host:port`, a user name shown, a password never.
    public var description: String {
        switch kind {
        case .http(let credentials?): "http://\(credentials.user):***@\(host):\(port)"
        case .http(nil): "http://\(host):\(port)"
        case .socks5: "socks5://\(host):\(port)"
        }
    }
}

/// Which requests go through which proxy: one for http URLs, one for https URLs, and the hosts that
/// are always reached directly. ``none`` by default; ``fromEnvironment(_:)`` reads the variables curl
/// reads.
public struct ProxySettings: Sendable, Hashable {
    /// The proxy for `http://` URLs.
    public var http: Proxy?
    /// The proxy for `https://` URLs.
    public var https: Proxy?
    /// Hosts reached directly, as `NO_PROXY` lists them: a name matches itself and every name under it
    /// (`example.com` and `.example.com` both match `api.example.com`); `*` matches every host.
    public var noProxy: [String]

    /// Creates settings.
    /// - Parameters:
    ///   - http: The proxy for http URLs.
    ///   - https: The proxy for https URLs.
    ///   - noProxy: Hosts reached directly.
    public init(http: Proxy? = nil, https: Proxy? = nil, noProxy: [String] = []) {
        self.http = http
        self.https = https
        self.noProxy = noProxy
    }

    /// No proxy: every request goes directly to its host.
    public static let none = ProxySettings()

    /// One proxy for every request, except to the listed hosts.
    /// - Parameters:
    ///   - proxy: The proxy.
    ///   - noProxy: Hosts reached directly.
    public static func all(_ proxy: Proxy, except noProxy: [String] = []) -> ProxySettings {
        ProxySettings(http: proxy, https: proxy, noProxy: noProxy)
    }

    /// The settings curl takes from the environment: `http_proxy` (lowercase only, as curl: a CGI
    /// program gets a request's `Proxy:` header as `HTTP_PROXY`), `HTTPS_PROXY` or `https_proxy`,
    /// `ALL_PROXY` or `all_proxy` for a scheme without its own, and `NO_PROXY` or `no_proxy`. A value
    /// that is not a proxy URL is ignored.
    /// - Parameter environment: The variables; the process's by default.
    /// - Returns: The settings.
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> ProxySettings {
        func value(_ names: String...) -> String? {
            names.lazy.compactMap { environment[$0] }.first { !$0.isEmpty }
        }
        let all = value("ALL_PROXY", "all_proxy").flatMap(Proxy.init(url:))
        let noProxy = (value("NO_PROXY", "no_proxy") ?? "").split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        return ProxySettings(
            http: value("http_proxy").flatMap(Proxy.init(url:)) ?? all,
            https: value("HTTPS_PROXY", "https_proxy").flatMap(Proxy.init(url:)) ?? all,
            noProxy: noProxy)
    }

    /// The proxy a request to `url` goes through, or `nil` to go directly.
    func proxy(for url: URL) -> Proxy? {
        guard http != nil || https != nil, let host = url.host else { return nil }
        let proxy = url.scheme?.lowercased() == "https" ? https : http
        guard let proxy, !bypasses(host) else { return nil }
        return proxy
    }

    /// Whether `host` is in ``noProxy``.
    func bypasses(_ host: String) -> Bool {
        let host = TrustPolicy.canonicalHost(host)
        return noProxy.contains { entry in
            var name = Substring(CacheHeaderSyntax.asciiLowercased(entry))
            if name == "*" { return true }
            while name.hasPrefix(".") { name = name.dropFirst() }
            name = Substring(TrustPolicy.canonicalHost(String(name)))
            return !name.isEmpty && (host == name || host.hasSuffix("." + name))
        }
    }
}
