/// What the engine's cache found for an operation before it went to the network
/// (``EventMonitor/operation(_:didLookUpCache:)``).
public enum CacheLookupResult: String, Sendable, Hashable {
    /// A fresh stored response answers the operation; no request is sent (with
    /// ``CachePolicy/cachedThenFresh``, it is delivered first and the request still goes, conditional).
    case hit
    /// A stale stored response answers the operation (`max-stale`, `stale-while-revalidate`, a lenient
    /// policy); no request is sent for it.
    case stale
    /// A stored response must be revalidated: the request goes with its validators (`If-None-Match`,
    /// `If-Modified-Since`), and a `304` answers it from the cache.
    case revalidate
    /// Nothing usable is stored: the request goes as it is.
    case miss
    /// Only a stored response would do (`only-if-cached`, ``CachePolicy/cacheOnly``) and there is none.
    case unsatisfiable
}
