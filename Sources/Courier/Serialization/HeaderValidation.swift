/// Validation of HTTP header field names and values (RFC 9110 section 5).
enum HeaderValidation {
    /// Whether `name` is a valid field name: a non-empty RFC 9110 `token`, i.e. only
    /// ASCII letters, digits and ``!#$%&'*+-.^_`|~``.
    /// - Parameter name: The header name to check.
    /// - Returns: `true` when the name may be sent.
    static func validateName(_ name: String) -> Bool {
        !name.utf8.isEmpty && name.utf8.allSatisfy(isTokenByte)
    }

    /// Whether `value` may be sent as a field value.
    ///
    /// CR, LF and NUL are rejected (they would allow header injection), as are all
    /// other control characters (C0, DEL and C1) except horizontal tab. Leading and
    /// trailing whitespace is allowed because callers trim it. Other non-ASCII text
    /// is allowed and sent as UTF-8 (`obs-text`).
    /// - Parameter value: The header value to check.
    /// - Returns: `true` when the value may be sent.
    static func validateValue(_ value: String) -> Bool {
        value.unicodeScalars.allSatisfy { scalar in
            switch scalar.value {
            case 0x09: true
            case 0x00...0x1F, 0x7F...0x9F: false
            default: true
            }
        }
    }

    /// Whether `byte` is an RFC 9110 `tchar`.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
             UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
             UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }
}
