import Foundation
import HTTPTypes

/// Validation of stored responses (RFC 9111 §4.3): the conditional request, choosing the stored
/// responses a 304 (Not Modified) refers to, and freshening them with it.
enum CacheRevalidation {
    /// Fields a 304 never overwrites (RFC 9111 §3.2): Content-Length, which the MUST excludes;
    /// Content-Encoding and Content-Type, which the stored content depends upon (Courier may store
    /// content decoded, and §3.2 lets such caches keep them); and Content-Range, which the HTTP
    /// implementation processes itself. The fields §3.1 excludes from storage are dropped too.
    static let fieldsNotUpdated: Set<HTTPField.Name> = [.contentLength, .contentEncoding, .contentType, .contentRange]

    /// The validators to add to a request that validates `entry` (RFC 9111 §4.3.1): `If-None-Match`
    /// with its entity tag, sent verbatim; `If-Modified-Since` with its Last-Modified, verbatim,
    /// when that is a valid HTTP-date (RFC 9110 §13.1.3 derives the date from Last-Modified only,
    /// never from Date). Empty when the entry has neither.
    static func conditionalHeaders(for entry: CachedResponseEntry) -> HTTPFields {
        var headers = HTTPFields()
        if let tag = entry.entityTag { headers[.ifNoneMatch] = tag }
        if let lastModified = entry.lastModified { headers[.ifModifiedSince] = lastModified }
        return headers
    }

    /// `stored` freshened with a 304's header fields (RFC 9111 §3.2, §4.3.4): every field of the 304
    /// replaces all stored fields of that name, except `fieldsNotUpdated` and the fields §3.1
    /// excludes from storage (hop-by-hop, those the 304's Connection names, proxy fields). The
    /// entry's request and response times become those of the 304 exchange, so its age restarts
    /// from there (§4.2.3); status, content and Vary selection are kept.
    ///
    /// `Age` is the one field a 304 also removes: it describes the message it arrived with, and
    /// §4.2.3 pairs `age_value` with that exchange's request and response times. Keeping the old
    /// response's Age next to the 304's times would count its age twice.
    static func merge(
        stored: CachedResponseEntry, notModified: HTTPFields, requestTime: Date, responseTime: Date
    ) -> CachedResponseEntry {
        var merged = stored
        merged.headers = updatedHeaders(stored: stored.headers, with: notModified)
        if !notModified.contains(.age) { merged.headers[fields: .age] = [] }
        merged.requestTime = requestTime
        merged.responseTime = responseTime
        return merged
    }

    /// Stored header fields updated from a newer response's (RFC 9111 §3.2).
    static func updatedHeaders(stored: HTTPFields, with newer: HTTPFields) -> HTTPFields {
        let incoming = CacheStorability.storedHeaders(from: newer).filter { !fieldsNotUpdated.contains($0.name) }
        let replaced = Set(incoming.map(\.name))
        var headers = HTTPFields(stored.filter { !replaced.contains($0.name) })
        headers.append(contentsOf: incoming)
        return headers
    }

    /// The indices of the `candidates` (stored responses for the request) a 304 updates (RFC 9111
    /// §4.3.4):
    /// - A strong entity tag in the 304 selects every stored response with the same strong tag,
    ///   and nothing if none has it (RFC 9110 §8.8.3.2 strong comparison).
    /// - A weak one selects the most recent stored response whose tag matches weakly.
    /// - Without an ETag, a Last-Modified selects the stored responses with the same one: all of
    ///   those for which it is strong (their Date at least a second later, RFC 9110 §8.8.2.2),
    ///   else the most recent.
    /// - With no validator at all, the only stored response, if it has no validator either.
    static func selectStoredForNotModified(_ candidates: [CachedResponseEntry], notModified: HTTPFields) -> [Int] {
        let indices = Array(candidates.indices)
        if let raw = notModified[values: .eTag].first {
            guard let tag = EntityTag(raw) else { return [] }
            if !tag.isWeak {
                return indices.filter { candidates[$0].entityTag.flatMap(EntityTag.init)?.strongMatches(tag) == true }
            }
            return mostRecent(indices.filter { candidates[$0].entityTag.flatMap(EntityTag.init)?.opaque == tag.opaque },
                              in: candidates)
        }
        if let raw = notModified[values: .lastModified].first {
            guard let date = HTTPDate.parse(raw) else { return [] }
            let matching = indices.filter { candidates[$0].lastModified.flatMap { HTTPDate.parse($0) } == date }
            let strong = matching.filter { index in
                guard let entryDate = candidates[index].headers[values: .date].first.flatMap({ HTTPDate.parse($0) })
                else { return false }
                return entryDate.timeIntervalSince(date) >= 1
            }
            return strong.isEmpty ? mostRecent(matching, in: candidates) : strong
        }
        guard candidates.count == 1, let only = candidates.first,
            only.entityTag == nil, only.headers[values: .lastModified].isEmpty
        else { return [] }
        return [0]
    }

    /// The index of the most recent entry among `indices` (by Date, then response time), or none.
    private static func mostRecent(_ indices: [Int], in candidates: [CachedResponseEntry]) -> [Int] {
        let latest = indices.max {
            (candidates[$0].effectiveDate, candidates[$0].responseTime)
                < (candidates[$1].effectiveDate, candidates[$1].responseTime)
        }
        return latest.map { [$0] } ?? []
    }

    /// An entity tag (RFC 9110 §8.8.3): `[ "W/" ] opaque-tag`. The opaque tag is kept as sent,
    /// quotes included; tags sent without quotes are tolerated.
    struct EntityTag: Sendable, Equatable {
        var isWeak: Bool
        var opaque: Substring

        /// Parses a field value; `nil` when empty.
        init?(_ value: String) {
            let trimmed = CacheHeaderSyntax.trimmingOWS(Substring(value))
            isWeak = trimmed.hasPrefix("W/")
            opaque = isWeak ? trimmed.dropFirst(2) : trimmed
            if opaque.isEmpty { return nil }
        }

        /// Strong comparison (RFC 9110 §8.8.3.2): neither weak, opaque tags identical.
        func strongMatches(_ other: EntityTag) -> Bool {
            !isWeak && !other.isWeak && opaque == other.opaque
        }
    }
}
