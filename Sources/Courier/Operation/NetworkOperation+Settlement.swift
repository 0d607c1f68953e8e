extension NetworkOperation {
    /// What ``NetworkOperation/deliveredOrFrozen()`` found first.
    public enum Settlement: Sendable {
        /// The request was sent and answered acceptably.
        case delivered(NetworkResponse)
        /// The request could not be sent and is kept in its engine's outbox (committed): it will be sent
        /// when the host is back, by this process or a later one.
        case frozen(OutboxEntry)
    }

    /// Waits until the request is either delivered or safely frozen, whichever comes first, enqueueing it
    /// first if it is not yet enqueued. For a script or a command that must exit as soon as what the user
    /// asked for is either done or kept (``response()`` waits for the delivery, however long the host
    /// stays away). Cancelling the waiting task cancels the operation unless it is already frozen, as for
    /// ``response()``.
    /// ```swift
    /// let note = engine.operation(path: "notes", method: .post, body: .text("hello"))
    /// note.isFreezable = true
    /// switch try await note.deliveredOrFrozen() {
    /// case .delivered(let response): print("sent:", response.statusCode)
    /// case .frozen(let entry): print("kept; will send later:", entry.id)
    /// }
    /// ```
    /// - Returns: How the request settled.
    /// - Throws: ``NetworkError``: the operation's failure (as ``response()`` throws it).
    public func deliveredOrFrozen() async throws(NetworkError) -> Settlement {
        // Subscribed before it can freeze or finish: every later event is seen.
        let events = self.events
        if let entry = storage.withLockedValue({ $0.frozenEntry }), state == .frozen { return .frozen(entry) }
        let settlement: Result<Settlement, NetworkError>? = await withTaskCancellationHandler {
            for await event in events {
                switch event {
                case .frozen(let entry): return .success(.frozen(entry))
                case .response(let response): return .success(.delivered(response))
                case .failure(let error): return .failure(error)
                case .uploadProgress, .downloadProgress, .cached: continue
                }
            }
            return nil
        } onCancel: {
            if !isKept { cancel(discardingPartialDownload: false) }
        }
        if let settlement { return try settlement.get() }
        // The sequence ended without an outcome (the task was cancelled): what the operation says now.
        if let entry = storage.withLockedValue({ $0.frozenEntry }) { return .frozen(entry) }
        return try .delivered(await response())
    }
}
