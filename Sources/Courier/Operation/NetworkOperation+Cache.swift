import Foundation
import HTTPTypes

// How an operation uses its engine's cache. The decisions are the pure rules in Cache/; this file
// only gathers their inputs (request, stored entries, the cache's clock) and acts on them.
extension NetworkOperation {
    /// The cache policy: the operation's own, or its engine's. Set before the operation is enqueued.
    public var cachePolicy: CachePolicy {
        get { storage.withLockedValue { $0.cache.policy } ?? context.configuration.cachePolicy }
        set { storage.withLockedValue { if $0.machine.state == .ready { $0.cache.policy = newValue } } }
    }

    /// Whether a stored response, even stale, answers this operation when its host cannot be reached
    /// (RFC 9111 §4.2.4): the operation's own choice, or its engine's
    /// (``NetworkEngine/Configuration/servesStaleWhenDisconnected``, on by default). Such an answer is
    /// marked ``NetworkResponse/isCachedResponse`` with ``CacheOutcome/stale``. Never for a response
    /// whose directives forbid it (`no-cache`, `must-revalidate`, a `stale-if-error` window that ran
    /// out) or a request that refuses it (`no-cache`, `max-age`, `min-fresh`, `max-stale`). Set before
    /// the operation is enqueued.
    public var servesStaleWhenDisconnected: Bool {
        get { storage.withLockedValue { $0.cache.servesStaleWhenDisconnected } ?? context.configuration.servesStaleWhenDisconnected }
        set { storage.withLockedValue { if $0.machine.state == .ready { $0.cache.servesStaleWhenDisconnected = newValue } } }
    }

    /// Where the stored variants for an operation's cache lookup come from.
    enum StoredVariants {
        /// The operation is not looked up now (no cache, not a GET or HEAD, dependencies pending).
        case notLookedUp
        /// Known without the disk: memory holds them, or the disk's key index says there are none.
        case known([CachedResponseEntry])
        /// The cache must read them from disk, off the caller's thread.
        case onDisk(ResponseCache, URL)
    }

    /// What the cache lookup of an operation about to be submitted starts from. Asked once, so that the
    /// lookup uses this answer and never reads the disk on the caller's thread.
    func storedVariantsBeforeLookup(hasPendingDependencies: Bool) -> StoredVariants {
        guard let cache = context.configuration.cache, let url = requestURL, !hasPendingDependencies, !isExclusiveTransfer,
            method == .get || method == .head
        else { return .notLookedUp }
        return cache.memoryCandidates(for: url).map(StoredVariants.known) ?? .onDisk(cache, url)
    }

    /// Consults the cache for an operation about to enter the queue. Returns `true` when the cache
    /// answered (the operation is finished and never enters the queue).
    /// - Parameter stored: The stored variants, when already read from disk; otherwise they are read here.
    func consultCache(hasPendingDependencies: Bool, stored: [CachedResponseEntry]? = nil) -> Bool {
        guard let cache = context.configuration.cache, let url = requestURL, !hasPendingDependencies, !isExclusiveTransfer
        else { return false }
        let now = cache.now()
        guard method == .get || method == .head else { return false }
        let (headers, policy) = storage.withLockedValue { storage in
            storage.cache.requestTime = now
            return (storage.headers, storage.cache.policy ?? context.configuration.cachePolicy)
        }
        // The credentials of this moment choose the partition (the provider is asked outside the lock).
        let credentials = currentCredentials().replacing(with: interceptorCacheCredentials(for: url))
        let request = CacheLookup.Request(
            method: method, url: url, headers: headers,
            credentialPartition: cache.credentialPartition(
                of: headers.replacing(with: credentials), names: context.sensitiveNames(with: credentials),
                user: context.configuration.cachePartitionName?(url)))
        let candidates = stored ?? cache.candidates(for: url)
        let decision = CacheLookup.decide(request, candidates: candidates, now: now, policy: policy.lookupPolicy)
        let matching = CacheLookup.matching(request, from: candidates)
        storage.withLockedValue { $0.cache.matching = matching }
        monitorCacheLookup(decision)
        if policy == .cachedThenFresh, cachedThenFresh(decision, cache: cache, headers: headers) { return false }
        switch decision {
        case .fresh(let entry, let age, let omitBody):
            cache.record(.hit)
            finishFromCache(.success(answer(entry, age: age, omitBody: omitBody, outcome: .hit, requestHeaders: headers)))
            return true
        case .stale(let entry, let age, let revalidateInBackground, let omitBody):
            cache.record(.stale)
            if revalidateInBackground { revalidate(url: url, headers: headers) }
            finishFromCache(.success(answer(entry, age: age, omitBody: omitBody, outcome: .stale, requestHeaders: headers)))
            return true
        case .revalidate(let entry, let conditionalHeaders):
            addValidators(conditionalHeaders, for: entry)
            return false
        case .miss:
            // A forced reload reuses nothing stored.
            if policy != .reloadIgnoringCache { askForMissingPart(of: matching, requestHeaders: headers) }
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

    /// Downloads to files and streamed bodies bypass the cache: a stored body is never buffered whole to
    /// serve them, and theirs is never held in the memory tier.
    var isExclusiveTransfer: Bool { storage.withLockedValue { $0.transfer.isExclusive } }

    /// Keeps `entry` for the answer and adds the cache's validators to the request, unless the
    /// application made the request conditional itself: its condition goes to the origin unchanged
    /// (RFC 9111 §4.3.2), never replaced by the cache's.
    private func addValidators(_ conditionalHeaders: HTTPFields, for entry: CachedResponseEntry) {
        storage.withLockedValue { storage in
            storage.cache.entry = entry
            guard !CacheConditions.isConditional(storage.headers), !conditionalHeaders.isEmpty else { return }
            for field in conditionalHeaders { storage.headers.append(field) }
            storage.cache.addedValidators = true
        }
    }

    /// A plain GET for which a partial response is stored: ask only for the bytes it lacks (RFC 9111
    /// §3.4), with `If-Range` so that a changed representation comes back whole.
    private func askForMissingPart(of matching: [CachedResponseEntry], requestHeaders: HTTPFields) {
        guard method == .get, !CachePartialContent.hasRange(requestHeaders), !CacheConditions.isConditional(requestHeaders),
            let partial = matching.filter({ $0.span != nil }).max(by: { $0.body.count < $1.body.count }),
            let fields = CachePartialContent.completionRequest(for: partial)
        else { return }
        storage.withLockedValue { storage in
            storage.cache.partial = partial
            for field in fields { storage.headers.append(field) }
        }
    }

    /// Whether the application itself made the request conditional (the cache's own validators do not count).
    var isConditionalByCaller: Bool {
        storage.withLockedValue { !$0.cache.addedValidators && CacheConditions.isConditional($0.headers) }
    }

    /// "Cached now, fresh later": deliver what is stored, then ask the network (conditionally).
    /// Returns whether a stored response was delivered.
    private func cachedThenFresh(_ decision: CacheLookupDecision, cache: ResponseCache, headers: HTTPFields) -> Bool {
        switch decision {
        case .fresh(let entry, let age, let omitBody), .stale(let entry, let age, _, let omitBody):
            let outcome: CacheOutcome = if case .fresh = decision { .hit } else { .stale }
            cache.record(outcome)
            deliverCached(answer(entry, age: age, omitBody: omitBody, outcome: outcome, requestHeaders: headers))
            storage.withLockedValue { $0.cache.deliveredCached = true }
            addValidators(CacheRevalidation.conditionalHeaders(for: entry), for: entry)
            return true
        case .revalidate, .miss, .unsatisfiable:
            return false
        }
    }

    /// Stores, merges or invalidates after the network answered; may answer from the cache instead
    /// when the network failed (stale-if-error, `fallsBackToCacheOnError`, disconnected).
    func applyCache(to result: Result<NetworkResponse, NetworkError>) -> Result<NetworkResponse, NetworkError> {
        guard let cache = context.configuration.cache, let url = requestURL, !isExclusiveTransfer else { return result }
        let now = cache.now()
        let (state, headers) = storage.withLockedValue { ($0.cache, $0.sentHeaders ?? $0.headers) }
        let requestTime = state.requestTime ?? now
        let names = sensitiveNames
        switch result {
        case .success(var response):
            if !CacheInvalidation.isSafe(method) {
                cache.invalidate(CacheInvalidation.invalidatedKeys(
                    method: method, requestURL: url, status: response.status, responseHeaders: response.headers))
                storeForContentLocation(response, requestHeaders: headers, requestTime: requestTime, now: now, names: names, in: cache)
                response.cacheOutcome = .miss
                return .success(response)
            }
            if response.statusCode == 304, !state.matching.isEmpty || state.entry != nil {
                return .success(notModified(response, state: state, requestTime: requestTime, now: now, in: cache))
            }
            if let partial = state.partial, response.statusCode == 206 {
                return completed(partial, with: response, requestHeaders: headers, requestTime: requestTime, now: now, names: names, in: cache)
            }
            if [500, 502, 503, 504].contains(response.statusCode),
                let stale = fallback(state, headers: headers, failure: .error, now: now, cache: cache)
            {
                return .success(stale)
            }
            switch CacheStorability.verdict(requestMethod: method, requestHeaders: headers, status: response.status, responseHeaders: response.headers) {
            case .storable where response.statusCode == 206
                && CachePartialContent.storableSpan(status: response.status, headers: response.headers, bodyCount: response.body.count) == nil:
                context.configuration.logger.debug("courier response not stored", metadata: [
                    "courier-url": "\(response.url.redactedForLogs)", "courier-reason": "206 body does not match its Content-Range",
                ])
            case .storable where state.credentialsUndeclared:
                context.configuration.logger.debug("courier response not stored", metadata: [
                    "courier-url": "\(response.url.redactedForLogs)",
                    "courier-reason": "the request carried credentials no interceptor declared (RequestInterceptor.cacheCredentials)",
                ])
            case .storable:
                let new = entry(for: response, requestHeaders: headers, requestTime: requestTime, now: now, names: names)
                if let stored = partialToStore(new, matching: state.matching) { cache.store(stored) }
            case .notStorable(let reason):
                context.configuration.logger.debug("courier response not stored", metadata: [
                    "courier-url": "\(response.url.redactedForLogs)", "courier-reason": "\(reason)",
                ])
            }
            cache.record(.miss)
            response.cacheOutcome = .miss
            return .success(response)
        case .failure(let error):
            guard error.code != .cancelled else { return result }
            let failure: CacheStaleServing.Failure = [.notConnected, .cannotConnect].contains(error.code) ? .disconnected : .error
            guard let stale = fallback(state, headers: headers, failure: failure, now: now, cache: cache) else { return result }
            return .success(stale)
        }
    }

    /// A 304 from the origin (RFC 9111 §4.3.3, §4.3.4): the stored responses its validator selects are
    /// freshened, never the others. An application that made the request conditional itself gets the
    /// 304; otherwise the cache's validated response is the answer. A 304 that selects nothing the
    /// cache asked about is passed on as it came.
    private func notModified(
        _ response: NetworkResponse, state: CacheState, requestTime: Date, now: Date, in cache: ResponseCache
    ) -> NetworkResponse {
        let candidates = state.matching.isEmpty ? state.entry.map { [$0] } ?? [] : state.matching
        var selected = CacheRevalidation.selectStoredForNotModified(candidates, notModified: response.headers)
        // A 304 may carry no validator at all (RFC 9110 §15.4.5): it answers the cache's own conditions,
        // so it is about the entry they came from.
        if selected.isEmpty, state.addedValidators, let entry = state.entry,
            response.headers[.eTag] == nil, response.headers[.lastModified] == nil,
            let index = candidates.firstIndex(of: entry)
        {
            selected = [index]
        }
        var served: CachedResponseEntry?
        for index in selected {
            let merged = CacheRevalidation.merge(stored: candidates[index], notModified: response.headers, requestTime: requestTime, responseTime: now)
            cache.store(merged)
            if candidates[index] == state.entry || served == nil { served = merged }
        }
        var passedOn = response
        passedOn.cacheOutcome = selected.isEmpty ? .miss : .revalidated
        if !selected.isEmpty { cache.record(.revalidated) }
        guard state.addedValidators, let entry = state.entry else { return passedOn }
        guard let served, selected.contains(where: { candidates[$0] == entry }) else {
            // The server said "not modified" to the cache's conditions but named another validator: the
            // entry is not updated with it (§4.3.4), but the caller, who never asked for a 304, gets the
            // stored response the conditions came from.
            return cachedResponse(entry, age: age(of: entry, now: now), omitBody: method == .head, outcome: .revalidated)
        }
        return cachedResponse(served, age: age(of: served, now: now), omitBody: method == .head, outcome: .revalidated)
    }

    /// What to store for a new response: a 206 is combined with the stored part of the same variant
    /// when they share a strong validator (RFC 9111 §3.4); a 206 never replaces a complete response
    /// with that validator. Anything else is stored as it is.
    private func partialToStore(_ new: CachedResponseEntry, matching: [CachedResponseEntry]) -> CachedResponseEntry? {
        guard new.span != nil,
            let existing = matching.first(where: {
                $0.varySelectedHeaders == new.varySelectedHeaders && $0.credentialPartition == new.credentialPartition
            })
        else { return new }
        if let combined = CachePartialContent.combine(existing, with: new) { return combined }
        let keepsComplete = existing.span == nil && CachePartialContent.sameStrongValidator(existing.headers, new.headers)
        return keepsComplete ? nil : new
    }

    /// The answer to a plain GET whose missing bytes were asked for: the stored part and the origin's
    /// 206 combined into the complete 200 response (stored when it may be). A 206 that does not
    /// complete the stored part fails the operation with ``NetworkError/Code/invalidResponse`` and the
    /// stored part is forgotten, so the next request asks for everything.
    private func completed(
        _ partial: CachedResponseEntry, with response: NetworkResponse, requestHeaders: HTTPFields,
        requestTime: Date, now: Date, names: Set<String>, in cache: ResponseCache
    ) -> Result<NetworkResponse, NetworkError> {
        let rest = entry(for: response, requestHeaders: requestHeaders, requestTime: requestTime, now: now, names: names)
        guard let combined = CachePartialContent.combine(partial, with: rest), combined.span == nil else {
            if let key = partial.cacheKey { cache.invalidate([key]) }
            return .failure(NetworkError(
                .invalidResponse, "the server's partial response (\(response.headers[.contentRange] ?? "no Content-Range")) does not complete the stored part",
                url: response.url.absoluteString, response: response))
        }
        if case .storable = CacheStorability.verdict(requestMethod: method, requestHeaders: requestHeaders, status: .ok, responseHeaders: combined.headers) {
            if !storage.withLockedValue({ $0.cache.credentialsUndeclared }) { cache.store(combined) }
        }
        cache.record(.miss)
        var whole = NetworkResponse(status: .ok, headers: combined.headers, body: combined.body, url: response.url, originalURL: response.originalURL)
        whole.cacheOutcome = .miss
        return .success(whole)
    }

    /// The entry to store for a response, memory-only when a credential chose its variant
    /// (`Vary: X-Auth-Token`).
    private func entry(
        for response: NetworkResponse, requestHeaders: HTTPFields, requestTime: Date, now: Date, names: Set<String>
    ) -> CachedResponseEntry {
        var entry = CachedResponseEntry.storing(
            url: response.url, requestHeaders: requestHeaders, status: response.status, responseHeaders: response.headers,
            body: response.body, requestTime: requestTime, responseTime: now,
            credentialPartition: context.configuration.cache?.credentialPartition(
                of: requestHeaders, names: names, user: context.configuration.cachePartitionName?(requestURL ?? response.url)))
        entry.isMemoryOnly = entry.varySelectedHeaders.keys.contains { names.contains($0.lowercased()) }
        return entry
    }

    /// RFC 9111 §4 (optional, taken) with RFC 9110 §9.3.3 and §8.7: a 200 or 203 to a POST whose
    /// `Content-Location` is the POST's own URI is a representation of that resource, and with explicit
    /// freshness answers a later GET of it. Any other Content-Location is not stored (on a shared host
    /// a response could otherwise plant content under another path).
    private func storeForContentLocation(
        _ response: NetworkResponse, requestHeaders: HTTPFields, requestTime: Date, now: Date, names: Set<String>,
        in cache: ResponseCache
    ) {
        guard method == .post, [200, 203].contains(response.statusCode), let location = response.headers[.contentLocation],
            let target = URL(string: location, relativeTo: response.url)?.absoluteURL,
            let targetKey = CacheURLKey.key(for: target), targetKey == requestURL.flatMap({ CacheURLKey.key(for: $0) }),
            CacheFreshness.hasExplicitFreshness(response.headers),
            case .storable = CacheStorability.verdict(requestMethod: .get, requestHeaders: requestHeaders, status: response.status, responseHeaders: response.headers)
        else { return }
        var stored = response
        stored.url = target
        guard !storage.withLockedValue({ $0.cache.credentialsUndeclared }) else { return }
        cache.store(entry(for: stored, requestHeaders: requestHeaders, requestTime: requestTime, now: now, names: names))
    }

    /// The stored response to serve when the network failed, if the rules and the engine allow it
    /// (see `CacheStaleServing`).
    private func fallback(
        _ state: CacheState, headers: HTTPFields, failure: CacheStaleServing.Failure, now: Date, cache: ResponseCache
    ) -> NetworkResponse? {
        guard let entry = state.entry else { return nil }
        let allowance = CacheStaleServing.Allowance(
            onAnyError: context.configuration.fallsBackToCacheOnError,
            whenDisconnected: !state.deliveredCached
                && (state.servesStaleWhenDisconnected ?? context.configuration.servesStaleWhenDisconnected))
        // The application's own request headers decide (the cache's validators are not a request directive).
        guard CacheStaleServing.mayServeAfterFailure(entry, requestHeaders: headers, now: now, failure: failure, allowance: allowance)
        else { return nil }
        cache.record(.stale)
        return answer(entry, age: age(of: entry, now: now), omitBody: method == .head, outcome: .stale, requestHeaders: headers)
    }

    /// A stored response as the answer to this request: a `304 Not Modified` made by the cache when
    /// the application's own condition holds for it (RFC 9111 §4.3.2), else the stored response.
    private func answer(
        _ entry: CachedResponseEntry, age: Int, omitBody: Bool, outcome: CacheOutcome, requestHeaders: HTTPFields
    ) -> NetworkResponse {
        guard isConditionalByCaller, CacheConditions.isNotModified(entry, requestHeaders: requestHeaders) else {
            return cachedResponse(entry, age: age, omitBody: omitBody, outcome: outcome)
        }
        var response = NetworkResponse(
            status: .notModified, headers: CacheConditions.notModifiedHeaders(for: entry, age: age),
            body: Data(), url: entry.url, originalURL: requestURL ?? entry.url, isCachedResponse: true)
        response.cacheOutcome = outcome
        return response
    }

    /// A stored response as served: for the application's `Range` request, the bytes it asked for as
    /// a 206 (RFC 9111 §3.3, RFC 9110 §14.2).
    private func cachedResponse(_ entry: CachedResponseEntry, age: Int, omitBody: Bool, outcome: CacheOutcome) -> NetworkResponse {
        let range = storage.withLockedValue { $0.cache.partial == nil ? CachePartialContent.effectiveRange($0.headers, for: entry) : nil }
        var status = entry.status, headers = entry.headers, body = entry.body
        if let range, let slice = CachePartialContent.slice(entry, range: range) {
            (status, headers, body) = (.partialContent, slice.headers, slice.body)
        }
        var response = NetworkResponse(
            status: status, headers: CacheServedHeaders.headers(stored: headers, age: age),
            body: omitBody ? Data() : body, url: entry.url, originalURL: requestURL ?? entry.url, isCachedResponse: true)
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
}
