import Foundation
import HTTPTypes

/// One stored response (RFC 9111 §3): what the cache keeps about an exchange to answer later
/// requests for the same URL.
///
/// A plain value; the store that holds entries is elsewhere. Only responses to GET are stored
/// (see `CacheStorability`), so an entry always answers GET, and HEAD (§4.3.5).
struct CachedResponseEntry: Sendable, Equatable {
    /// The target URI of the request that produced the response.
    var url: URL { didSet { cacheKey = CacheURLKey.key(for: url) } }
    /// The response status.
    var status: HTTPResponse.Status { didSet { refreshFacts() } }
    /// The stored header fields: the response's, less those §3.1 excludes.
    var headers: HTTPFields { didSet { refreshFacts() } }
    /// The content, opaque to the cache core.
    var body: Data
    /// When the request that produced (or last validated) the response was sent: `request_time`
    /// of RFC 9111 §4.2.3.
    var requestTime: Date { didSet { refreshFacts() } }
    /// When that response was received: `response_time` of RFC 9111 §4.2.3.
    var responseTime: Date { didSet { refreshFacts() } }
    /// What the headers say about freshness, parsed once per change (every lookup reads it).
    private(set) var facts: CacheEntryFacts
    /// The normalised values of the request fields named by the response's Vary, keyed by
    /// lowercased name; a field the request lacked has no key (RFC 9111 §4.1).
    var varySelectedHeaders: [String: String]
    /// A digest identifying the credentials the request carried, supplied by the caller, or `nil`
    /// for none. Never the credential itself. Lookups only match entries of the same partition.
    var credentialPartition: String?
    /// Whether the entry must never be written to disk (its Vary selection holds a credential).
    var isMemoryOnly = false

    /// An entry from its parts, as stored.
    init(
        url: URL,
        status: HTTPResponse.Status,
        headers: HTTPFields,
        body: Data,
        requestTime: Date,
        responseTime: Date,
        varySelectedHeaders: [String: String] = [:],
        credentialPartition: String? = nil
    ) {
        self.url = url
        self.cacheKey = CacheURLKey.key(for: url)
        self.status = status
        self.headers = headers
        self.body = body
        self.requestTime = requestTime
        self.responseTime = responseTime
        self.facts = CacheEntryFacts(status: status, headers: headers, requestTime: requestTime, responseTime: responseTime)
        self.varySelectedHeaders = varySelectedHeaders
        self.credentialPartition = credentialPartition
    }

    /// The entry to store for an exchange: the response's fields filtered per RFC 9111 §3.1 and
    /// the request's selecting fields recorded per §4.1. Call only when
    /// `CacheStorability.canStore(...)` said yes.
    static func storing(
        url: URL,
        requestHeaders: HTTPFields,
        status: HTTPResponse.Status,
        responseHeaders: HTTPFields,
        body: Data,
        requestTime: Date,
        responseTime: Date,
        credentialPartition: String? = nil
    ) -> CachedResponseEntry {
        let stored = CacheStorability.storedHeaders(from: responseHeaders)
        return CachedResponseEntry(
            url: url, status: status, headers: stored, body: body,
            requestTime: requestTime, responseTime: responseTime,
            varySelectedHeaders: CacheVary.selectedHeaders(vary: stored, request: requestHeaders),
            credentialPartition: credentialPartition
        )
    }

    /// The normalised URL the entry is filed under (see `CacheURLKey`), or `nil` if `url` has no
    /// scheme or host.
    /// Computed once (with the URL): every lookup compares it with each candidate's.
    private(set) var cacheKey: String?

    /// The stored `ETag` (RFC 9110 §8.8.3), trimmed; `nil` when absent or empty.
    var entityTag: String? {
        headers[values: .eTag].first.map { String(CacheHeaderSyntax.trimmingOWS(Substring($0))) }
            .flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The stored `Last-Modified` (RFC 9110 §8.8.2) when it is a valid HTTP-date.
    var lastModified: String? {
        headers[values: .lastModified].first.flatMap { HTTPDate.parse($0) == nil ? nil : $0 }
    }

    /// The `Date` of the response, or its response time when Date is missing or invalid; orders
    /// entries by recency (RFC 9111 §4.1, §4.3.4).
    var effectiveDate: Date { facts.dateValue }

    private mutating func refreshFacts() {
        facts = CacheEntryFacts(status: status, headers: headers, requestTime: requestTime, responseTime: responseTime)
    }
}
