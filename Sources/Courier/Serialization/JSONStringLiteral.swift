/// JSON string literals (RFC 8259 §7), the one implementation: quotes, backslashes and control
/// characters escaped, everything else as it is (UTF-8).
enum JSONStringLiteral {
    /// Appends `string` as a JSON string literal, quotes included.
    static func append(_ string: String, to text: inout String) {
        text += "\""
        // Most values need no escape at all: appended whole.
        if !string.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            text += string
            text += "\""
            return
        }
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: text.unicodeScalars.append(scalar)
            }
        }
        text += "\""
    }

    /// `string` as a JSON string literal, quotes included.
    static func quoted(_ string: String) -> String {
        var text = ""
        append(string, to: &text)
        return text
    }
}
