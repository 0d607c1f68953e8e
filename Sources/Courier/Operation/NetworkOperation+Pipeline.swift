extension NetworkOperation {
    /// Adds interceptors of this operation's own; they run after the engine's
    /// (``NetworkEngine/Configuration/interceptors``), in the order added. Ignored once the operation
    /// is enqueued.
    ///
    /// An operation with interceptors of its own never shares a request with identical operations
    /// (coalescing): its interceptors might change the request, or retry it, differently.
    /// ```swift
    /// let op = engine.operation(path: "/upload", method: .put)
    ///     .intercepted(by: RetryPolicy(maximumAttempts: 5))
    /// ```
    /// - Parameter interceptors: The interceptors to add.
    /// - Returns: The operation, for chaining.
    @discardableResult
    public func intercepted(by interceptors: any RequestInterceptor...) -> Self {
        storage.withLockedValue { storage in
            guard storage.machine.state == .ready else { return }
            storage.interceptors += interceptors
        }
        return self
    }

    /// Whether the operation has interceptors of its own.
    var hasOwnInterceptors: Bool { storage.withLockedValue { !$0.interceptors.isEmpty } }
}
