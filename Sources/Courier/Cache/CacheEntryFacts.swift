import Foundation
import HTTPTypes

/// What a stored response's headers say about its freshness (RFC 9111 §4.2), parsed once when the
/// entry is stored or updated instead of on every lookup: its `Cache-Control`, its `Date`, its
/// freshness lifetime and its age when it was received.
struct CacheEntryFacts: Sendable, Equatable {
    /// The response's `Cache-Control` (with `Pragma: no-cache`).
    let control: CacheControl
    /// The `Date` header's value, or the response time when it has none or it is invalid (§4.2.3).
    let dateValue: Date
    /// The freshness lifetime (§4.2.1), or the heuristic one before the engine's cap (§4.2.2).
    let lifetime: Lifetime
    /// `corrected_initial_age` (§4.2.3): the age the response had when it was received.
    let correctedInitialAge: TimeInterval

    /// How long the response is fresh.
    enum Lifetime: Sendable, Equatable {
        /// Given by `max-age` or `Expires` (0 when those are invalid, or no heuristic is allowed).
        case explicit(Int)
        /// A tenth of the time since `Last-Modified`, capped when asked (``lifetime(heuristicCap:)``).
        case heuristic(uncapped: Int)
    }

    /// Parses what the headers say; the same rules as ``CacheFreshness/freshnessLifetime(status:headers:responseTime:heuristicCap:)``
    /// and ``CacheFreshness/currentAge(headers:requestTime:responseTime:now:)``.
    init(status: HTTPResponse.Status, headers: HTTPFields, requestTime: Date, responseTime: Date) {
        let control = CacheControl(responseHeaders: headers)
        let dateValue = CacheFreshness.dateValue(headers: headers, responseTime: responseTime)
        self.control = control
        self.dateValue = dateValue
        self.lifetime = Self.lifetime(status: status, headers: headers, control: control, dateValue: dateValue, responseTime: responseTime)
        let apparentAge = max(0, responseTime.timeIntervalSince(dateValue))
        let correctedAgeValue = Double(CacheFreshness.ageValue(headers)) + responseTime.timeIntervalSince(requestTime)
        self.correctedInitialAge = max(apparentAge, correctedAgeValue)
    }

    /// The freshness lifetime with the engine's heuristic cap applied.
    func lifetime(heuristicCap: Int) -> Int {
        switch lifetime {
        case .explicit(let seconds): seconds
        case .heuristic(let uncapped): min(uncapped, max(0, heuristicCap))
        }
    }

    /// The response's current age at `now` (§4.2.3).
    func age(now: Date, responseTime: Date) -> Int {
        CacheFreshness.seconds(correctedInitialAge + now.timeIntervalSince(responseTime))
    }

    private static func lifetime(
        status: HTTPResponse.Status, headers: HTTPFields, control: CacheControl, dateValue: Date, responseTime: Date
    ) -> Lifetime {
        switch control.maxAge {
        case .seconds(let value): return .explicit(value)
        case .invalid: return .explicit(0)
        case .absent: break
        }
        let expiresLines = headers[values: .expires]
        if let first = expiresLines.first {
            guard expiresLines.allSatisfy({ $0 == first }),
                let expires = HTTPDate.parse(first, twoDigitYearReference: responseTime)
            else { return .explicit(0) }
            return .explicit(CacheFreshness.seconds(expires.timeIntervalSince(dateValue)))
        }
        guard CacheStorability.isHeuristicallyCacheable(status) || control.isPublic else { return .explicit(0) }
        guard let raw = headers[values: .lastModified].first,
            let lastModified = HTTPDate.parse(raw, twoDigitYearReference: responseTime)
        else { return .explicit(0) }
        return .heuristic(uncapped: CacheFreshness.seconds(dateValue.timeIntervalSince(lastModified) / 10))
    }
}
