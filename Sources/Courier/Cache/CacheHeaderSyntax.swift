import HTTPTypes

/// Field-value syntax shared by the cache core: lists, tokens, quoted strings and delta-seconds
/// (RFC 9110 §5.6, RFC 9111 §1.2.2), plus the few field names HTTPTypes does not predefine.
///
/// Everything here is tolerant: malformed input yields `nil` or is skipped, never a crash.
enum CacheHeaderSyntax {
    /// The value RFC 9111 §1.2.2 substitutes for any delta-seconds too large to represent:
    /// 2^31, "infinity (over 68 years)".
    static let deltaSecondsCap = 2_147_483_648

    // The force unwraps below apply to string literals that are valid tokens, never to input.
    /// `Pragma` (RFC 9111 §5.4).
    static let pragma = HTTPField.Name("Pragma")!
    /// `Keep-Alive`, a hop-by-hop field (RFC 9110 §7.6.1).
    static let keepAlive = HTTPField.Name("Keep-Alive")!
    /// `Proxy-Connection`, a hop-by-hop field (RFC 9110 §7.6.1).
    static let proxyConnection = HTTPField.Name("Proxy-Connection")!

    /// The elements of a comma-separated list (RFC 9110 §5.6.1) spread over any number of field
    /// lines: split at commas outside quoted strings, OWS trimmed, empty elements dropped. Read scalar
    /// by scalar, as a byte-wise parser would: `,` or `"` followed by a combining mark is one
    /// `Character` that is neither.
    static func listElements(_ lines: [String]) -> [Substring] {
        var elements: [Substring] = []
        for line in lines {
            let scalars = line.unicodeScalars
            var start = scalars.startIndex
            var inQuotes = false
            var escaped = false
            var index = scalars.startIndex
            while index < scalars.endIndex {
                let character = scalars[index]
                if escaped {
                    escaped = false
                } else if inQuotes {
                    if character == "\\" { escaped = true } else if character == "\"" { inQuotes = false }
                } else if character == "\"" {
                    inQuotes = true
                } else if character == "," {
                    appendTrimmed(line[start..<index], to: &elements)
                    start = scalars.index(after: index)
                }
                index = scalars.index(after: index)
            }
            appendTrimmed(line[start..<line.endIndex], to: &elements)
        }
        return elements
    }

    private static func appendTrimmed(_ element: Substring, to elements: inout [Substring]) {
        let trimmed = trimmingOWS(element)
        if !trimmed.isEmpty { elements.append(trimmed) }
    }

    /// `s` without leading and trailing optional whitespace (SP / HTAB, RFC 9110 §5.6.3).
    static func trimmingOWS(_ s: Substring) -> Substring {
        var scalars = s.unicodeScalars
        while let first = scalars.first, first == " " || first == "\t" { scalars.removeFirst() }
        while let last = scalars.last, last == " " || last == "\t" { scalars.removeLast() }
        return Substring(scalars)
    }

    /// Whether `s` is a non-empty `token` (RFC 9110 §5.6.2).
    static func isToken(_ s: Substring) -> Bool {
        guard !s.isEmpty else { return false }
        return s.utf8.allSatisfy(isTokenByte)
    }

    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "A")...UInt8(ascii: "Z"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    /// The content of a `quoted-string` (RFC 9110 §5.6.4) with quoted-pairs unescaped. Anything
    /// after the closing quote is ignored; an unterminated string runs to the end. A value that does
    /// not start with a quote is returned unchanged.
    /// Scalar by scalar: a quote followed by a combining mark is one `Character` that is not `"`.
    static func unquoted(_ s: Substring) -> String {
        guard s.unicodeScalars.first == "\"" else { return String(s) }
        var result = String.UnicodeScalarView()
        var escaped = false
        for scalar in s.unicodeScalars.dropFirst() {
            if escaped {
                result.append(scalar)
                escaped = false
            } else if scalar == "\\" {
                escaped = true
            } else if scalar == "\"" {
                break
            } else {
                result.append(scalar)
            }
        }
        return String(result)
    }

    /// A `delta-seconds` value (RFC 9111 §1.2.2: `1*DIGIT`), or `nil` when `s` is empty or holds
    /// anything but ASCII digits (a sign, a fraction, spaces). Values above 2^31 become 2^31.
    static func deltaSeconds(_ s: some StringProtocol) -> Int? {
        guard !s.isEmpty else { return nil }
        var value = 0
        for byte in s.utf8 {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            if value < deltaSecondsCap {
                value = min(value * 10 + Int(byte - UInt8(ascii: "0")), deltaSecondsCap)
            }
        }
        return value
    }

    /// `s` with ASCII letters lowercased (header names and directive names are case-insensitive;
    /// non-ASCII is left alone so nothing locale-dependent happens).
    /// Text with no capital letter, the common case (a host, a scheme, a directive), is returned as it is,
    /// without building an array and a string.
    static func asciiLowercased(_ s: some StringProtocol) -> String {
        guard s.utf8.contains(where: { $0 >= 0x41 && $0 <= 0x5A }) else { return String(s) }
        return String(decoding: s.utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 + 0x20 : $0 }, as: UTF8.self)
    }

    /// A field value normalised as RFC 9111 §4.1 allows for Vary matching: each line trimmed, runs
    /// of SP / HTAB collapsed to a single SP, and the lines joined with `separator`.
    static func normalizedValue(_ lines: [String], separator: String = ", ") -> String {
        lines.map { line in
            var result = ""
            var pendingSpace = false
            for character in trimmingOWS(Substring(line)) {
                if character == " " || character == "\t" {
                    pendingSpace = true
                } else {
                    if pendingSpace { result.append(" ") }
                    pendingSpace = false
                    result.append(character)
                }
            }
            return result
        }.joined(separator: separator)
    }

    /// The field name for `name`, or `nil` when `name` is not a valid field name (such a field
    /// cannot occur in any message).
    static func fieldName(_ name: some StringProtocol) -> HTTPField.Name? {
        HTTPField.Name(String(name))
    }
}
