import HTTPTypes

/// The header fields of a response served from the cache (RFC 9111 §4, §5.1).
enum CacheServedHeaders {
    /// The stored fields with a single `Age` giving `age` in whole seconds (RFC 9111 §5.1),
    /// replacing any stored Age; negative ages become 0 and larger ones than 2^31 become 2^31
    /// (§1.2.2).
    static func headers(stored: HTTPFields, age: Int) -> HTTPFields {
        var headers = stored
        headers[.age] = String(min(max(age, 0), CacheHeaderSyntax.deltaSecondsCap))
        return headers
    }

    /// The header fields to serve `entry` with at `age` (as reported by `CacheLookupDecision`).
    static func headers(for entry: CachedResponseEntry, age: Int) -> HTTPFields {
        headers(stored: entry.headers, age: age)
    }
}
