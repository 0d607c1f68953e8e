public import Foundation
import HTTPTypes

// Looking at and removing single stored responses, for apps that show what they have offline or
// forget one resource (a deleted post) without emptying the cache.
extension ResponseCache {
    /// The stored response a GET of `url` with these request headers would find (same URL after
    /// normalisation, `Vary` satisfied, same credentials), whatever its freshness: for inspection or to
    /// show something while offline. No network, no statistics. The disk tier is read on the cache's
    /// own queue, never on the caller's thread.
    /// - Parameters:
    ///   - url: The absolute URL.
    ///   - headers: The request header fields that select among variants (`Accept-Language`, ...) and
    ///     credentials (`Authorization`: responses stored for other credentials are never returned).
    ///   - sensitiveHeaderNames: Names that carry credentials besides the defaults (`Authorization`,
    ///     `Cookie`, `X-API-Key`, ...): those the storing engine added to its
    ///     ``NetworkEngine/Configuration/sensitiveHeaderNames`` and its credential provider's fields.
    ///     Responses are partitioned by these fields' values.
    /// - Returns: The response, marked ``NetworkResponse/isCachedResponse`` with its current `Age`, or
    ///   `nil` when nothing matches.
    public func storedResponse(
        for url: URL, headers: [String: String] = [:], sensitiveHeaderNames: Set<String> = []
    ) async -> NetworkResponse? {
        var fields = HTTPFields()
        for (name, value) in headers { if let name = HTTPField.Name(name) { fields.append(HTTPField(name: name, value: value)) } }
        let candidates: [CachedResponseEntry]
        if let inMemory = memoryCandidates(for: url) {
            candidates = inMemory
        } else {
            candidates = await withCheckedContinuation { continuation in readDisk(for: url) { continuation.resume(returning: $0) } }
        }
        let request = CacheLookup.Request(url: url, headers: fields, credentialPartition: credentialPartition(
            of: fields, names: SensitiveHeaders.defaultNames.union(sensitiveHeaderNames.map { $0.lowercased() })))
        guard let entry = CacheLookup.select(request, from: candidates) else { return nil }
        let age = CacheFreshness.currentAge(headers: entry.headers, requestTime: entry.requestTime, responseTime: entry.responseTime, now: now())
        return NetworkResponse(
            status: entry.status, headers: CacheServedHeaders.headers(for: entry, age: age), body: entry.body,
            url: entry.url, isCachedResponse: true)
    }

    /// Removes every response stored for `url` (all variants, all credentials), in memory at once and
    /// on disk on the cache's own queue.
    /// - Parameter url: The absolute URL.
    public func removeResponses(for url: URL) {
        guard let key = CacheURLKey.key(for: url) else { return }
        invalidate([key])
    }
}
