/// How a lookup uses the cache: RFC 9111's rules, or an application override of them (the policies
/// mirror the familiar URLRequest cache policies).
enum CacheLookupPolicy: Sendable, Equatable {
    /// RFC 9111 §4 in full: freshness, request and response directives, validation.
    case useProtocol
    /// Any stored response that matches the request (URL, Vary, credentials), however stale and
    /// whatever its directives; otherwise the network.
    case returnCacheElseLoad
    /// Any stored response that matches the request; otherwise `.unsatisfiable` (the caller answers
    /// 504, as for `only-if-cached`, RFC 9111 §5.2.1.7).
    case cacheOnly
    /// Never answer from the cache (stored responses may still be replaced by the new one).
    case reloadIgnoringCache
    /// Always validate a matching stored response with the origin (RFC 9111 §4.3.1) when it has a
    /// validator; without one, load normally.
    case reloadRevalidating
}
