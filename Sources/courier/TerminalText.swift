/// Text from the network made safe to show on a terminal: control characters a server sent (an escape
/// sequence that moves the cursor, retitles the window, rewrites what was printed, or a carriage return
/// that overwrites a line) are shown in caret notation (`^[`, `^M`, `^?`) or as `<U+0085>` instead of
/// being obeyed. Tabs and line feeds stay as they are. Used only when standard output is a terminal:
/// a pipe or a file gets the bytes as received.
enum TerminalText {
    /// `text` with its control characters made visible.
    /// - Parameter text: Text from the network.
    /// - Returns: The text to write to a terminal.
    static func sanitized(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var result = ""
        result.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x09, 0x0A: result.unicodeScalars.append(scalar)
            case 0x00...0x1F: result += "^" + String(UnicodeScalar(UInt8(scalar.value + 0x40)))
            case 0x7F: result += "^?"
            case 0x80...0x9F: result += "<U+00" + String(scalar.value, radix: 16, uppercase: true) + ">"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x09, 0x0A: false
        case 0x00...0x1F, 0x7F...0x9F: true
        default: false
        }
    }
}
