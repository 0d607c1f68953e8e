/// How an operation uses its engine's ``ResponseCache``.
public enum CachePolicy: Sendable, Hashable {
    /// The HTTP caching rules (RFC 9111): fresh responses are served without the network, stale
    /// ones are revalidated, `Cache-Control` on both sides is honoured. The default.
    case useProtocol
    /// Any stored response, even stale, without the network; the network only when nothing is stored.
    case returnCacheElseLoad
    /// Only the cache: a stored response, or ``NetworkError/Code/notCached``.
    case cacheOnly
    /// Always the network; the answer is still stored.
    case reloadIgnoringCache
    /// Always ask the server, conditionally when a stored response has a validator.
    case reloadRevalidating
    /// MKNetworkKit's "cached now, fresh later": a stored response (fresh or stale) is delivered at
    /// once, marked `isCachedResponse`, then the network's answer: a fresh response, or the stored one
    /// confirmed by `304 Not Modified` (``CacheOutcome/revalidated``). Completion handlers hear both;
    /// ``NetworkOperation/cacheUpdates()`` tells them apart.
    case cachedThenFresh

    var lookupPolicy: CacheLookupPolicy {
        switch self {
        case .useProtocol: .useProtocol
        case .returnCacheElseLoad: .returnCacheElseLoad
        case .cacheOnly: .cacheOnly
        case .reloadIgnoringCache: .reloadIgnoringCache
        case .reloadRevalidating: .reloadRevalidating
        case .cachedThenFresh: .returnCacheElseLoad
        }
    }
}

/// One answer of a ``CachePolicy/cachedThenFresh`` operation, from ``NetworkOperation/cacheUpdates()``.
public enum CacheUpdate: Sendable {
    /// The stored response, delivered before the network answers.
    case cached(NetworkResponse)
    /// The network's new response.
    case fresh(NetworkResponse)
    /// The server confirmed the stored response (`304 Not Modified`); it is delivered again, refreshed.
    case notModified(NetworkResponse)
}

/// Where a response came from, when its engine has a cache.
public enum CacheOutcome: String, Sendable, Hashable {
    /// A fresh stored response, served without the network.
    case hit
    /// A stored response the server confirmed with `304 Not Modified`.
    case revalidated
    /// The network's answer (stored when it may be).
    case miss
    /// A stale stored response: allowed by `max-stale`, `stale-while-revalidate`, `stale-if-error`,
    /// a lenient policy, or `fallsBackToCacheOnError` after a network failure.
    case stale
    /// `only-if-cached` and nothing usable stored: a `504` made by the cache.
    case unsatisfiable
}
