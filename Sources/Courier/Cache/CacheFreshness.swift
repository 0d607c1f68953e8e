import Foundation
import HTTPTypes

/// Freshness lifetime and age of a stored response (RFC 9111 §4.2), in whole seconds.
///
/// Nothing here reads a clock: the times of the exchange and `now` are parameters.
enum CacheFreshness {
    /// The default cap on a heuristic freshness lifetime: 24 hours (RFC 9111 §4.2.2 imposes none;
    /// a day is the conventional ceiling).
    static let defaultHeuristicCap = 86_400

    /// A response's freshness and age at one instant.
    struct Evaluation: Sendable, Equatable {
        /// `freshness_lifetime` (§4.2.1).
        var lifetime: Int
        /// `current_age` (§4.2.3).
        var age: Int

        /// `response_is_fresh = (freshness_lifetime > current_age)` (§4.2).
        var isFresh: Bool { lifetime > age }
        /// Seconds past the freshness lifetime (0 while fresh).
        var staleness: Int { max(0, age - lifetime) }
        /// Seconds of freshness left (negative once stale), as `min-fresh` needs (§5.2.1.3).
        var remaining: Int { lifetime - age }
    }

    /// Evaluates a stored entry at `now`.
    static func evaluate(
        _ entry: CachedResponseEntry, now: Date, heuristicCap: Int = defaultHeuristicCap
    ) -> Evaluation {
        // From what the entry parsed when it was stored (the same rules as the functions below).
        Evaluation(lifetime: entry.facts.lifetime(heuristicCap: heuristicCap), age: entry.facts.age(now: now, responseTime: entry.responseTime))
    }

    /// `freshness_lifetime` for a private cache (RFC 9111 §4.2.1), first match wins:
    /// 1. `max-age` (s-maxage is for shared caches). Invalid or conflicting: 0, i.e. stale.
    /// 2. `Expires` minus `Date` (the response time when Date is missing or invalid). An invalid
    ///    Expires, such as `0`, or several differing Expires lines: 0, "already expired" (§5.3).
    /// 3. A heuristic (§4.2.2), only without explicit freshness and only for heuristically
    ///    cacheable statuses or `public` responses: 10% of Date − Last-Modified, at most
    ///    `heuristicCap` seconds.
    /// 4. Otherwise 0.
    static func freshnessLifetime(
        status: HTTPResponse.Status,
        headers: HTTPFields,
        responseTime: Date,
        heuristicCap: Int = defaultHeuristicCap
    ) -> Int {
        let cacheControl = CacheControl(responseHeaders: headers)
        switch cacheControl.maxAge {
        case .seconds(let value): return value
        case .invalid: return 0
        case .absent: break
        }
        let expiresLines = headers[values: .expires]
        if let first = expiresLines.first {
            guard expiresLines.allSatisfy({ $0 == first }),
                let expires = HTTPDate.parse(first, twoDigitYearReference: responseTime)
            else { return 0 }
            return seconds(expires.timeIntervalSince(dateValue(headers: headers, responseTime: responseTime)))
        }
        guard CacheStorability.isHeuristicallyCacheable(status) || cacheControl.isPublic else { return 0 }
        return heuristicLifetime(headers: headers, responseTime: responseTime, cap: heuristicCap)
    }

    /// Whether the response carries an explicit expiration time (`max-age` or `Expires`, valid or
    /// not), which rules out heuristics (RFC 9111 §4.2.2).
    static func hasExplicitFreshness(_ headers: HTTPFields) -> Bool {
        CacheControl(responseHeaders: headers).maxAge.isPresent || headers.contains(.expires)
    }

    /// The Last-Modified heuristic (RFC 9111 §4.2.2): 10% of the time between Last-Modified and
    /// Date, capped; 0 without a valid Last-Modified or when it is later than Date.
    static func heuristicLifetime(headers: HTTPFields, responseTime: Date, cap: Int = defaultHeuristicCap) -> Int {
        guard let raw = headers[values: .lastModified].first,
            let lastModified = HTTPDate.parse(raw, twoDigitYearReference: responseTime)
        else { return 0 }
        let interval = dateValue(headers: headers, responseTime: responseTime).timeIntervalSince(lastModified)
        return min(seconds(interval / 10), max(0, cap))
    }

    /// `current_age` (RFC 9111 §4.2.3), exactly:
    ///
    ///     apparent_age = max(0, response_time - date_value)
    ///     response_delay = response_time - request_time
    ///     corrected_age_value = age_value + response_delay
    ///     corrected_initial_age = max(apparent_age, corrected_age_value)
    ///     resident_time = now - response_time
    ///     current_age = corrected_initial_age + resident_time
    ///
    /// `date_value` is the response time when Date is missing or invalid; `age_value` is 0 when Age
    /// is missing or invalid (§5.1). The result is rounded down to whole seconds, never negative
    /// (only inconsistent inputs, such as `now` before the response time, could make it so), and
    /// capped at 2^31 (§1.2.2).
    static func currentAge(headers: HTTPFields, requestTime: Date, responseTime: Date, now: Date) -> Int {
        let dateValue = dateValue(headers: headers, responseTime: responseTime)
        let apparentAge = max(0, responseTime.timeIntervalSince(dateValue))
        let responseDelay = responseTime.timeIntervalSince(requestTime)
        let correctedAgeValue = Double(ageValue(headers)) + responseDelay
        let correctedInitialAge = max(apparentAge, correctedAgeValue)
        let residentTime = now.timeIntervalSince(responseTime)
        return seconds(correctedInitialAge + residentTime)
    }

    /// `age_value` (RFC 9111 §5.1): the first member of the first Age line as delta-seconds; 0 when
    /// missing or invalid.
    static func ageValue(_ headers: HTTPFields) -> Int {
        guard let first = CacheHeaderSyntax.listElements(Array(headers[values: .age].prefix(1))).first else { return 0 }
        return CacheHeaderSyntax.deltaSeconds(first) ?? 0
    }

    /// `date_value`: the Date header (RFC 9110 §6.6.1), or the time the response was received when
    /// it is missing or invalid.
    static func dateValue(headers: HTTPFields, responseTime: Date) -> Date {
        headers[values: .date].first.flatMap { HTTPDate.parse($0, twoDigitYearReference: responseTime) }
            ?? responseTime
    }

    /// `interval` as whole seconds for freshness arithmetic: rounded down, clamped to 0...2^31, and
    /// 0 for NaN.
    static func seconds(_ interval: TimeInterval) -> Int {
        guard !interval.isNaN else { return 0 }
        let cap = Double(CacheHeaderSyntax.deltaSecondsCap)
        return Int(min(max(interval.rounded(.down), 0), cap))
    }
}
