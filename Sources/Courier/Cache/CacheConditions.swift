import Foundation
import HTTPTypes

/// A request the application made conditional itself (`If-None-Match`, `If-Modified-Since`),
/// answered from a stored response (RFC 9111 §4.3.2, RFC 9110 §13.1.2, §13.1.3).
enum CacheConditions {
    /// Whether the request carries a condition the cache can evaluate on a stored response.
    static func isConditional(_ requestHeaders: HTTPFields) -> Bool {
        requestHeaders[.ifNoneMatch] != nil || requestHeaders[.ifModifiedSince] != nil
    }

    /// Whether a stored response answers the request's condition with `304 Not Modified`:
    /// - `If-None-Match` (RFC 9110 §13.1.2): `*`, or any listed entity tag matching the stored ETag
    ///   by weak comparison (§8.8.3.2). When present, `If-Modified-Since` is ignored.
    /// - Otherwise a valid `If-Modified-Since` date (§13.1.3): the stored `Last-Modified`, else its
    ///   `Date`, else the time it was received (RFC 9111 §4.3.2), is no later than that date.
    /// An invalid If-Modified-Since date is ignored (RFC 9110 §13.1.3): the stored response is served.
    static func isNotModified(_ entry: CachedResponseEntry, requestHeaders: HTTPFields) -> Bool {
        let ifNoneMatch = requestHeaders[values: .ifNoneMatch]
        if !ifNoneMatch.isEmpty {
            let listed = CacheHeaderSyntax.listElements(ifNoneMatch)
            if listed.contains("*") { return true }
            guard let stored = entry.entityTag.flatMap(CacheRevalidation.EntityTag.init) else { return false }
            return listed.contains { CacheRevalidation.EntityTag(String($0))?.opaque == stored.opaque }
        }
        guard let raw = requestHeaders[values: .ifModifiedSince].first, let since = HTTPDate.parse(raw) else { return false }
        let modified = entry.lastModified.flatMap { HTTPDate.parse($0) }
            ?? entry.headers[values: .date].first.flatMap { HTTPDate.parse($0) }
            ?? entry.responseTime
        return modified <= since
    }

    /// Fields a 304 carries from the stored response (RFC 9110 §15.4.5): those a 200 would have had
    /// that guide caches (Cache-Control, Content-Location, Date, ETag, Expires, Vary), and the stored
    /// validators (ETag, Last-Modified). Content metadata (Content-Type, Content-Length, ...) is not
    /// sent: a 304 has no content.
    static let notModifiedFields: [HTTPField.Name] = [
        .cacheControl, .contentLocation, .date, .eTag, .expires, .vary, .lastModified,
    ]

    /// The header fields of a `304 Not Modified` made by the cache from `entry`, with its `Age`.
    static func notModifiedHeaders(for entry: CachedResponseEntry, age: Int) -> HTTPFields {
        let kept = Set(notModifiedFields)
        return CacheServedHeaders.headers(stored: HTTPFields(entry.headers.filter { kept.contains($0.name) }), age: age)
    }
}
