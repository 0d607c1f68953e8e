import HTTPTypes

/// What to do with a request, as decided by `CacheLookup` (RFC 9111 §4).
enum CacheLookupDecision: Sendable, Equatable {
    /// Serve `entry`, which is fresh (RFC 9111 §4.2); send `Age: age` (§5.1, see
    /// `CacheServedHeaders`). `omitBody` is set for a HEAD answered from a stored GET (§4.3.5).
    case fresh(CachedResponseEntry, age: Int, omitBody: Bool)
    /// Serve `entry` although it is stale, as permitted by the client (`max-stale`), the origin
    /// (`stale-while-revalidate`, RFC 5861 §3) or the lookup policy (§4.2.4). When
    /// `revalidateInBackground` is set the caller should also revalidate it without delaying this
    /// response.
    case stale(CachedResponseEntry, age: Int, revalidateInBackground: Bool, omitBody: Bool)
    /// Send the request with `conditionalHeaders` added (§4.3.1) and treat a 304 as validating
    /// `entry` (§4.3.3, `CacheRevalidation.merge`). The headers are empty when the entry has no
    /// validator: the request is then unconditional, but the entry remains a `stale-if-error`
    /// candidate should it fail.
    case revalidate(CachedResponseEntry, conditionalHeaders: HTTPFields)
    /// Nothing usable is stored: send the request.
    case miss
    /// Nothing usable is stored and the request forbids the network (`only-if-cached`) or the
    /// policy is `.cacheOnly`: answer 504 (Gateway Timeout) (§5.2.1.7).
    case unsatisfiable

    /// The entry the decision involves, if any.
    var entry: CachedResponseEntry? {
        switch self {
        case .fresh(let entry, _, _), .stale(let entry, _, _, _), .revalidate(let entry, _): entry
        case .miss, .unsatisfiable: nil
        }
    }
}
