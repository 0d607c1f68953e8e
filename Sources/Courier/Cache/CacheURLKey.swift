import Foundation

/// Normalised URLs: the cache key of a stored response and the strings invalidation reports
/// (RFC 9111 §2 keys on the target URI; RFC 9110 §4.2.3 gives the normalisations used here).
enum CacheURLKey {
    /// The URL as a cache key: scheme and host lowercased, the default port dropped, an empty path
    /// written "/", user info and fragment dropped, path and query kept as sent (percent-encoded).
    /// `nil` without a scheme or host.
    static func key(for url: URL) -> String? {
        if url.baseURL == nil, let key = normalKey(url.absoluteString) { return key }
        return parsedKey(for: url)
    }

    /// ``key(for:)`` the long way, through `URLComponents`.
    static func parsedKey(for url: URL) -> String? {
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

    /// The key of an http(s) URL already written the way ``key(for:)`` writes keys (lowercase ASCII
    /// scheme and a host name or IPv4 address, no userinfo, no default or empty port, no leading zero
    /// in the port, a path, no fragment): the string itself, found without parsing. `nil` when the URL needs the long way.
    static func normalKey(_ string: String) -> String? {
        guard string.hasPrefix("http://") || string.hasPrefix("https://"), NetworkOperation.isNormalized(string) else { return nil }
        var copy = string
        let isNormal = copy.withUTF8 { bytes -> Bool in
            // Plain integer indices over the bytes: no generic slices on this path (they cost runtime
            // metadata lookups on every call).
            var index = 0
            while index < bytes.count, bytes[index] != UInt8(ascii: "/") { index += 1 }
            let start = index + 2
            var end = start
            while end < bytes.count, bytes[end] != UInt8(ascii: "/") { end += 1 }
            guard end < bytes.count, end > start else { return false }
            // The host: a name or an IPv4 address (lowercase letters, digits, '-', '.'; an IPv6 literal, a
            // percent-encoded or punycode name, or userinfo go the long way: a punycode label may be a
            // Unicode host that `URL` converted while `URLComponents` percent-encodes it).
            var hostEnd = start
            while hostEnd < end, bytes[hostEnd] != UInt8(ascii: ":") {
                let byte = bytes[hostEnd]
                let allowed = (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
                guard allowed else { return false }
                if byte == UInt8(ascii: "-"), hostEnd >= start + 3, bytes[hostEnd - 1] == UInt8(ascii: "-"),
                    bytes[hostEnd - 2] == UInt8(ascii: "n"), bytes[hostEnd - 3] == UInt8(ascii: "x")
                {
                    return false
                }
                hostEnd += 1
            }
            guard hostEnd > start else { return false }
            // The port: 1 to 5 digits, no leading zero, at most 65535 (isNormalized refused default ports).
            if hostEnd < end {
                let digits = end - hostEnd - 1
                guard digits >= 1, digits <= 5, bytes[hostEnd + 1] != UInt8(ascii: "0") else { return false }
                var value = 0
                for position in (hostEnd + 1)..<end {
                    let digit = bytes[position]
                    guard digit >= UInt8(ascii: "0") && digit <= UInt8(ascii: "9") else { return false }
                    value = value * 10 + Int(digit - UInt8(ascii: "0"))
                }
                guard value <= 65535 else { return false }
            }
            // The path and query as written, unless they hold characters URLComponents would percent-encode.
            for position in end..<bytes.count {
                switch bytes[position] {
                case 0...0x20, 0x7F...0xFF, UInt8(ascii: "\""), UInt8(ascii: "<"), UInt8(ascii: ">"), UInt8(ascii: "\\"),
                    UInt8(ascii: "^"), UInt8(ascii: "`"), UInt8(ascii: "{"), UInt8(ascii: "|"), UInt8(ascii: "}"):
                    return false
                default:
                    continue
                }
            }
            return true
        }
        return isNormal ? string : nil
    }
}
