import Foundation

/// One `Set-Cookie` field value, parsed (RFC 6265 §5.2, with RFC 6265bis §5.6 where it is stricter).
///
/// Parsing only reads the field: whether the cookie is stored, and with which domain and path, is
/// decided by ``CookieStorage`` against the request's URL. Any byte sequence is accepted as input;
/// the work is linear in its length and the result is either a cookie or `nil`, never a crash.
struct SetCookie: Equatable, Sendable {
    /// Longest name plus value (RFC 6265bis §5.6 step 6: 4096 bytes).
    static let maximumNameAndValueSize = 4096
    /// Longest attribute value; a longer one is ignored (RFC 6265bis §5.6.1 step 5).
    static let maximumAttributeValueSize = 1024
    /// Longest field value looked at; longer ones are ignored as a whole (cheap bound on the work,
    /// well above a cookie at its limits with its attributes).
    static let maximumFieldSize = 16_384

    var name: String
    var value: String
    /// The `Expires` attribute, when it held a date RFC 6265 §5.1.1 reads.
    var expires: Date?
    /// The `Max-Age` attribute in seconds (negative and zero mean "already expired"), clamped to ±2^40.
    var maxAge: Int64?
    /// The `Domain` attribute, lowercase, leading dot removed; `nil` when absent or empty.
    var domain: String?
    /// The `Path` attribute when it starts with `/`; `nil` otherwise (the default path applies).
    var path: String?
    var isSecure = false
    var isHTTPOnly = false
    var sameSite = Cookie.SameSite.unspecified

    /// Parses a `Set-Cookie` field value.
    /// - Parameter text: The field value (one header line's value; never split on commas).
    /// - Returns: The cookie, or `nil` when it must be ignored: a control character anywhere (other than
    ///   a tab), no `=` in the name-value pair, an empty name, name and value over 4096 bytes together,
    ///   or a field over 16 KiB.
    init?(_ text: some StringProtocol) {
        let bytes = Array(text.utf8)
        guard bytes.count <= Self.maximumFieldSize,
            !bytes.contains(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F })
        else { return nil }
        let semicolon = bytes.firstIndex(of: UInt8(ascii: ";")) ?? bytes.endIndex
        let pair = bytes[..<semicolon]
        guard let equals = pair.firstIndex(of: UInt8(ascii: "=")) else { return nil }
        let name = Self.trimmed(pair[..<equals])
        let value = Self.trimmed(pair[(equals + 1)...])
        guard !name.isEmpty, name.count + value.count <= Self.maximumNameAndValueSize else { return nil }
        self.name = String(decoding: name, as: UTF8.self)
        self.value = String(decoding: value, as: UTF8.self)
        guard semicolon < bytes.endIndex else { return }
        for attribute in bytes[(semicolon + 1)...].split(separator: UInt8(ascii: ";"), omittingEmptySubsequences: true) {
            apply(attribute)
        }
    }

    /// Reads one `name[=value]` attribute; the last of each name wins, unknown ones are ignored.
    private mutating func apply(_ attribute: ArraySlice<UInt8>) {
        let equals = attribute.firstIndex(of: UInt8(ascii: "="))
        let name = Self.trimmed(attribute[..<(equals ?? attribute.endIndex)])
        let value = equals.map { Self.trimmed(attribute[($0 + 1)...]) } ?? []
        guard name.count <= 8, value.count <= Self.maximumAttributeValueSize else { return }
        switch String(decoding: name, as: UTF8.self).lowercased() {
        case "expires":
            if let date = CookieDate.parse(String(decoding: value, as: UTF8.self)) { expires = date }
        case "max-age":
            if let seconds = Self.maxAge(value) { maxAge = seconds }
        case "domain":
            var domain = value[...]
            if domain.first == UInt8(ascii: ".") { domain = domain.dropFirst() }
            // An empty Domain is ignored (RFC 6265bis §5.6.3); so is one that is not plain ASCII.
            guard !domain.isEmpty, domain.allSatisfy({ $0 < 0x80 }) else { return }
            self.domain = String(decoding: domain, as: UTF8.self).lowercased()
        case "path":
            if value.first == UInt8(ascii: "/") { path = String(decoding: value, as: UTF8.self) } else { path = nil }
        case "secure":
            isSecure = true
        case "httponly":
            isHTTPOnly = true
        case "samesite":
            sameSite = Cookie.SameSite(attributeValue: String(decoding: value, as: UTF8.self))
        default:
            break
        }
    }

    /// `Max-Age`: an optional `-` then digits only (RFC 6265 §5.2.2), else ignored. Huge values clamp.
    private static func maxAge(_ value: [UInt8]) -> Int64? {
        var digits = value[...]
        let isNegative = digits.first == UInt8(ascii: "-")
        if isNegative { digits = digits.dropFirst() }
        guard !digits.isEmpty, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        let limit: Int64 = 1 << 40
        var number: Int64 = 0
        for digit in digits {
            number = min(number * 10 + Int64(digit - 0x30), limit)
        }
        return isNegative ? -number : number
    }

    /// `bytes` without leading and trailing spaces and tabs.
    private static func trimmed(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
        var slice = bytes
        while let first = slice.first, first == 0x20 || first == 0x09 { slice = slice.dropFirst() }
        while let last = slice.last, last == 0x20 || last == 0x09 { slice = slice.dropLast() }
        return Array(slice)
    }
}
