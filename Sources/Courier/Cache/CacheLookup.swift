import Foundation
import HTTPTypes

/// Decides how to answer a request given the responses stored for its URL (RFC 9111 §4): serve a
/// fresh one, serve a stale one, validate one, go to the network, or give up.
///
/// A pure function of its inputs; `now` is a parameter. `immutable` (RFC 8246) matters to reloads
/// only: under `.reloadRevalidating` (a reload) a fresh immutable response is served without asking
/// the origin. A request's explicit `no-cache` or `max-age=0` and `.reloadIgnoringCache` (a forced
/// reload) still go to the network, and freshness is computed as usual.
enum CacheLookup {
    /// The parts of a request that matter to a lookup.
    struct Request: Sendable, Equatable {
        /// GET and HEAD can be answered from the cache; other methods never are.
        var method: HTTPRequest.Method
        /// The target URI.
        var url: URL
        /// The request header fields (Cache-Control, Pragma, and the Vary-selected fields).
        var headers: HTTPFields
        /// The digest of the request's credentials, as given to stored entries; `nil` for none.
        var credentialPartition: String?

        /// A request description.
        init(method: HTTPRequest.Method = .get, url: URL, headers: HTTPFields = [:], credentialPartition: String? = nil) {
            self.method = method
            self.url = url
            self.headers = headers
            self.credentialPartition = credentialPartition
        }
    }

    /// The decision for `request` among `candidates` (the entries stored for its URL) at `now`.
    ///
    /// Under `.useProtocol` (RFC 9111 §4):
    /// 1. Select the most recent stored response that matches: same URL, same credential
    ///    partition, a GET response (which answers GET and HEAD, §4.3.5), Vary satisfied (§4.1).
    ///    None: `.miss`, or `.unsatisfiable` with `only-if-cached` (§5.2.1.7).
    /// 2. Validate (`.revalidate`) when the response says `no-cache` (§5.2.2.4), the request says
    ///    `no-cache` or `Pragma: no-cache` (§5.2.1.4, §5.4), the response is older than the request's
    ///    `max-age` (§5.2.1.1), or fresh for less than its `min-fresh` (§5.2.1.3). An invalid request
    ///    `max-age` reads as 0 and an invalid `min-fresh` is never met (the restrictive reading).
    /// 3. Serve a fresh response (`.fresh`, §4.2).
    /// 4. Serve a stale one only when allowed (§4.2.4) and not forbidden by `must-revalidate`
    ///    (§5.2.2.2): within `stale-while-revalidate` (RFC 5861 §3) with a background revalidation,
    ///    else within the request's `max-stale` (§5.2.1.2). `proxy-revalidate` binds shared caches
    ///    only (§5.2.2.8) and is ignored.
    /// 5. Otherwise `.revalidate`, or `.unsatisfiable` with `only-if-cached`.
    ///
    /// The other policies override those rules; see `CacheLookupPolicy`. Request directives,
    /// `only-if-cached` included, apply under `.useProtocol` only.
    static func decide(
        _ request: Request,
        candidates: [CachedResponseEntry],
        now: Date,
        policy: CacheLookupPolicy = .useProtocol,
        heuristicCap: Int = CacheFreshness.defaultHeuristicCap
    ) -> CacheLookupDecision {
        let omitBody = request.method == .head
        let selected = select(request, from: candidates)
        switch policy {
        case .useProtocol:
            return decideByProtocol(request, selected: selected, now: now, heuristicCap: heuristicCap)
        case .reloadIgnoringCache:
            return .miss
        case .returnCacheElseLoad, .cacheOnly:
            guard let entry = selected else { return policy == .cacheOnly ? .unsatisfiable : .miss }
            let evaluation = CacheFreshness.evaluate(entry, now: now, heuristicCap: heuristicCap)
            // No policy overrides `no-cache` or a stale `must-revalidate` (§4.2.4, §5.2.2.2, §5.2.2.4).
            if CacheStaleServing.responseForbids(entry, isStale: !evaluation.isFresh) {
                return policy == .cacheOnly
                    ? .unsatisfiable : .revalidate(entry, conditionalHeaders: CacheRevalidation.conditionalHeaders(for: entry))
            }
            return evaluation.isFresh
                ? .fresh(entry, age: evaluation.age, omitBody: omitBody)
                : .stale(entry, age: evaluation.age, revalidateInBackground: false, omitBody: omitBody)
        case .reloadRevalidating:
            guard let entry = selected else { return .miss }
            let evaluation = CacheFreshness.evaluate(entry, now: now, heuristicCap: heuristicCap)
            let control = CacheControl(responseHeaders: entry.headers)
            // RFC 8246 §2: no conditional request on reload while an immutable response is fresh.
            if control.immutable, !control.noCache, evaluation.isFresh {
                return .fresh(entry, age: evaluation.age, omitBody: omitBody)
            }
            let conditional = CacheRevalidation.conditionalHeaders(for: entry)
            return conditional.isEmpty ? .miss : .revalidate(entry, conditionalHeaders: conditional)
        }
    }

    /// RFC 9111 §4 for the selected entry (see `decide`).
    private static func decideByProtocol(
        _ request: Request, selected: CachedResponseEntry?, now: Date, heuristicCap: Int
    ) -> CacheLookupDecision {
        let requestControl = CacheControl(requestHeaders: request.headers)
        guard let entry = selected else { return requestControl.onlyIfCached ? .unsatisfiable : .miss }
        let omitBody = request.method == .head
        let evaluation = CacheFreshness.evaluate(entry, now: now, heuristicCap: heuristicCap)
        let responseControl = entry.facts.control
        let mustValidate = responseControl.noCache || requestControl.noCache
            || !requestAccepts(evaluation, requestControl)
        if !mustValidate {
            if evaluation.isFresh { return .fresh(entry, age: evaluation.age, omitBody: omitBody) }
            if !responseControl.mustRevalidate {
                if let window = responseControl.staleWhileRevalidate.seconds, evaluation.staleness <= window {
                    return .stale(entry, age: evaluation.age, revalidateInBackground: true, omitBody: omitBody)
                }
                if requestControl.maxStale.accepts(staleness: evaluation.staleness) {
                    return .stale(entry, age: evaluation.age, revalidateInBackground: false, omitBody: omitBody)
                }
            }
        }
        if requestControl.onlyIfCached { return .unsatisfiable }
        return .revalidate(entry, conditionalHeaders: CacheRevalidation.conditionalHeaders(for: entry))
    }

    /// Whether the request's `max-age` (§5.2.1.1) and `min-fresh` (§5.2.1.3) accept a response
    /// with this age and freshness.
    static func requestAccepts(_ evaluation: CacheFreshness.Evaluation, _ control: CacheControl) -> Bool {
        switch control.maxAge {
        case .seconds(let limit) where evaluation.age > limit: return false
        case .invalid where evaluation.age > 0: return false
        default: break
        }
        switch control.minFresh {
        case .seconds(let wanted): return evaluation.remaining >= wanted
        case .invalid: return false
        case .absent: return true
        }
    }

    /// The stored response to use for `request` (RFC 9111 §4, §4.1): among the candidates with the
    /// same cache key and credential partition whose Vary matches, the most recent by Date (then
    /// by response time). `nil` for methods other than GET and HEAD.
    /// A stored partial response (§3.3) is selected only for a `Range` request whose bytes it holds.
    static func select(_ request: Request, from candidates: [CachedResponseEntry]) -> CachedResponseEntry? {
        matching(request, from: candidates)
            .filter { CachePartialContent.canAnswer($0, requestHeaders: request.headers) }
            .max { ($0.effectiveDate, $0.responseTime) < ($1.effectiveDate, $1.responseTime) }
    }

    /// Every candidate that may answer `request`: same cache key and credential partition, Vary
    /// satisfied (RFC 9111 §4.1); empty for methods other than GET and HEAD. These are the stored
    /// responses a 304 may update (§4.3.4).
    static func matching(_ request: Request, from candidates: [CachedResponseEntry]) -> [CachedResponseEntry] {
        guard request.method == .get || request.method == .head,
            let key = CacheURLKey.key(for: request.url)
        else { return [] }
        return candidates.filter {
            $0.cacheKey == key && $0.credentialPartition == request.credentialPartition
                && CacheVary.matches($0, requestHeaders: request.headers)
        }
    }

    /// Whether `entry` may be served, stale or not, because the network failed (an error status
    /// such as 500, 502, 503, 504, or no response at all), per `stale-if-error` alone (RFC 5861 §4);
    /// see `CacheStaleServing.mayServeAfterFailure` for the rules and the engine's own allowances.
    static func staleIfError(
        entry: CachedResponseEntry,
        now: Date,
        requestHeaders: HTTPFields,
        heuristicCap: Int = CacheFreshness.defaultHeuristicCap
    ) -> Bool {
        CacheStaleServing.mayServeAfterFailure(
            entry, requestHeaders: requestHeaders, now: now, failure: .error,
            allowance: .init(onAnyError: false, whenDisconnected: false), heuristicCap: heuristicCap)
    }
}
