import Foundation
import HTTPTypes

/// Vary matching (RFC 9111 §4.1): which stored responses may answer a request whose selecting
/// header fields may differ from those of the request that produced them.
enum CacheVary {
    /// The field names a response's `Vary` lists (RFC 9110 §12.5.5).
    enum FieldNames: Sendable, Equatable {
        /// Lowercased names, in order, without duplicates; empty without Vary.
        case names([String])
        /// `Vary: *` (alone or in a list): the response never matches a later request (§4.1).
        case wildcard
    }

    /// The names listed by every Vary line of `responseHeaders`, lowercased.
    static func fieldNames(_ responseHeaders: HTTPFields) -> FieldNames {
        var names: [String] = []
        for element in CacheHeaderSyntax.listElements(responseHeaders[values: .vary]) {
            if element == "*" { return .wildcard }
            let name = CacheHeaderSyntax.asciiLowercased(element)
            if !names.contains(name) { names.append(name) }
        }
        return .names(names)
    }

    /// The normalised value of the field `name` in `headers`, or `nil` when absent (or when `name`
    /// is not a valid field name, so no message can carry it). All field lines are combined with
    /// ", " (RFC 9110 §5.3; "; " for Cookie, which HTTPTypes splits per cookie), each trimmed and
    /// with runs of SP/HTAB collapsed (RFC 9111 §4.1).
    ///
    /// The content-negotiation fields (`Accept`, `Accept-Charset`, `Accept-Encoding`,
    /// `Accept-Language`) are compared by meaning, as §4.1 allows: see ``normalizedPreferences(_:)``.
    static func normalizedValue(of name: String, in headers: HTTPFields) -> String? {
        guard let fieldName = CacheHeaderSyntax.fieldName(name) else { return nil }
        let lines = headers[values: fieldName]
        guard !lines.isEmpty else { return nil }
        if preferenceFields.contains(CacheHeaderSyntax.asciiLowercased(name)) { return normalizedPreferences(lines) }
        return CacheHeaderSyntax.normalizedValue(lines, separator: fieldName == .cookie ? "; " : ", ")
    }

    /// The fields whose values are weighted preference lists (RFC 9110 §12.5).
    static let preferenceFields: Set<String> = ["accept", "accept-charset", "accept-encoding", "accept-language"]

    /// A preference list in a canonical form, so that equivalent lists compare equal: elements lowercased
    /// (tokens, language tags and media types are case-insensitive), whitespace dropped, `q` written
    /// without trailing zeros and left out when 1 (the default, RFC 9110 §12.4.2), duplicates removed,
    /// and elements ordered by weight, then alphabetically (order carries no meaning between elements
    /// of equal weight). `en-US,fr;q=0.50` and `fr; Q=0.5, EN-us` both read `en-us, fr;q=0.5`.
    static func normalizedPreferences(_ lines: [String]) -> String {
        var seen = Set<String>()
        var elements: [(value: String, weight: Double)] = []
        for element in CacheHeaderSyntax.listElements(lines) {
            var parameters = element.split(separator: ";").map { CacheHeaderSyntax.asciiLowercased(CacheHeaderSyntax.trimmingOWS($0)) }
            guard !parameters.isEmpty, !parameters[0].isEmpty else { continue }
            var weight = 1.0
            if let index = parameters.firstIndex(where: { $0.hasPrefix("q=") || $0.hasPrefix("q =") }) {
                let raw = parameters[index].drop { $0 != "=" }.dropFirst().trimmingCharacters(in: .whitespaces)
                weight = Double(raw).map { min(max($0, 0), 1) } ?? 1
                parameters.remove(at: index)
            }
            var value = parameters.map { $0.replacingOccurrences(of: " ", with: "") }.joined(separator: ";")
            if weight < 1 { value += ";q=" + Self.weightText(weight) }
            if seen.insert(value).inserted { elements.append((value, weight)) }
        }
        return elements.sorted { $0.weight != $1.weight ? $0.weight > $1.weight : $0.value < $1.value }
            .map(\.value).joined(separator: ", ")
    }

    /// A weight with at most three decimals and no trailing zeros (`0.5`, `0.25`, `0`).
    private static func weightText(_ weight: Double) -> String {
        var text = String(format: "%.3f", weight)
        while text.hasSuffix("0") { text.removeLast() }
        if text.hasSuffix(".") { text.removeLast() }
        return text
    }

    /// The request's selecting header fields (the ones the response's Vary names) as normalised
    /// values keyed by lowercased name, for storing with the entry (RFC 9111 §4.1). A field the
    /// request lacks has no key. Empty for `Vary: *`, which never matches anyway.
    static func selectedHeaders(vary responseHeaders: HTTPFields, request requestHeaders: HTTPFields) -> [String: String] {
        guard case .names(let names) = fieldNames(responseHeaders) else { return [:] }
        var selected: [String: String] = [:]
        for name in names {
            if let value = normalizedValue(of: name, in: requestHeaders) { selected[name] = value }
        }
        return selected
    }

    /// Whether a stored response, whose request's selecting fields were `storedSelection`, may
    /// answer a request with `requestHeaders` (RFC 9111 §4.1): every field named by the stored
    /// `Vary` must have the same normalised value in both requests, or be absent from both.
    /// `Vary: *` never matches.
    static func matches(
        storedResponseHeaders: HTTPFields, storedSelection: [String: String], requestHeaders: HTTPFields
    ) -> Bool {
        guard case .names(let names) = fieldNames(storedResponseHeaders) else { return false }
        return names.allSatisfy { name in
            storedSelection[name] == normalizedValue(of: name, in: requestHeaders)
        }
    }

    /// Whether `entry` matches `requestHeaders` (see `matches(storedResponseHeaders:...)`).
    static func matches(_ entry: CachedResponseEntry, requestHeaders: HTTPFields) -> Bool {
        matches(storedResponseHeaders: entry.headers, storedSelection: entry.varySelectedHeaders,
                requestHeaders: requestHeaders)
    }
}
