import Foundation

/// Interpretation of `Content-Type` header values: media type and text encoding.
enum CharsetDetection {
    /// The text encoding named by the `charset` parameter of a `Content-Type` value.
    ///
    /// The parameter name is case-insensitive, the value may be quoted, and
    /// whitespace around `;` and `=` is ignored: `text/html ; Charset = "ISO-8859-1"`
    /// gives `.isoLatin1`. Unknown or missing charsets give `.utf8`.
    /// - Parameter contentType: A `Content-Type` header value, or `nil`.
    /// - Returns: The matching `String.Encoding`, `.utf8` by default.
    static func encoding(forContentType contentType: String?) -> String.Encoding {
        guard let contentType, let charset = parameter(named: "charset", in: contentType) else { return .utf8 }
        return encoding(forCharset: charset) ?? .utf8
    }

    /// The encoding for an IANA charset name or common alias, or `nil` when unknown.
    /// - Parameter charset: A charset name such as `UTF-8` or `windows-1252` (any case).
    /// - Returns: The matching encoding, if known.
    static func encoding(forCharset charset: String) -> String.Encoding? {
        switch charset.lowercased() {
        case "utf-8", "utf8", "unicode-1-1-utf-8": .utf8
        case "us-ascii", "ascii", "ansi_x3.4-1968", "iso646-us", "us", "cp367", "ibm367", "csascii": .ascii
        case "iso-8859-1", "iso8859-1", "iso_8859-1", "iso_8859-1:1987", "latin1", "l1", "cp819", "ibm819", "csisolatin1":
            .isoLatin1
        case "iso-8859-2", "iso8859-2", "iso_8859-2", "iso_8859-2:1987", "latin2", "l2", "csisolatin2": .isoLatin2
        case "windows-1250", "cp1250", "x-cp1250": .windowsCP1250
        case "windows-1251", "cp1251", "x-cp1251": .windowsCP1251
        case "windows-1252", "cp1252", "x-cp1252": .windowsCP1252
        case "windows-1253", "cp1253", "x-cp1253": .windowsCP1253
        case "windows-1254", "cp1254", "x-cp1254": .windowsCP1254
        case "utf-16", "utf16": .utf16
        case "utf-16le", "utf16le": .utf16LittleEndian
        case "utf-16be", "utf16be": .utf16BigEndian
        case "utf-32", "utf32": .utf32
        case "utf-32le", "utf32le": .utf32LittleEndian
        case "utf-32be", "utf32be": .utf32BigEndian
        case "shift_jis", "shift-jis", "sjis", "x-sjis", "ms_kanji", "csshiftjis": .shiftJIS
        case "euc-jp", "eucjp", "x-euc-jp", "cseucpkdfmtjapanese": .japaneseEUC
        case "iso-2022-jp", "csiso2022jp": .iso2022JP
        case "macintosh", "mac", "macroman", "x-mac-roman", "csmacintosh": .macOSRoman
        default: nil
        }
    }

    /// The media type of a `Content-Type` value, lowercased and without parameters.
    ///
    /// `Text/HTML; charset=utf-8` gives `text/html`. Returns `nil` for `nil`, empty
    /// or malformed values (type and subtype must both be RFC 9110 tokens).
    /// - Parameter contentType: A `Content-Type` header value, or `nil`.
    /// - Returns: `type/subtype`, or `nil`.
    static func mediaType(of contentType: String?) -> String? {
        guard let contentType else { return nil }
        let essence = contentType.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let trimmed = trimWhitespace(essence).lowercased()
        let parts = trimmed.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2,
              HeaderValidation.validateName(String(parts[0])),
              HeaderValidation.validateName(String(parts[1])) else { return nil }
        return trimmed
    }

    /// Whether a media type is JSON: `application/json` or any type with a `+json`
    /// structured-syntax suffix (e.g. `application/problem+json`).
    ///
    /// A full `Content-Type` value (with parameters, any case) is accepted too.
    /// - Parameter mediaType: A media type such as the output of ``mediaType(of:)``, or `nil`.
    /// - Returns: `true` for JSON media types.
    static func isJSON(mediaType: String?) -> Bool {
        guard let type = self.mediaType(of: mediaType) else { return false }
        return type == "application/json" || type.hasSuffix("+json")
    }

    // MARK: - Parameter parsing

    /// The value of the parameter `name` (case-insensitive) in a header value of the
    /// form `essence; a=b; c="d"`, with quotes removed and `\`-escapes resolved.
    /// - Parameters:
    ///   - name: The lowercase parameter name.
    ///   - headerValue: The complete header value.
    /// - Returns: The parameter's value, or `nil` when absent.
    static func parameter(named name: String, in headerValue: String) -> String? {
        for segment in splitParameters(headerValue).dropFirst() {
            guard let equals = segment.unicodeScalars.firstIndex(of: "=") else { continue }
            let key = trimWhitespace(segment[..<equals]).lowercased()
            guard key == name else { continue }
            return unquote(trimWhitespace(segment[segment.index(after: equals)...]))
        }
        return nil
    }

    /// Splits on `;` outside double-quoted strings (scalar by scalar, as ``unquote(_:)`` reads).
    private static func splitParameters(_ value: String) -> [Substring] {
        var segments: [Substring] = []
        let scalars = value.unicodeScalars
        var start = scalars.startIndex
        var index = scalars.startIndex
        var inQuotes = false
        var escaped = false
        while index < scalars.endIndex {
            let character = scalars[index]
            if escaped {
                escaped = false
            } else if inQuotes, character == "\\" {
                escaped = true
            } else if character == "\"" {
                inQuotes.toggle()
            } else if character == ";", !inQuotes {
                segments.append(value[start..<index])
                start = scalars.index(after: index)
            }
            index = scalars.index(after: index)
        }
        segments.append(value[start...])
        return segments
    }

    /// Removes surrounding double quotes and resolves `\` escapes inside them.
    /// Scalar by scalar: a quote followed by a combining mark is one `Character` that is not `"`.
    private static func unquote(_ value: String) -> String {
        let scalars = value.unicodeScalars
        guard scalars.count >= 2, scalars.first == "\"", scalars.last == "\"" else { return value }
        var result = String.UnicodeScalarView()
        var escaped = false
        for scalar in scalars.dropFirst().dropLast() {
            if escaped {
                result.append(scalar)
                escaped = false
            } else if scalar == "\\" {
                escaped = true
            } else {
                result.append(scalar)
            }
        }
        return String(result)
    }

    /// Removes leading and trailing spaces and tabs.
    private static func trimWhitespace(_ text: some StringProtocol) -> String {
        let isWhitespace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = text.firstIndex(where: { !isWhitespace($0) }),
              let last = text.lastIndex(where: { !isWhitespace($0) }) else { return "" }
        return String(text[first...last])
    }
}
