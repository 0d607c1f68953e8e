import Foundation
import HTTPTypes

/// When a stored response may be served without the origin's confirmation (RFC 9111 §4.2.4), and
/// when it must not be, whichever way stale serving was asked for: a request directive
/// (`max-stale`), a response directive (`stale-while-revalidate`, `stale-if-error`), a lenient
/// ``CachePolicy``, ``NetworkEngine/Configuration/fallsBackToCacheOnError`` or serving stale while
/// disconnected.
///
/// A private cache: `s-maxage` (§5.2.2.10) and `proxy-revalidate` (§5.2.2.8) bind shared caches only
/// and forbid nothing here; `no-store` responses (§5.2.2.5) are never stored in the first place.
enum CacheStaleServing {
    /// How the engine and operation allow stale answers after a failure.
    struct Allowance: Sendable, Equatable {
        /// ``NetworkEngine/Configuration/fallsBackToCacheOnError``: any network failure or a 500, 502,
        /// 503 or 504.
        var onAnyError = false
        /// ``NetworkEngine/Configuration/servesStaleWhenDisconnected``: only when the origin could not
        /// be reached.
        var whenDisconnected = true
    }

    /// Why the network did not answer usefully.
    enum Failure: Sendable, Equatable {
        /// The origin could not be reached (no route, refused, name not resolved, or reachability says
        /// the host is down). A timeout is not counted: it does not tell a slow origin from an absent one.
        case disconnected
        /// Any other failure: a transport error, or a 500, 502, 503 or 504 from the origin.
        case error
    }

    /// Whether the response's own directives forbid serving it without validation (RFC 9111 §4.2.4):
    /// `no-cache` always (§5.2.2.4: not without successful validation, fresh or not), `must-revalidate`
    /// once stale (§5.2.2.2).
    static func responseForbids(_ entry: CachedResponseEntry, isStale: Bool) -> Bool {
        let control = CacheControl(responseHeaders: entry.headers)
        return control.noCache || (isStale && control.mustRevalidate)
    }

    /// Whether the request's directives refuse a stored response of this age and freshness: `no-cache`
    /// or `Pragma: no-cache` (§5.2.1.4, §5.4), an age over its `max-age` (§5.2.1.1), freshness short of
    /// its `min-fresh` (§5.2.1.3), staleness over its `max-stale` limit (§5.2.1.2).
    static func requestRefuses(_ evaluation: CacheFreshness.Evaluation, requestHeaders: HTTPFields) -> Bool {
        let control = CacheControl(requestHeaders: requestHeaders)
        if control.noCache || !CacheLookup.requestAccepts(evaluation, control) { return true }
        switch control.maxStale {
        case .seconds(let limit): return !evaluation.isFresh && evaluation.staleness > limit
        case .invalid: return !evaluation.isFresh
        case .any, .absent: return false
        }
    }

    /// Whether `entry` may answer a request the network failed for (RFC 9111 §4.2.4, RFC 5861 §4).
    ///
    /// Never when the response or the request forbids it (``responseForbids(_:isStale:)``,
    /// ``requestRefuses(_:requestHeaders:)``). A `stale-if-error` window (the request's, else the
    /// response's) both permits and limits: within it the response is served, past it never, however
    /// stale serving was allowed. Otherwise the engine's ``Allowance`` decides: any error, or only a
    /// disconnection.
    static func mayServeAfterFailure(
        _ entry: CachedResponseEntry, requestHeaders: HTTPFields, now: Date, failure: Failure,
        allowance: Allowance, heuristicCap: Int = CacheFreshness.defaultHeuristicCap
    ) -> Bool {
        let evaluation = CacheFreshness.evaluate(entry, now: now, heuristicCap: heuristicCap)
        if responseForbids(entry, isStale: !evaluation.isFresh) { return false }
        if requestRefuses(evaluation, requestHeaders: requestHeaders) { return false }
        if let window = staleIfErrorWindow(entry, requestHeaders: requestHeaders) {
            return evaluation.staleness <= window
        }
        return allowance.onAnyError || (failure == .disconnected && allowance.whenDisconnected)
    }

    /// The `stale-if-error` window in seconds: the request's directive when it has one, else the
    /// response's; `nil` when neither gives a valid one.
    static func staleIfErrorWindow(_ entry: CachedResponseEntry, requestHeaders: HTTPFields) -> Int? {
        switch CacheControl(requestHeaders: requestHeaders).staleIfError {
        case .seconds(let seconds): seconds
        case .invalid: nil
        case .absent: CacheControl(responseHeaders: entry.headers).staleIfError.seconds
        }
    }
}
