/// Quoting of arguments for POSIX `sh` (used, for example, to render requests as `curl` commands).
enum ShellQuoting {
    /// Quotes `s` so that a POSIX shell reads it back as exactly one word with the same text.
    ///
    /// Non-empty strings made only of `A-Z a-z 0-9 _ . / : = @ % + -` are returned
    /// bare; everything else is wrapped in single quotes with each `'` written as `'\''`.
    /// The empty string becomes `''`.
    /// - Parameter s: The argument to quote.
    /// - Returns: The shell-safe word.
    static func quote(_ s: String) -> String {
        if !s.utf8.isEmpty, s.utf8.allSatisfy(isSafe) {
            return s
        }
        // Work on UTF-8 bytes: a `'` followed by a combining mark is a single
        // `Character` but must still be escaped.
        var bytes: [UInt8] = [UInt8(ascii: "'")]
        bytes.reserveCapacity(s.utf8.count + 2)
        for byte in s.utf8 {
            if byte == UInt8(ascii: "'") {
                bytes.append(contentsOf: "'\\''".utf8)
            } else {
                bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "'"))
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Whether `byte` never needs quoting.
    private static func isSafe(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "/"), UInt8(ascii: ":"), UInt8(ascii: "="),
             UInt8(ascii: "@"), UInt8(ascii: "%"), UInt8(ascii: "+"), UInt8(ascii: "-"):
            return true
        default:
            return false
        }
    }
}
