import Foundation
import HTTPTypes

// The operation's side of its conversation with the queue. Every event is applied to the state
// machine under the lock; user handlers are *dispatched* (not called) under the lock, onto the
// engine's serial callback queue, which keeps each operation's events in order without calling
// user code while the lock is held. Internal observers run after the lock is released.
extension NetworkOperation {
    /// Enqueues the operation on its engine's queue; called by ``NetworkEngine/enqueue(_:)``.
    func submit() {
        let (action, dependencies, observers) = storage.withLockedValue { storage in
            // A file or a form is copied into the outbox if it freezes; a one-shot stream cannot be kept,
            // so it is refused rather than frozen without its body.
            let unfreezable = !storage.isFreezable ? nil
                : bodySource?.isReplayable == false
                ? NetworkError(.bodyNotReplayable, "a one-shot stream body cannot be frozen; send it as .data or .file to freeze it", url: urlString)
                : bodySource?.trailers != nil
                ? NetworkError(.bodyNotReplayable, "a body with trailer fields cannot be frozen (they are made when it is sent)", url: urlString)
                : nil
            // A trailer named like a credential would carry it past the cross-origin checks: refused.
            let trailerError = bodySource?.trailers?.refusal(sensitive: context.sensitiveNames)
            let action = storage.machine.enqueue(failingWith: inputError ?? storage.headerError ?? trailerError ?? unfreezable)
            switch action {
            case .submit:
                dispatchStateChange(.waiting, in: storage)
                monitorEnqueue(in: &storage)
                return (action, storage.dependencies, OutcomeNotice.none)
            case .finished:
                monitorEnqueue(in: &storage)
                return (action, [], publishOutcome(&storage))
            case .none:
                return (action, [], .none)
            }
        }
        switch action {
        case .none:
            return
        case .finished:
            notify(observers)
        case .submit:
            let pending = dependencies.filter { !$0.isFinished }
            context.queue.track(self)
            prepareForFreezing()
            // A cache entry that must come from disk is read off this thread; the operation goes on from there.
            switch storedVariantsBeforeLookup(hasPendingDependencies: !pending.isEmpty) {
            case .onDisk(let cache, let url):
                cache.readDisk(for: url) { [self] stored in proceed(dependencies: pending, stored: stored, afterDiskRead: true) }
            case .known(let stored):
                proceed(dependencies: pending, stored: stored)
            case .notLookedUp:
                proceed(dependencies: pending, stored: nil)
            }
        }
    }

    /// After submission: the cache may answer; otherwise reachability decides (queue, outbox, hold, fail).
    private func proceed(dependencies pending: [NetworkOperation], stored: [CachedResponseEntry]?, afterDiskRead: Bool = false) {
        if afterDiskRead && isCancelled {
            // Cancelled while its cache entry was read: nothing else happened to it yet.
            finish(.failure(.cancelled(url: urlString)))
            return
        }
        // A fresh cached answer never enters the queue.
        if consultCache(hasPendingDependencies: !pending.isEmpty, stored: stored) { return }
        switch context.connectivity.admit(self) {
        case .go: enterQueue()
        case .freeze: freeze(after: nil)
        case .fail(let error): finish(applyCache(to: .failure(error)).flatMap(validate))
        case .held: break
        }
    }

    /// Puts a submitted operation into its queue (also when connectivity returns for a held one), with
    /// the dependencies it still waits for: an operation held for connectivity comes back with them.
    func enterQueue() {
        let queue = context.queue
        let pending = storage.withLockedValue { $0.dependencies }.filter { !$0.isFinished }
        queue.enqueue(self, dependencies: Set(pending.map(\.id)))
        // Observed only after enqueueing, so a dependency finishing meanwhile is never missed.
        for dependency in pending {
            let dependencyID = dependency.id
            dependency.whenFinished { [self] _ in
                queue.dependencyFinished(dependencyID, for: id)
                // Ready now: if its host went away meanwhile, it leaves the queue as ready work does.
                context.connectivity.dependenciesMet(self)
            }
        }
        // A cancel that raced with enqueueing found nothing to remove: remove it now.
        if isCancelled { queue.cancel(self) }
    }

    /// The request without its credentials, built on first use (once enqueued, headers no longer change).
    /// Credentials are added by ``requestForSending()``, just before the request goes out.
    func preparedRequest() -> PreparedRequest {
        storage.withLockedValue { storage in
            if let prepared = storage.prepared { return prepared }
            var destination = storage.transfer.destination(
                acceptableStatusCodes: context.configuration.acceptableStatusCodes, queueThrottles: context.queue.throttles)
            destination.maximumFileSize = context.configuration.maximumDownloadSize
            let interceptors = InterceptorChain(
                interceptors: context.pipeline(adding: storage.interceptors), isReplay: storage.isReplay,
                engineOrigin: context.connectivity.origin,
                freezesWhenOffline: storage.isFreezable && !storage.isReplay && context.connectivity.outboxLocation != nil)
            var prepared = makePreparedRequest(
                headers: storage.headers, redirects: storage.redirects, decompression: storage.decompression,
                timeouts: storage.timeouts ?? context.configuration.timeouts, destination: destination,
                reportsInformational: !storage.handlers.informational.isEmpty, interceptors: interceptors)
            prepared.cacheCompletion = storage.cache.partial.flatMap(CachePartialContent.Completion.init(for:))
            storage.prepared = prepared
            return prepared
        }
    }

    /// The engine's credential provider's fields for this request, asked now. The provider is the
    /// app's code: never called under a lock.
    func currentCredentials() -> HTTPFields {
        requestURL.flatMap { url in context.configuration.credentialProvider?(url) } ?? [:]
    }

    /// The request as it goes on the wire now: the prepared request with the credentials of this moment
    /// (a token refreshed while the operation waited is the one sent). The provider's field names join
    /// the engine's sensitive names for this request: dropped on cross-origin redirects, never written
    /// to the outbox, masked in logs.
    func requestForSending() -> PreparedRequest {
        var request = preparedRequest()
        let credentials = currentCredentials()
        guard !credentials.isEmpty else { return request }
        request.headers = request.headers.replacing(with: credentials)
        request.sensitiveNames = context.sensitiveNames(with: credentials)
        return request
    }

    /// Whether the request the operation sent carried credentials (a sensitive field: `Authorization`,
    /// cookies, an API key, an interceptor's declared fields). For an operation the cache answered, whether
    /// it would have.
    package var sentCredentials: Bool {
        storage.withLockedValue { storage in
            guard let headers = storage.sentHeaders, let names = storage.sentSensitiveNames else {
                // Not sent (answered by the cache): judged on what it would send. Interceptors and a
                // credential provider may add credentials; assume they would.
                if context.configuration.credentialProvider != nil || context.configuration.hasPipeline
                    || !storage.interceptors.isEmpty
                {
                    return true
                }
                let lowercased = Set(context.sensitiveNames.map { $0.lowercased() })
                return storage.headers.contains { lowercased.contains($0.name.canonicalName.lowercased()) }
            }
            let lowercased = Set(names.map { $0.lowercased() })
            return headers.contains { lowercased.contains($0.name.canonicalName.lowercased()) }
        }
    }

    /// The header names this operation treats as credentials: the engine's list and the provider's fields.
    var sensitiveNames: Set<String> {
        storage.withLockedValue { $0.sentSensitiveNames } ?? context.sensitiveNames
    }

    private func makePreparedRequest(
        headers: HTTPFields, redirects: RedirectPolicy?, decompression: Decompression?, timeouts: NetworkEngine.Timeouts,
        destination: ResponseDestination, reportsInformational: Bool, interceptors: InterceptorChain
    ) -> PreparedRequest {
        // Each field read from the context's configuration where it is used: a local copy of the whole
        // configuration retains every one of its references, on every request.
        PreparedRequest(
            method: method,
            url: requestURL ?? URL(string: "http://invalid.invalid")!,
            headers: headers,
            body: body,
            bodySource: bodySource,
            options: TransportOptions(
                connectTimeout: timeouts.connect,
                readTimeout: timeouts.read,
                decompression: decompression ?? context.configuration.decompression,
                connection: context.connection),
            redirects: redirects ?? context.configuration.redirects,
            maximumBodySize: context.configuration.maximumResponseBodySize,
            totalTimeout: timeouts.total,
            logger: context.configuration.logger,
            sensitiveNames: context.sensitiveNames,
            reportsInformational: reportsInformational,
            isMonitored: context.monitors != nil,
            destination: destination,
            interceptors: interceptors)
    }

    /// The key identical operations share, or `nil` when this one must run alone.
    func coalescingKey() -> CoalescingKey? {
        // A body streamed to one consumer is not shared; nor is a resumable download (its partial file
        // belongs to its destination) or one with a bandwidth limit of its own. Downloads to files share
        // one transfer with identical downloads: the queue copies the file to the others' destinations.
        // An operation with interceptors of its own runs alone: they might adapt or retry it differently.
        let shares = storage.withLockedValue { storage in
            storage.allowsCoalescing && storage.transfer.channel == nil && !storage.transfer.isResumable && storage.transfer.throttle == nil
                && !storage.transfer.isLongLived
                && storage.interceptors.isEmpty
        }
        guard shares else { return nil }
        let download = downloadDestinations.isEmpty
            ? nil : CoalescingKey.DownloadKind(acceptableStatusCodes: context.configuration.acceptableStatusCodes.sorted())
        return CoalescingKey(request: preparedRequest(), uniqueIdentifier: identity, runner: context.runner, download: download)
    }

    // MARK: Events from the queue

    /// The operation's flight started (or it joined one already running).
    func queueDidStart() {
        storage.withLockedValue { storage in
            if storage.machine.start() { dispatchStateChange(.executing, in: storage) }
            monitorStart(in: &storage)
        }
    }

    func queueDidSendBody(_ progress: TransferProgress) {
        deliver(progress, to: \.uploadProgress, as: Event.uploadProgress) { $0.operation($1, didSendBody: $2) }
    }

    func queueDidReceiveInformational(_ response: InformationalResponse) {
        storage.withLockedValue { storage in
            guard storage.machine.acceptsProgress else { return }
            let handlers = storage.handlers.informational
            if !handlers.isEmpty {
                context.configuration.callbackQueue.async { for handler in handlers { handler(response) } }
            }
            monitorInterim(response, in: &storage)
        }
    }

    func queueDidReceiveBody(_ progress: TransferProgress) {
        deliver(progress, to: \.downloadProgress, as: Event.downloadProgress) { $0.operation($1, didReceiveBody: $2) }
    }

    private func deliver(
        _ progress: TransferProgress,
        to handlers: KeyPath<Handlers, [@Sendable (TransferProgress) -> Void]>,
        as event: (TransferProgress) -> Event,
        monitor: @escaping @Sendable (any EventMonitor, NetworkOperation, TransferProgress) -> Void
    ) {
        storage.withLockedValue { storage in
            guard storage.machine.acceptsProgress else { return }
            let handlers = storage.handlers[keyPath: handlers]
            if !handlers.isEmpty {
                context.configuration.callbackQueue.async { for handler in handlers { handler(progress) } }
            }
            for stream in storage.streams.values { stream.yield(event(progress)) }
            // Checked first: the closure would be allocated for an engine without monitors too.
            if context.monitors != nil { emit(isProgress: true) { monitor($0, $1, progress) } }
        }
    }

    /// The flight ended; `result` is the raw outcome, which this operation validates by its own rules.
    /// A freezable operation whose request got no answer goes to the outbox instead.
    /// - Parameter sent: The request the flight sent (with the credentials it carried), if it went out.
    func queueDidFinish(_ result: Result<NetworkResponse, NetworkError>, sent: PreparedRequest? = nil) {
        queueDidSettle(result, sent: sent).deliver()
    }

    /// ``queueDidFinish(_:sent:)`` in two steps: the outcome is decided now (or the operation freezes),
    /// and set and told when the returned ``PendingOutcome`` is delivered.
    func queueDidSettle(_ result: Result<NetworkResponse, NetworkError>, sent: PreparedRequest? = nil) -> PendingOutcome {
        if let sent {
            // The interceptors' credentials are not in the request the cache sees: their declarations
            // stand for them in its partition, and a request that carried others is not stored.
            let declared = requestURL.map(interceptorCacheCredentials(for:)) ?? [:]
            let known = sent.headers.replacing(with: declared)
            let names = sent.sensitiveNames.union(declared.map(\.name.canonicalName))
            let undeclared = sent.adaptedHeaders.map {
                Self.carriesUndeclaredCredentials(adapted: $0, known: known, names: names)
            } ?? false
            storage.withLockedValue { storage in
                storage.sentHeaders = known
                storage.sentSensitiveNames = names
                // Only a change is written: the cache state takes memory once set (most requests leave it unset).
                if undeclared != storage.cache.credentialsUndeclared { storage.cache.credentialsUndeclared = undeclared }
            }
        }
        switch result {
        case .failure(let error):
            if shouldFreeze(after: error) {
                freeze(after: error)
                return PendingOutcome(operation: nil, result: nil)
            }
        case .success(let response):
            if !isReplay { context.connectivity.hostAnswered() }
            if shouldFreeze(afterAnswer: response) {
                freeze(after: NetworkError(
                    .unacceptableStatus, "the server answered \(response.statusCode) \(response.status.reasonPhrase)",
                    url: urlString, response: response), retryAfter: OutboxReplayer.retryAfter(response))
                return PendingOutcome(operation: nil, result: nil)
            }
        }
        return PendingOutcome(operation: self, result: applyCache(to: result).flatMap(validate))
    }

    /// A stored response delivered ahead of the network's answer: completion handlers hear it and stay
    /// for the final answer; streams see `.cached`.
    func deliverCached(_ response: NetworkResponse) {
        storage.withLockedValue { storage in
            guard storage.machine.state != .finished else { return }
            let handlers = storage.handlers.completion
            if !handlers.isEmpty {
                context.configuration.callbackQueue.async { for handler in handlers { handler(response) } }
            }
            for stream in storage.streams.values { stream.yield(.cached(response)) }
        }
    }

    /// An answer from the cache, for an operation that never entered the queue.
    func finishFromCache(_ result: Result<NetworkResponse, NetworkError>) {
        finish(result.flatMap(validate))
    }

    /// The queue removed the operation after ``cancel()``, or because its engine took it out.
    func queueDidCancel() {
        let exit = storage.withLockedValue { storage in
            defer { storage.queueExit = nil }
            return storage.machine.isCancellationRequested ? nil : storage.queueExit
        }
        switch exit {
        case .fail(let error)?: finish(applyCache(to: .failure(error)).flatMap(validate))
        case .freeze?: freeze(after: nil)
        case .hold?: context.connectivity.hold(self)
        case nil: finish(.failure(.cancelled(url: urlString)))
        }
    }

    /// Applies the engine's acceptable status codes and content types.
    func validate(_ response: NetworkResponse) -> Result<NetworkResponse, NetworkError> {
        // A 304 answers a request the application made conditional itself: it is what it asked for.
        let answersCondition = response.statusCode == 304 && isConditionalByCaller
        guard answersCondition || context.configuration.acceptableStatusCodes.contains(response.statusCode) else {
            return .failure(NetworkError(
                .unacceptableStatus, "the server answered \(response.statusCode) \(response.status.reasonPhrase)",
                url: response.url.absoluteString, response: response))
        }
        if let acceptable = context.configuration.acceptableContentTypes, !response.body.isEmpty {
            let mediaType = response.mediaType ?? ""
            let matches = acceptable.contains { pattern in
                let pattern = pattern.lowercased()
                if pattern == "*/*" || pattern == mediaType { return true }
                return pattern.hasSuffix("/*") && mediaType.hasPrefix(pattern.dropLast())
            }
            if !matches {
                return .failure(NetworkError(
                    .unacceptableContentType, "the response is \(mediaType.isEmpty ? "of no declared type" : mediaType), not one of \(acceptable.sorted())",
                    url: response.url.absoluteString, response: response))
            }
        }
        return .success(response)
    }
}
