import Foundation
import HTTPTypes

// How an operation uses its engine's cache. The decisions are the pure rules in Cache/; this file
// only gathers their inputs (request, stored entries, the cache's clock) and acts on them.
extension NetworkOperation {
    /// The cache policy: the operation's own, or its engine's. Set before the operation is enqueued.
    public var cachePolicy: CachePolicy {
        get { storage.withLockedValue { $0.cachePolicy } ?? context.configuration.cachePolicy }
        set { storage.withLockedValue { if $0.machine.state == .ready { $0.cachePolicy = newValue } } }
    }

    /// When the cache must be read from disk before this operation can be looked up: the cache and the
    /// URL to read, or `nil` when the lookup needs no disk read (no cache, memory holds the URL, not a
    /// GET or HEAD, dependencies pending).
    func diskReadBeforeLookup(hasPendingDependencies: Bool) -> (cache: ResponseCache, url: URL)? {
        guard let cache = context.configuration.cache, let url = requestURL, !hasPendingDependencies,
            method == .get || method == .head, cache.memoryCandidates(for: url) == nil
        else { return nil }
        return (cache, url)
    }

    /// Consults the cache for an operation about to enter the queue. Returns `true` when the cache
    /// answered (the operation is finished and never enters the queue).
    /// - Parameter stored: The stored variants, when already read from disk; otherwise they are read here.
    func consultCache(hasPendingDependencies: Bool, stored: [CachedResponseEntry]? = nil) -> Bool {
        guard let cache = context.configuration.cache, let url = requestURL, !hasPendingDependencies else { return false }
        let now = cache.now()
        guard method == .get || method == .head else { return false }
        let (headers, policy) = storage.withLockedValue { storage in
            storage.requestTime = now
            return (storage.headers, storage.cachePolicy ?? context.configuration.cachePolicy)
        }
        // The credentials of this moment choose the partition (the provider is asked outside the lock).
        let credentials = currentCredentials()
        let request = CacheLookup.Request(
            method: method, url: url, headers: headers,
            credentialPartition: Self.credentialPartition(of: headers.replacing(with: credentials), names: context.sensitiveNames(with: credentials)))
        let decision = CacheLookup.decide(request, candidates: stored ?? cache.candidates(for: url), now: now, policy: policy.lookupPolicy)
        if policy == .cachedThenFresh {
            return cachedThenFresh(decision, cache: cache)
        }
        switch decision {
        case .fresh(let entry, let age, let omitBody):
            cache.record(.hit)
            finishFromCache(.success(cachedResponse(entry, age: age, omitBody: omitBody, outcome: .hit)))
            return true
        case .stale(let entry, let age, let revalidateInBackground, let omitBody):
            cache.record(.stale)
            if revalidateInBackground { revalidate(url: url, headers: headers) }
            finishFromCache(.success(cachedResponse(entry, age: age, omitBody: omitBody, outcome: .stale)))
            return true
        case .revalidate(let entry, let conditionalHeaders):
            storage.withLockedValue { storage in
                storage.cacheEntry = entry
                // A caller's own conditional request is left alone.
                guard storage.headers[.ifNoneMatch] == nil, storage.headers[.ifModifiedSince] == nil else { return }
                for field in conditionalHeaders { storage.headers.append(field) }
            }
            return false
        case .miss:
            return false
        case .unsatisfiable:
            if policy == .cacheOnly {
                finishFromCache(.failure(NetworkError(.notCached, "nothing usable is stored for this request", url: urlString)))
            } else {
                var response = NetworkResponse(status: .gatewayTimeout, url: url)
                response.cacheOutcome = .unsatisfiable
                finishFromCache(.success(response))
            }
            return true
        }
    }

    /// "Cached now, fresh later": deliver what is stored, then ask the network (conditionally).
    private func cachedThenFresh(_ decision: CacheLookupDecision, cache: ResponseCache) -> Bool {
        switch decision {
        case .fresh(let entry, let age, let omitBody), .stale(let entry, let age, _, let omitBody):
            let outcome: CacheOutcome = if case .fresh = decision { .hit } else { .stale }
            cache.record(outcome)
            deliverCached(cachedResponse(entry, age: age, omitBody: omitBody, outcome: outcome))
            storage.withLockedValue { storage in
                storage.cacheEntry = entry
                guard storage.headers[.ifNoneMatch] == nil, storage.headers[.ifModifiedSince] == nil else { return }
                for field in CacheRevalidation.conditionalHeaders(for: entry) { storage.headers.append(field) }
            }
            return false
        case .revalidate, .miss, .unsatisfiable:
            return false
        }
    }

    /// Stores, merges or invalidates after the network answered; may answer from the cache instead
    /// when the network failed (stale-if-error, `fallsBackToCacheOnError`).
    func applyCache(to result: Result<NetworkResponse, NetworkError>) -> Result<NetworkResponse, NetworkError> {
        guard let cache = context.configuration.cache, let url = requestURL else { return result }
        let now = cache.now()
        let (entry, requestTime, headers) = storage.withLockedValue {
            ($0.cacheEntry, $0.requestTime ?? now, $0.sentHeaders ?? $0.headers)
        }
        let names = sensitiveNames
        switch result {
        case .success(var response):
            if !CacheInvalidation.isSafe(method) {
                cache.invalidate(CacheInvalidation.invalidatedKeys(
                    method: method, requestURL: url, status: response.status, responseHeaders: response.headers))
                response.cacheOutcome = .miss
                return .success(response)
            }
            if response.statusCode == 304, let entry {
                let merged = CacheRevalidation.merge(stored: entry, notModified: response.headers, requestTime: requestTime, responseTime: now)
                cache.store(merged)
                cache.record(.revalidated)
                return .success(cachedResponse(merged, age: age(of: merged, now: now), omitBody: method == .head, outcome: .revalidated))
            }
            if [500, 502, 503, 504].contains(response.statusCode), let stale = fallback(entry, headers: headers, now: now, cache: cache) {
                return .success(stale)
            }
            switch CacheStorability.verdict(requestMethod: method, requestHeaders: headers, status: response.status, responseHeaders: response.headers) {
            case .storable:
                var entry = CachedResponseEntry.storing(
                    url: response.url, requestHeaders: headers, status: response.status, responseHeaders: response.headers,
                    body: response.body, requestTime: requestTime, responseTime: now,
                    credentialPartition: Self.credentialPartition(of: headers, names: names))
                // A variant chosen by a credential (Vary: X-Auth-Token) holds that credential: memory only.
                entry.isMemoryOnly = entry.varySelectedHeaders.keys.contains { names.contains($0.lowercased()) }
                cache.store(entry)
            case .notStorable(let reason):
                context.configuration.logger.debug("courier response not stored", metadata: [
                    "courier-url": "\(response.url.redactedForLogs)", "courier-reason": "\(reason)",
                ])
            }
            cache.record(.miss)
            response.cacheOutcome = .miss
            return .success(response)
        case .failure(let error):
            guard error.code != .cancelled, let stale = fallback(entry, headers: headers, now: now, cache: cache) else { return result }
            return .success(stale)
        }
    }

    /// The stored response to serve when the network failed, if the rules or the engine allow it.
    private func fallback(_ entry: CachedResponseEntry?, headers: HTTPFields, now: Date, cache: ResponseCache) -> NetworkResponse? {
        guard let entry,
            context.configuration.fallsBackToCacheOnError || CacheLookup.staleIfError(entry: entry, now: now, requestHeaders: headers)
        else { return nil }
        cache.record(.stale)
        return cachedResponse(entry, age: age(of: entry, now: now), omitBody: method == .head, outcome: .stale)
    }

    private func cachedResponse(_ entry: CachedResponseEntry, age: Int, omitBody: Bool, outcome: CacheOutcome) -> NetworkResponse {
        var response = NetworkResponse(
            status: entry.status, headers: CacheServedHeaders.headers(for: entry, age: age),
            body: omitBody ? Data() : entry.body, url: entry.url, originalURL: requestURL ?? entry.url, isCachedResponse: true)
        response.cacheOutcome = outcome
        return response
    }

    private func age(of entry: CachedResponseEntry, now: Date) -> Int {
        CacheFreshness.currentAge(headers: entry.headers, requestTime: entry.requestTime, responseTime: entry.responseTime, now: now)
    }

    /// stale-while-revalidate: the same request, conditional, in the background; its answer updates the cache.
    private func revalidate(url: URL, headers: HTTPFields) {
        let background = NetworkOperation(
            method: method == .head ? .get : method, url: .success(url), urlString: urlString, headers: headers,
            body: nil, context: context, inputError: nil)
        background.cachePolicy = .reloadRevalidating
        background.submit()
    }

    /// A digest of the request's credentials, so responses to different users are never mixed;
    /// `nil` without credentials. The credentials themselves are never stored.
    /// - Parameter names: The lowercase names that carry credentials (the engine's sensitive names and
    ///   the provider's fields).
    static func credentialPartition(of headers: HTTPFields, names: Set<String> = SensitiveHeaders.defaultNames) -> String? {
        let credentials = SensitiveHeaders.kept(names, from: headers)
            .map { "\($0.name.canonicalName): \($0.value)" }.sorted()
        guard !credentials.isEmpty else { return nil }
        return SHA256.hexDigest(Data(credentials.joined(separator: "\n").utf8))
    }
}
