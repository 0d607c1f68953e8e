import Foundation

/// Values for headers Courier sends by default: `User-Agent` and `Accept-Language`.
enum DefaultHeaders {
    // MARK: User-Agent

    /// The `User-Agent` value `Courier/<version> (<OS>)`, e.g. `Courier/1.2.0 (macOS 15.1)`
    /// or `Courier/1.2.0 (Linux; Debian GNU/Linux 12 bookworm)`.
    /// - Parameter version: Courier's version string.
    /// - Returns: A single-line, printable-ASCII header value.
    static func userAgent(version: String) -> String {
        userAgent(version: version, system: operatingSystemDescription)
    }

    /// The `User-Agent` value for an explicit system description (testable core of ``userAgent(version:)``).
    ///
    /// The version is reduced to token characters (`unknown` if nothing is left); the
    /// system description loses control characters, non-ASCII characters, parentheses
    /// and backslashes, and runs of whitespace collapse to one space.
    /// - Parameters:
    ///   - version: Courier's version string.
    ///   - system: The operating-system description placed in the comment.
    /// - Returns: A single-line, printable-ASCII header value.
    static func userAgent(version: String, system: String) -> String {
        let cleanVersion = String(decoding: version.utf8.filter(HeaderValidation.isTokenByte), as: UTF8.self)
        let cleanSystem = sanitizeComment(system)
        var result = "Courier/" + (cleanVersion.isEmpty ? "unknown" : cleanVersion)
        if !cleanSystem.isEmpty { result += " (" + cleanSystem + ")" }
        return result
    }

    /// A description of the running OS such as `macOS 15.1`, `iOS 18.0` or
    /// `Linux; <ProcessInfo.operatingSystemVersionString>`.
    static var operatingSystemDescription: String {
        #if os(Linux)
        return "Linux; " + ProcessInfo.processInfo.operatingSystemVersionString
        #else
        let version = ProcessInfo.processInfo.operatingSystemVersion
        var number = "\(version.majorVersion).\(version.minorVersion)"
        if version.patchVersion != 0 { number += ".\(version.patchVersion)" }
        return operatingSystemName + " " + number
        #endif
    }

    /// The OS family name.
    private static var operatingSystemName: String {
        #if os(macOS)
        "macOS"
        #elseif os(visionOS)
        "visionOS"
        #elseif os(iOS)
        "iOS"
        #elseif os(tvOS)
        "tvOS"
        #elseif os(watchOS)
        "watchOS"
        #elseif os(Windows)
        "Windows"
        #elseif os(Android)
        "Android"
        #elseif os(FreeBSD)
        "FreeBSD"
        #elseif os(OpenBSD)
        "OpenBSD"
        #else
        "Unknown"
        #endif
    }

    /// Keeps printable ASCII except `(`, `)` and `\`, collapsing whitespace runs.
    private static func sanitizeComment(_ text: String) -> String {
        var output: [UInt8] = []
        var pendingSpace = false
        for byte in text.utf8 {
            switch byte {
            case 0x09, 0x0A, 0x0D, 0x20:
                pendingSpace = true
            case 0x21...0x7E where byte != UInt8(ascii: "(") && byte != UInt8(ascii: ")") && byte != UInt8(ascii: "\\"):
                if pendingSpace, !output.isEmpty { output.append(0x20) }
                pendingSpace = false
                output.append(byte)
            default:
                continue
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    // MARK: Accept-Language

    /// The `Accept-Language` value for the user's preferred languages (`Locale.preferredLanguages`).
    static var acceptLanguage: String {
        acceptLanguage(preferredLanguages: Locale.preferredLanguages)
    }

    /// An AFNetworking-style `Accept-Language` value: up to six languages with
    /// decreasing quality, e.g. `en-US, fr;q=0.9, de;q=0.8`.
    ///
    /// Tags are normalised: `_` becomes `-`, encodings (`.UTF-8`) and modifiers
    /// (`@euro`) are removed, and `C`/`POSIX` mean `en`. Invalid tags are skipped
    /// and duplicates (case-insensitive) keep their first position.
    /// - Parameter preferredLanguages: Language identifiers in preference order.
    /// - Returns: The header value; `en` when no usable language is given.
    static func acceptLanguage(preferredLanguages: [String]) -> String {
        var tags: [String] = []
        var seen: Set<String> = []
        for language in preferredLanguages {
            guard let tag = normalizedLanguageTag(language), seen.insert(tag.lowercased()).inserted else { continue }
            tags.append(tag)
            if tags.count == 6 { break }
        }
        guard !tags.isEmpty else { return "en" }
        return tags.enumerated().map { index, tag in
            index == 0 ? tag : "\(tag);q=0.\(10 - index)"
        }.joined(separator: ", ")
    }

    /// A BCP 47-style tag for a locale or language identifier, or `nil` if it is not usable.
    /// - Parameter identifier: e.g. `en_US.UTF-8`, `de-DE@euro`, `C`, `fr`.
    /// - Returns: e.g. `en-US`, `de-DE`, `en`, `fr`.
    static func normalizedLanguageTag(_ identifier: String) -> String? {
        var text = Substring(identifier)
        if let cut = text.firstIndex(where: { $0 == "." || $0 == "@" }) {
            text = text[..<cut]
        }
        let tag = text.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "_", with: "-")
        if tag == "C" || tag == "POSIX" { return "en" }
        let subtags = tag.split(separator: "-", omittingEmptySubsequences: false)
        guard let primary = subtags.first, (1...8).contains(primary.count),
              primary.allSatisfy({ $0.isASCII && $0.isLetter }) || primary == "*",
              subtags.dropFirst().allSatisfy({ (1...8).contains($0.count) && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) } })
        else { return nil }
        return tag
    }
}
