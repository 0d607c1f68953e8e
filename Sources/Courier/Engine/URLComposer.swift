import Foundation

/// Why a URL could not be composed. `reason` is a human-readable explanation.
struct URLCompositionError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A human-readable explanation of the failure.
    let reason: String

    /// The reason, for logging.
    var description: String { "URL composition failed: \(reason)" }
}

/// Composes MKNetworkKit-style request URLs from a scheme, host, optional port,
/// optional API path prefix and a per-request path.
///
/// Slashes are normalised so that the parts are joined by exactly one `/`:
/// `URLComposer(scheme: "https", host: "h", port: nil, apiPath: "/v1/").url(path: "/users")`
/// yields `https://h/v1/users`.
struct URLComposer: Sendable, Hashable {
    /// Lowercased scheme as given (validated by ``url(path:)``).
    let scheme: String
    /// Lowercased host; an unbracketed IPv6 literal is stored in brackets.
    let host: String
    /// The port, `nil` when omitted or equal to the scheme's default.
    let port: Int?
    /// The API path prefix without leading/trailing or doubled slashes (e.g. `api/v2`),
    /// percent-encoded like a path (so `?` and `#` become `%3F`/`%23`); `nil` when empty.
    let apiPath: String?

    /// Creates a composer, normalising its parts. Validation happens in ``url(path:)``.
    /// - Parameters:
    ///   - scheme: `http` or `https` (any case).
    ///   - host: A DNS name, IPv4 address or IPv6 literal (bracketed or not).
    ///   - port: An explicit port, or `nil`.
    ///   - apiPath: A path prefix such as `v1`, `/v1/` or `api/v2`, or `nil`.
    init(scheme: String, host: String, port: Int?, apiPath: String?) {
        let scheme = scheme.lowercased()
        var host = host.lowercased()
        if host.contains(":"), !host.hasPrefix("[") {
            host = "[" + host + "]"
        }
        self.scheme = scheme
        self.host = host
        if let port, port == Self.defaultPort(for: scheme) {
            self.port = nil
        } else {
            self.port = port
        }
        let segments = (apiPath ?? "").split(separator: "/", omittingEmptySubsequences: true)
        self.apiPath = segments.isEmpty
            ? nil
            : segments.map { Self.percentEncode($0.utf8, keeping: .path) }.joined(separator: "/")
    }

    /// Parses a base URL such as `https://api.example.com:8443/v1/` (apiPath `v1`).
    ///
    /// Returns `nil` unless the URL is `http`/`https` with a valid host, and has no
    /// user info, query or fragment.
    /// - Parameter baseURL: The base URL string.
    init?(baseURL: String) {
        guard let separator = baseURL.range(of: "://") else { return nil }
        let scheme = baseURL[..<separator.lowerBound].lowercased()
        guard scheme == "http" || scheme == "https" else { return nil }
        let rest = baseURL[separator.upperBound...]
        guard !rest.utf8.contains(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) else { return nil }
        let authority = rest.prefix { $0 != "/" }
        let path = rest[authority.endIndex...]
        guard !authority.utf8.contains(UInt8(ascii: "@")) else { return nil }

        let hostPart: Substring
        let portPart: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            hostPart = authority[...close]
            let after = authority[authority.index(after: close)...]
            if after.isEmpty {
                portPart = nil
            } else if after.hasPrefix(":") {
                portPart = after.dropFirst()
            } else {
                return nil
            }
        } else {
            let pieces = authority.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            switch pieces.count {
            case 1: hostPart = pieces[0]; portPart = nil
            case 2: hostPart = pieces[0]; portPart = pieces[1]
            default: return nil
            }
        }

        var port: Int?
        if let portPart {
            guard !portPart.isEmpty, portPart.count <= 5, portPart.allSatisfy(Self.isASCIIDigit),
                  let value = Int(portPart) else { return nil }
            port = value
        }
        self.init(scheme: scheme, host: String(hostPart), port: port, apiPath: String(path))
        guard case .success = url(path: "") else { return nil }
    }

    /// `scheme://host[:port][/apiPath]`, without a trailing slash.
    var baseURLString: String {
        var result = scheme + "://" + host
        if let port { result += ":" + String(port) }
        if let apiPath { result += "/" + apiPath }
        return result
    }

    /// Builds the full URL for a request path.
    ///
    /// The path is joined to the API path with exactly one slash; `""` and `"/"`
    /// address the API root (`https://h/v1/`). A query (`?q=1`) and fragment in
    /// `path` are kept. Characters not allowed in a URL are percent-encoded as UTF-8,
    /// valid `%XX` escapes are preserved and a stray `%` becomes `%25`.
    /// - Parameter path: The request path, relative to the API path.
    /// - Returns: The URL string, or an error when a part is invalid or `path` is an absolute URL.
    func url(path: String) -> Result<String, URLCompositionError> {
        guard scheme == "http" || scheme == "https" else {
            return .failure(URLCompositionError(reason: "unsupported scheme '\(scheme)'; expected http or https"))
        }
        if let problem = Self.hostProblem(host) {
            return .failure(URLCompositionError(reason: problem))
        }
        if let port, !(1...65535).contains(port) {
            return .failure(URLCompositionError(reason: "port \(port) is outside 1...65535"))
        }
        if Self.isAbsoluteURL(path) {
            return .failure(URLCompositionError(reason: "path '\(path)' is an absolute URL; use the absolute-URL API instead"))
        }

        // Split on bytes, not Characters: `?` or `#` followed by a combining mark is
        // one Character but still a delimiter.
        var remainder = ArraySlice(path.utf8)
        var fragment: ArraySlice<UInt8>?
        if let hash = remainder.firstIndex(of: UInt8(ascii: "#")) {
            fragment = remainder[(hash + 1)...]
            remainder = remainder[..<hash]
        }
        var query: ArraySlice<UInt8>?
        if let mark = remainder.firstIndex(of: UInt8(ascii: "?")) {
            query = remainder[(mark + 1)...]
            remainder = remainder[..<mark]
        }
        let pathPart = remainder.drop { $0 == UInt8(ascii: "/") }

        var result = baseURLString + "/" + Self.percentEncode(pathPart, keeping: .path)
        if let query { result += "?" + Self.percentEncode(query, keeping: .queryOrFragment) }
        if let fragment { result += "#" + Self.percentEncode(fragment, keeping: .queryOrFragment) }

        guard URL(string: result) != nil else {
            return .failure(URLCompositionError(reason: "'\(result)' is not a valid URL"))
        }
        return .success(result)
    }

    // MARK: - Helpers

    /// The default port of `scheme`, if it is http or https.
    private static func defaultPort(for scheme: String) -> Int? {
        switch scheme {
        case "http": 80
        case "https": 443
        default: nil
        }
    }

    /// Whether `path` looks like an absolute URL (`scheme://…`, or an `http:`/`https:` prefix).
    private static func isAbsoluteURL(_ path: String) -> Bool {
        let bytes = Array(path.utf8)
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon > 0 else { return false }
        let candidate = bytes[..<colon]
        func isLetter(_ byte: UInt8) -> Bool { (65...90).contains(byte) || (97...122).contains(byte) }
        func isSchemeByte(_ byte: UInt8) -> Bool {
            isLetter(byte) || (48...57).contains(byte) || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-")
                || byte == UInt8(ascii: ".")
        }
        guard isLetter(bytes[0]), candidate.allSatisfy(isSchemeByte) else { return false }
        let lowered = String(decoding: candidate, as: UTF8.self).lowercased()
        return lowered == "http" || lowered == "https" || bytes[colon...].starts(with: "://".utf8)
    }

    /// A description of what is wrong with `host`, or `nil` when it is valid.
    static func hostProblem(_ host: String) -> String? {
        if host.isEmpty { return "host is empty" }
        if host.hasPrefix("[") {
            guard host.hasSuffix("]"), host.count >= 3 else {
                return "host '\(host)' is not a valid bracketed IPv6 literal"
            }
            let inner = host.dropFirst().dropLast()
            return IPv6Literal.isValid(inner) ? nil : "host '\(host)' is not a valid IPv6 address"
        }
        guard host.allSatisfy({ isASCIILetter($0) || isASCIIDigit($0) || $0 == "-" || $0 == "." || $0 == "_" }) else {
            return "host '\(host)' contains characters not allowed in a host name"
        }
        var labels = host.split(separator: ".", omittingEmptySubsequences: false)
        if labels.count > 1, labels.last?.isEmpty == true { labels.removeLast() }  // trailing root dot
        guard host.count <= 254, labels.allSatisfy({ !$0.isEmpty && $0.count <= 63 }) else {
            return "host '\(host)' has an empty or over-long label"
        }
        return nil
    }

    /// Which characters (besides unreserved and sub-delimiters) survive unescaped.
    private enum Component {
        /// `:`, `@` and `/`.
        case path
        /// `:`, `@`, `/` and `?`.
        case queryOrFragment
    }

    /// Uppercase hexadecimal digits as ASCII bytes.
    private static let hexDigits: [UInt8] = Array("0123456789ABCDEF".utf8)

    /// Percent-encodes bytes that are not allowed in `component`, keeping valid `%XX` escapes.
    private static func percentEncode(_ text: some Collection<UInt8>, keeping component: Component) -> String {
        let bytes = Array(text)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%"), index + 2 < bytes.count, isHex(bytes[index + 1]), isHex(bytes[index + 2]) {
                output.append(contentsOf: bytes[index...(index + 2)])
                index += 3
                continue
            }
            if isAllowed(byte, in: component) {
                output.append(byte)
            } else {
                output.append(UInt8(ascii: "%"))
                output.append(hexDigits[Int(byte >> 4)])
                output.append(hexDigits[Int(byte & 0x0F)])
            }
            index += 1
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Whether `character` is an ASCII letter `A-Z` or `a-z`.
    fileprivate static func isASCIILetter(_ character: Character) -> Bool {
        guard let ascii = character.asciiValue else { return false }
        return (65...90).contains(ascii) || (97...122).contains(ascii)
    }

    /// Whether `character` is an ASCII digit `0-9`.
    fileprivate static func isASCIIDigit(_ character: Character) -> Bool {
        guard let ascii = character.asciiValue else { return false }
        return (48...57).contains(ascii)
    }

    /// Whether `character` is an ASCII hexadecimal digit `0-9`, `a-f` or `A-F`.
    fileprivate static func isASCIIHexDigit(_ character: Character) -> Bool {
        guard let ascii = character.asciiValue else { return false }
        return (48...57).contains(ascii) || (65...70).contains(ascii) || (97...102).contains(ascii)
    }

    /// Whether `byte` is an ASCII hexadecimal digit.
    private static func isHex(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"), UInt8(ascii: "A")...UInt8(ascii: "F"):
            true
        default:
            false
        }
    }

    /// Whether `byte` may appear literally in `component` (RFC 3986 `pchar`, plus `/` and, for query/fragment, `?`).
    private static func isAllowed(_ byte: UInt8, in component: Component) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"),  // unreserved
             UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("),
             UInt8(ascii: ")"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"),
             UInt8(ascii: "="),  // sub-delims
             UInt8(ascii: ":"), UInt8(ascii: "@"), UInt8(ascii: "/"):
            return true
        case UInt8(ascii: "?"):
            return component == .queryOrFragment
        default:
            return false
        }
    }
}

extension URLComposer {
    /// Validation of IPv6 address text (RFC 4291 section 2.2), without zone identifiers.
    enum IPv6Literal {
        /// Whether `text` is a syntactically valid IPv6 address, e.g. `::1`,
        /// `2001:db8::8a2e:370:7334` or `::ffff:192.0.2.1`.
        /// - Parameter text: The address without brackets.
        /// - Returns: `true` when valid.
        static func isValid(_ text: Substring) -> Bool {
            guard !text.isEmpty, text.count <= 45 else { return false }
            let halves = text.components(separatedBy: "::")
            guard halves.count <= 2 else { return false }
            let compressed = halves.count == 2

            var groupCount = 0
            for (halfIndex, half) in halves.enumerated() {
                if half.isEmpty { continue }
                let groups = half.split(separator: ":", omittingEmptySubsequences: false)
                for (groupIndex, group) in groups.enumerated() {
                    let isLastGroup = halfIndex == halves.count - 1 && groupIndex == groups.count - 1
                    if isLastGroup, group.contains(".") {
                        guard isIPv4(group) else { return false }
                        groupCount += 2
                    } else {
                        guard (1...4).contains(group.count), group.allSatisfy(URLComposer.isASCIIHexDigit) else { return false }
                        groupCount += 1
                    }
                }
            }
            return compressed ? groupCount <= 7 : groupCount == 8
        }

        /// Whether `text` is a dotted-quad IPv4 address without leading zeros.
        private static func isIPv4(_ text: Substring) -> Bool {
            let octets = text.split(separator: ".", omittingEmptySubsequences: false)
            guard octets.count == 4 else { return false }
            return octets.allSatisfy { octet in
                guard (1...3).contains(octet.count), octet.allSatisfy(URLComposer.isASCIIDigit),
                      !(octet.count > 1 && octet.hasPrefix("0")),
                      let value = Int(octet) else { return false }
                return value <= 255
            }
        }
    }
}
