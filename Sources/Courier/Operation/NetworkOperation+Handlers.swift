extension NetworkOperation {
    /// Adds a handler called with the response when the operation succeeds.
    ///
    /// Attached after success, it is called at once. Each handler is called exactly once.
    /// - Parameter handler: The handler, called on the engine's callback queue.
    /// - Returns: The operation, for chaining.
    @discardableResult
    public func onCompletion(_ handler: @escaping @Sendable (NetworkResponse) -> Void) -> Self {
        storage.withLockedValue { storage in
            switch storage.machine.outcome {
            case .success(let response)?:
                // Dispatched now: a `response()` awaited after this hops through the callback queue too,
                // so it returns after this handler ran.
                storage.hasHadHandlers = true
                context.configuration.callbackQueue.async { handler(response) }
            case .failure?: break
            case nil: storage.handlers.completion.append(handler)
            }
        }
        return self
    }

    /// Adds a handler called with the error when the operation fails or is cancelled.
    ///
    /// Attached after a failure, it is called at once. Each handler is called exactly once.
    /// - Parameter handler: The handler, called on the engine's callback queue.
    /// - Returns: The operation, for chaining.
    @discardableResult
    public func onError(_ handler: @escaping @Sendable (NetworkError) -> Void) -> Self {
        storage.withLockedValue { storage in
            switch storage.machine.outcome {
            case .failure(let error)?:
                storage.hasHadHandlers = true
                context.configuration.callbackQueue.async { handler(error) }
            case .success?: break
            case nil: storage.handlers.error.append(handler)
            }
        }
        return self
    }

    /// Adds a handler called as the request body is sent.
    /// - Parameter handler: The handler, called on the engine's callback queue.
    /// - Returns: The operation, for chaining.
    @discardableResult
    public func onUploadProgress(_ handler: @escaping @Sendable (TransferProgress) -> Void) -> Self {
        storage.withLockedValue { if $0.machine.outcome == nil { $0.handlers.uploadProgress.append(handler) } }
        return self
    }

    /// Adds a handler called as the response body arrives: bytes always, a fraction when the length is known.
    /// - Parameter handler: The handler, called on the engine's callback queue.
    /// - Returns: The operation, for chaining.
    @discardableResult
    public func onDownloadProgress(_ handler: @escaping @Sendable (TransferProgress) -> Void) -> Self {
        storage.withLockedValue { if $0.machine.outcome == nil { $0.handlers.downloadProgress.append(handler) } }
        return self
    }

    /// Adds a handler called with each new state: `waiting`, `executing`, `frozen` (freezable operations), `finished`.
    /// - Parameter handler: The handler, called on the engine's callback queue.
    /// - Returns: The operation, for chaining.
    @discardableResult
    public func onStateChange(_ handler: @escaping @Sendable (State) -> Void) -> Self {
        storage.withLockedValue { if $0.machine.outcome == nil { $0.handlers.stateChange.append(handler) } }
        return self
    }

    /// Adds a handler called with each interim (`1xx`) response that arrives before the final one
    /// (`100 Continue`, `103 Early Hints`), in order. An interim response is never the operation's
    /// response. Attach it before enqueueing: the operation then runs on a connection of its own (the
    /// pooled client hides interim responses) and is not coalesced with identical requests. Not yet for
    /// a streamed request body (a file, a multipart form, a stream): such a request goes through the
    /// pooled client and its interim responses are not reported.
    /// - Parameter handler: The handler, called on the engine's callback queue.
    /// - Returns: The operation, for chaining.
    @discardableResult
    public func onInformationalResponse(_ handler: @escaping @Sendable (InformationalResponse) -> Void) -> Self {
        storage.withLockedValue { storage in
            guard storage.machine.state == .ready else { return }
            storage.handlers.informational.append(handler)
            storage.allowsCoalescing = false
        }
        return self
    }

    /// Makes this operation wait until `dependency` has finished (whatever its outcome).
    ///
    /// Dependencies may be in any queue. A dependency that would make a cycle is not added.
    /// Ignored once the operation is enqueued.
    /// - Parameter dependency: The operation to wait for.
    public func addDependency(_ dependency: NetworkOperation) {
        guard dependency !== self, !dependency.dependsOn(self) else { return }
        storage.withLockedValue { storage in
            if storage.machine.state == .ready { storage.dependencies.append(dependency) }
        }
    }

    /// The operations this one waits for.
    public var dependencies: [NetworkOperation] { storage.withLockedValue { $0.dependencies } }

    /// Whether `other` is among this operation's dependencies, directly or not.
    private func dependsOn(_ other: NetworkOperation) -> Bool {
        var seen: Set<ObjectIdentifier> = []
        var stack = dependencies
        while let next = stack.popLast() {
            if next === other { return true }
            if seen.insert(ObjectIdentifier(next)).inserted { stack.append(contentsOf: next.dependencies) }
        }
        return false
    }
}
