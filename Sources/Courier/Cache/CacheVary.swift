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
    static func normalizedValue(of name: String, in headers: HTTPFields) -> String? {
        guard let fieldName = CacheHeaderSyntax.fieldName(name) else { return nil }
        let lines = headers[values: fieldName]
        guard !lines.isEmpty else { return nil }
        return CacheHeaderSyntax.normalizedValue(lines, separator: fieldName == .cookie ? "; " : ", ")
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
