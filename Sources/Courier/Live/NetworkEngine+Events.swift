import Foundation

// Server-sent events: a stream that reconnects, built from the engine's ordinary operations.
extension NetworkEngine {
    /// A server-sent event stream (`text/event-stream`) from a path under the engine's host: an
    /// AsyncSequence of events that reconnects with `Last-Event-ID` when the connection drops, waits while
    /// the host is unreachable, and ends on `204 No Content`. See ``ServerSentEvents`` for the rules.
    ///
    /// ```swift
    /// for try await event in engine.events(path: "/notifications") {
    ///     let note = try event.decode(Notification.self)
    /// }
    /// ```
    /// - Parameters:
    ///   - path: The path below the API path, as for ``operation(path:params:method:body:)``.
    ///   - params: Query parameters.
    ///   - options: Reconnection and limits.
    ///   - configure: Called with each connection's operation before it is enqueued (a header, a
    ///     priority); it must not enqueue it.
    /// - Returns: The stream; iterating it connects.
    public func events(
        path: String, params: [String: ParameterValue] = [:], options: ServerSentEvents.Options = ServerSentEvents.Options(),
        configure: (@Sendable (NetworkOperation) -> Void)? = nil
    ) -> ServerSentEvents {
        events(options: options, configure: configure) { $0.operation(path: path, params: params) }
    }

    /// A server-sent event stream from an absolute URL; see ``events(path:params:options:configure:)``.
    /// - Parameters:
    ///   - url: An absolute http or https URL.
    ///   - params: Query parameters.
    ///   - options: Reconnection and limits.
    ///   - configure: Called with each connection's operation before it is enqueued.
    /// - Returns: The stream; iterating it connects.
    public func events(
        url: String, params: [String: ParameterValue] = [:], options: ServerSentEvents.Options = ServerSentEvents.Options(),
        configure: (@Sendable (NetworkOperation) -> Void)? = nil
    ) -> ServerSentEvents {
        events(options: options, configure: configure) { $0.operation(url: url, params: params) }
    }

    /// The stream whose connections `make` builds, each configured by `configure`.
    private func events(
        options: ServerSentEvents.Options, configure: (@Sendable (NetworkOperation) -> Void)?,
        make: @escaping @Sendable (NetworkEngine) -> NetworkOperation
    ) -> ServerSentEvents {
        ServerSentEvents(engine: self, options: options) { engine in
            let operation = make(engine)
            configure?(operation)
            return operation
        }
    }
}
