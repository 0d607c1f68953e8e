import Foundation
import HTTPTypes

// Freezing: an operation that cannot be sent goes to its engine's durable outbox and is sent again
// when the host can be reached (MKNetworkKit's freezing, done so nothing is lost or silently sent
// twice). The outbox itself is in Outbox/; this file is the operation's side.
extension NetworkOperation {
    /// Whether the operation goes to its engine's outbox when it cannot be sent (host unreachable when it
    /// is enqueued, or a connection-level failure: cannot connect, connection lost, no response in time),
    /// instead of failing. Any method may be freezable. Set before enqueueing.
    ///
    /// A freezable operation carries an `Idempotency-Key` header from its first attempt on (one you set
    /// is kept), so a server can drop duplicates. Its handlers hear ``onFrozen(_:)`` when it is
    /// committed to the outbox, then its outcome when a replay has one; ``NetworkEngine/outboxEvents``
    /// reports every outcome too, also after a restart.
    public var isFreezable: Bool {
        get { storage.withLockedValue { $0.isFreezable } }
        set { storage.withLockedValue { if $0.machine.state == .ready { $0.isFreezable = newValue } } }
    }

    /// How long a non-freezable operation waits for its host to become reachable before failing with
    /// ``NetworkError/Code/notConnected`` (URLSession's `waitsForConnectivity`). `nil` (the default)
    /// fails at once while the host is unreachable. Set before enqueueing.
    public var connectivityTimeout: Duration? {
        get { storage.withLockedValue { $0.connectivityTimeout } }
        set { storage.withLockedValue { if $0.machine.state == .ready { $0.connectivityTimeout = newValue } } }
    }

    /// How long a frozen operation may wait in the outbox before it is given up (dead-lettered: kept,
    /// visible, its handlers told). Its engine's ``OutboxRetry/timeToLive`` by default (7 days); setting
    /// `nil` goes back to that default. Set before enqueueing.
    public var timeToLive: Duration? {
        get { storage.withLockedValue { $0.timeToLive } ?? context.configuration.outboxRetry.timeToLive }
        set { storage.withLockedValue { if $0.machine.state == .ready { $0.timeToLive = newValue } } }
    }

    /// How many attempts that reach the server a frozen operation gets before it is given up
    /// (dead-lettered: kept, visible, its handlers told). Attempts that could not connect, never went
    /// out, or whose frozen body the outbox could not read back (the server got at most part of it, and
    /// the outbox, not the server, failed: only ``timeToLive`` ends those) are not counted. Its engine's ``OutboxRetry/maximumAttempts`` by default (10); setting `nil`
    /// goes back to that default, `Int.max` means no limit. Set before enqueueing.
    public var maximumAttempts: Int? {
        get { storage.withLockedValue { $0.maximumAttempts } ?? context.configuration.outboxRetry.maximumAttempts }
        set { storage.withLockedValue { if $0.machine.state == .ready { $0.maximumAttempts = newValue.map { max(1, $0) } } } }
    }

    /// Which frozen requests this one must wait for. Frozen requests with the same ordering key are
    /// replayed one at a time, in the order they were frozen, and one that keeps failing holds back
    /// the ones behind it; requests with different keys are replayed independently. `nil` (the
    /// default): the host's own order, shared by every frozen request of the host that has no key.
    /// Set before enqueueing.
    ///
    /// Give requests that do not depend on each other their own key, so that one stuck request (a
    /// server that keeps answering 500) does not hold back the rest until it is given up:
    /// ```swift
    /// like.isFreezable = true
    /// like.orderingKey = "likes/\(post.id)"   // independent of comments, of other posts' likes
    /// ```
    public var orderingKey: String? {
        get { storage.withLockedValue { $0.orderingKey } }
        set { storage.withLockedValue { if $0.machine.state == .ready { $0.orderingKey = newValue.flatMap { $0.isEmpty ? nil : $0 } } } }
    }

    /// Whether this is the outbox's replay of a frozen request.
    var isReplay: Bool { storage.withLockedValue { $0.isReplay } }

    /// The operation's row in the outbox, once frozen.
    public var outboxID: String? { storage.withLockedValue { $0.outboxID } }

    /// Adds a handler called when the operation is frozen: its row is committed to the outbox. Not an
    /// error: the outcome comes later, to the completion or error handlers.
    /// - Parameter handler: The handler, called on the engine's callback queue.
    /// - Returns: The operation, for chaining.
    @discardableResult
    public func onFrozen(_ handler: @escaping @Sendable (OutboxEntry) -> Void) -> Self {
        storage.withLockedValue { if $0.machine.outcome == nil { $0.handlers.frozen.append(handler) } }
        return self
    }

    // MARK: Internal

    /// A freezable operation carries its Idempotency-Key from the first attempt on.
    func prepareForFreezing() {
        storage.withLockedValue { storage in
            guard storage.isFreezable, !storage.isReplay else { return }
            if storage.headers[.idempotencyKey] == nil { storage.headers[.idempotencyKey] = UUID().uuidString.lowercased() }
        }
    }

    /// Whether a freezable operation also freezes when its first attempt is answered `503 Service
    /// Unavailable` or `429 Too Many Requests` (an API in maintenance, a rate limit), instead of failing:
    /// it then waits in the outbox like a request that could not be sent, replayed no sooner than the
    /// answer's `Retry-After`. Its engine's ``NetworkEngine/Configuration/freezesWhenServerUnavailable``
    /// by default (off). Set before enqueueing.
    public var freezesWhenServerUnavailable: Bool {
        get { storage.withLockedValue { $0.freezesWhenUnavailable } ?? context.configuration.freezesWhenServerUnavailable }
        set { storage.withLockedValue { if $0.machine.state == .ready { $0.freezesWhenUnavailable = newValue } } }
    }

    /// Whether an answer means "try later" for a freezable operation that freezes on it.
    func shouldFreeze(afterAnswer response: NetworkResponse) -> Bool {
        guard response.statusCode == 503 || response.statusCode == 429, freezesWhenServerUnavailable else { return false }
        return storage.withLockedValue { $0.isFreezable && !$0.isReplay && !$0.machine.isCancellationRequested }
    }

    /// Whether a failed attempt means "could not be sent" for a freezable operation.
    func shouldFreeze(after error: NetworkError) -> Bool {
        guard storage.withLockedValue({ $0.isFreezable && !$0.isReplay && !$0.machine.isCancellationRequested }) else { return false }
        return Self.freezes(after: error)
    }

    /// Whether a failure means "could not be sent" (no connection, the link went away, no answer in time):
    /// the failures that freeze a freezable operation. The one rule: freezing, and the interceptors'
    /// retries that freezing pre-empts (a freezable operation goes to the outbox at once, not after a
    /// ``RetryPolicy``'s backoff).
    static func freezes(after error: NetworkError) -> Bool {
        switch error.code {
        case .cannotConnect, .notConnected, .connectionLost: return true
        case .timeout: return error.response == nil
        default: return false
        }
    }

    /// Writes the operation to the outbox (committed), then tells its handlers. When the outbox cannot
    /// be used, the operation fails with the error that made it freeze (or ``NetworkError/Code/outboxUnavailable``).
    /// A file body, or a form's files, are copied into the outbox first (``OutboxBodyStore``); a body over
    /// ``NetworkEngine/Configuration/maximumFrozenBodySize`` fails it with ``NetworkError/Code/frozenBodyTooLarge``.
    /// The disk work runs on the outbox's I/O queue, never on the caller's thread or the cooperative pool
    /// (the outbox's own queue, ``OutboxLocation/io``: serial, copies included, so requests are committed in
    /// the order they were frozen; another outbox waiting for its server does not hold this one up).
    /// - Parameter retryAfter: Seconds the server asked to wait (`Retry-After`), when it answered.
    func freeze(after error: NetworkError?, retryAfter: Double? = nil) {
        let channel = storage.withLockedValue { storage in
            storage.isFreezing = true
            return storage.transfer.channel
        }
        // A body stream's reader does not wait for a replay (another operation, maybe another launch):
        // its stream ends now; the answer comes to the handlers and the outbox's events.
        channel?.finish(NetworkError(
            .stillFrozen, "the request went to the outbox: its answer will reach onCompletion and outboxEvents, not this body stream",
            url: urlString))
        let io = context.connectivity.outboxLocation?.io ?? OutboxDatabase.io
        io.async { [self] in writeToOutbox(after: error, retryAfter: retryAfter) }
    }

    /// Whether the operation is frozen, or on its way to the outbox: a cancelled waiting task or a
    /// queue-wide cancellation leaves it alone (only ``cancel()`` or a drop removes it).
    var isKept: Bool { storage.withLockedValue { $0.machine.state == .frozen || ($0.isFreezing && $0.machine.outcome == nil) } }

    private func writeToOutbox(after error: NetworkError?, retryAfter: Double?) {
        let connectivity = context.connectivity
        let now = Date().timeIntervalSince1970
        // The operation's own headers: never the provider's credentials, and no sensitive field.
        let (ownHeaders, orderingKey) = storage.withLockedValue { ($0.headers, $0.orderingKey) }
        let (ttl, attempts) = (timeToLive, maximumAttempts)
        // The provider's names count even when nothing was sent yet (frozen at enqueue).
        let providerNames = currentCredentials().map(\.name.canonicalName)
        let headers = SensitiveHeaders.removed(sensitiveNames.union(providerNames), from: ownHeaders)
        guard let url = requestURL else {
            finish(.failure(error ?? NetworkError(.invalidURL, "the request has no URL to freeze", url: urlString)))
            return
        }
        let database: any OutboxStore
        do {
            guard let opened = try connectivity.openOutbox() else {
                finish(.failure(error ?? NetworkError(.outboxUnavailable, "this engine has no outbox (no data directory)", url: urlString)))
                return
            }
            database = opened
        } catch let outboxError {
            finish(.failure(Self.notKept(outboxError, after: error, url: urlString)))
            return
        }
        let id = UUID().uuidString.lowercased()
        let key = headers[.idempotencyKey] ?? UUID().uuidString.lowercased()
        var fields = headers   // the outbox removes credentials as it writes
        fields[.idempotencyKey] = key
        let draft = OutboxRecord(
            id: id, origin: OutboxRecord.origin(of: url), method: method, url: url, headers: fields, body: nil,
            idempotencyKey: key, createdAt: now, expiresAt: ttl.map { now + $0.seconds },
            maximumAttempts: attempts, attempts: error?.response == nil ? 0 : 1, nextAttemptAt: now + (retryAfter ?? 0),
            lastStatus: error?.response?.statusCode, lastError: error?.description, orderingKey: orderingKey,
            pipeline: context.connectivity.pipeline?.identity)
        // The store keeps the body first (a file or a form's files are copied, complete and synced, before the
        // row exists), then commits the row.
        let record: OutboxRecord
        do {
            record = try database.insertFrozen(
                draft, bytes: body, source: bodySource, limit: context.configuration.maximumFrozenBodySize)
        } catch let outboxError {
            finish(.failure(Self.notKept(outboxError, after: error, url: urlString)))
            return
        }
        // Attached before the state changes, so a replay finishing at once finds the operation.
        database.attach(self, to: id)
        let entry = record.entry
        let frozen = storage.withLockedValue { storage in
            guard storage.machine.freeze() else { return false }
            storage.outboxID = id
            storage.frozenEntry = entry
            let handlers = storage.handlers.frozen
            let stateHandlers = storage.handlers.stateChange
            if !handlers.isEmpty || !stateHandlers.isEmpty {
                context.configuration.callbackQueue.async {
                    for handler in stateHandlers { handler(.frozen) }
                    for handler in handlers { handler(entry) }
                }
            }
            for stream in storage.streams.values { stream.yield(.frozen(entry)) }
            emit { monitor, operation in monitor.operation(operation, didFreeze: entry) }
            return true
        }
        guard frozen else {
            // Cancelled while being written: the row must not outlive the operation.
            _ = database.detachOperation(for: id)
            database.drop(id: id)
            finish(.failure(.cancelled(url: urlString)))
            return
        }
        database.publish(.frozen(entry), origin: record.origin)
        connectivity.outboxDidChange()
    }

    /// The request could not be kept: the outbox's failure, not the network's, is what the caller learns
    /// (``NetworkError/Code/outboxUnavailable`` with the outbox's path; for its body,
    /// ``NetworkError/Code/frozenBodyTooLarge`` or ``NetworkError/Code/fileUnavailable``); what made it
    /// freeze is in the message and is the underlying error.
    static func notKept(_ outboxError: NetworkError, after error: NetworkError?, url: String?) -> NetworkError {
        guard let error else {
            var outboxError = outboxError
            outboxError.url = outboxError.url ?? url
            return outboxError
        }
        return NetworkError(
            outboxError.code, "the request was not kept: \(outboxError.message) (it was to be frozen after: \(error.message))",
            url: url, response: error.response, underlying: error)
    }

    /// Cancelled while frozen: its row goes, so it is never sent (nor frozen) again. The outbox finishes
    /// the operation: as cancelled, or with the answer of a replay already on the wire.
    func dropFromOutbox() {
        guard let id = outboxID else {
            finish(.failure(.cancelled(url: urlString)))
            return
        }
        (context.connectivity.outboxLocation?.io ?? OutboxDatabase.io).async { [self] in
            guard let database = context.connectivity.outboxDatabase() else {
                finish(.failure(.cancelled(url: urlString)))
                return
            }
            database.drop(id: id)
        }
    }
}

extension Duration {
    /// The duration in seconds, as a `Double`.
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

extension HTTPField.Name {
    /// `Idempotency-Key` (draft-ietf-httpapi-idempotency-key-header).
    static let idempotencyKey = HTTPField.Name("Idempotency-Key")!
}

extension NetworkOperation {
    /// The request of an outbox row, to send again: never frozen again, never answered from the cache,
    /// never shared with another request. The engine's credential provider adds the credentials. A
    /// frozen file or form is streamed from the outbox's copies, as a live upload would be.
    static func replay(of record: OutboxRecord, context: OperationContext) -> NetworkOperation {
        let database = context.connectivity.outboxDatabase()
        let body: RequestBody?
        if let database {
            body = database.requestBody(of: record)
        } else if record.frozenBody != nil || record.chunkedBodyLength != nil {
            // Never sent without the body it was frozen with.
            body = RequestBody(storage: .invalid(NetworkError(.outboxUnavailable, "the outbox holding the frozen body cannot be opened")), contentType: nil)
        } else {
            body = record.body.map { RequestBody.data($0, contentType: record.headers[.contentType] ?? "application/octet-stream") }
        }
        // Sensitive fields never reach the outbox: a replay takes them from the operation that froze, while
        // it is alive in this process, else from the engine's default headers, and those only for the
        // engine's own origin, as a live operation(url:) gets them (the credential provider adds its own
        // when the replay is sent).
        let names = context.sensitiveNames
        let original = database?.attachedOperation(for: record.id)
        let isEngineOrigin = context.connectivity.origin == OutboxRecord.origin(of: record.url)
        let secrets = SensitiveHeaders.kept(names, from: original?.headers ?? (isEngineOrigin ? context.defaultHeaders : [:]))
        var headers = record.headers
        for name in Set(secrets.map(\.name)) where headers[name] == nil { headers.append(contentsOf: secrets.filter { $0.name == name }) }
        let operation = NetworkOperation(
            method: record.method, url: .success(record.url), urlString: record.url.absoluteString, headers: headers,
            body: body, context: context, inputError: nil)
        operation.storage.withLockedValue { storage in
            storage.isReplay = true
            storage.allowsCoalescing = false
            storage.cache.policy = .reloadIgnoringCache
        }
        return operation
    }
}
