/// `application/x-www-form-urlencoded` / query-string encoding in the style of
/// AFNetworking and Alamofire.
///
/// Nested dictionaries become bracketed key paths (`a[b][c]=v`), arrays use empty
/// brackets (`a[]=1&a[]=2`), Booleans become `1`/`0`, and keys are sorted at every
/// nesting level so output is deterministic.
enum FormEncoder {
    /// Encodes parameters as `key=value` pairs joined by `&`.
    ///
    /// - `.null` produces `key=` (empty value).
    /// - Empty arrays and empty dictionaries produce nothing.
    /// - Key paths and values are escaped with ``escape(_:)``.
    /// - Parameter params: The parameters to encode.
    /// - Returns: The encoded string, or `""` when nothing is emitted.
    static func encode(_ params: [String: ParameterValue]) -> String {
        var pairs: [String] = []
        for key in params.keys.sorted() {
            guard let value = params[key] else { continue }
            appendPairs(for: value, keyPath: key, into: &pairs)
        }
        return pairs.joined(separator: "&")
    }

    /// Appends the escaped `key=value` components for `value` at `keyPath`.
    private static func appendPairs(for value: ParameterValue, keyPath: String, into pairs: inout [String]) {
        switch value {
        case .dictionary(let dictionary):
            for key in dictionary.keys.sorted() {
                guard let nested = dictionary[key] else { continue }
                appendPairs(for: nested, keyPath: keyPath + "[" + key + "]", into: &pairs)
            }
        case .array(let array):
            for element in array {
                appendPairs(for: element, keyPath: keyPath + "[]", into: &pairs)
            }
        case .string(let string):
            pairs.append(escape(keyPath) + "=" + escape(string))
        case .int(let int):
            pairs.append(escape(keyPath) + "=" + String(int))
        case .double(let double):
            pairs.append(escape(keyPath) + "=" + escape(format(double)))
        case .bool(let bool):
            pairs.append(escape(keyPath) + "=" + (bool ? "1" : "0"))
        case .null:
            pairs.append(escape(keyPath) + "=")
        }
    }

    /// Formats a double: integral values with magnitude below 10^15 print without a
    /// fractional part (`2`), everything else uses Swift's shortest round-tripping
    /// description (`1.5`, `1000000000000000.0`, `1e+16`, `nan`, `inf`).
    /// - Parameter value: The number to format.
    /// - Returns: The textual representation.
    static func format(_ value: Double) -> String {
        if value.isFinite, value == value.rounded(.towardZero), abs(value) < 1e15 {
            return String(Int64(value))
        }
        return value.description
    }

    /// Percent-encodes a string per RFC 3986 for use as a query key or value.
    ///
    /// Unreserved characters (`A-Z a-z 0-9 - . _ ~`) plus `?` and `/` are kept;
    /// every other UTF-8 byte is written as `%XX` with uppercase hex. Spaces
    /// become `%20`, never `+`.
    /// - Parameter s: The string to escape.
    /// - Returns: The escaped string.
    static func escape(_ s: String) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(s.utf8.count)
        for byte in s.utf8 {
            if isAllowed(byte) {
                bytes.append(byte)
            } else {
                bytes.append(UInt8(ascii: "%"))
                bytes.append(hexDigits[Int(byte >> 4)])
                bytes.append(hexDigits[Int(byte & 0x0F)])
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Uppercase hexadecimal digits as ASCII bytes.
    private static let hexDigits: [UInt8] = Array("0123456789ABCDEF".utf8)

    /// Whether `byte` may appear unescaped in an encoded key or value.
    private static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"),
             UInt8(ascii: "?"), UInt8(ascii: "/"):
            return true
        default:
            return false
        }
    }

    /// Appends an already-encoded query string to a URL string.
    ///
    /// Uses `?` when the URL has no query yet and `&` otherwise (no separator is
    /// added when the URL's query already ends in `?` or `&`). A `#fragment` stays at the end.
    /// - Parameters:
    ///   - query: The encoded query, e.g. the output of ``encode(_:)``.
    ///   - url: The URL string to extend.
    /// - Returns: The combined URL string; `url` unchanged when `query` is empty.
    static func appendQuery(_ query: String, to url: String) -> String {
        guard !query.isEmpty else { return url }
        // Work on bytes: `#` or `?` followed by a combining mark is one Character.
        let bytes = Array(url.utf8)
        let hash = bytes.firstIndex(of: UInt8(ascii: "#")) ?? bytes.endIndex
        let base = bytes[..<hash]
        let separator: String
        if !base.contains(UInt8(ascii: "?")) {
            separator = "?"
        } else if base.last == UInt8(ascii: "?") || base.last == UInt8(ascii: "&") {
            separator = ""
        } else {
            separator = "&"
        }
        return String(decoding: base, as: UTF8.self) + separator + query
            + String(decoding: bytes[hash...], as: UTF8.self)
    }
}
