// The engine's public face for reachability and its outbox (see EngineConnectivity, Outbox/).
extension NetworkEngine {
    /// Whether the engine's host can be reached now, and over what.
    public var reachabilityStatus: ReachabilityStatus { context.connectivity.reachability.status }

    /// The host's reachability: the status now, then each change (from the engine's ``Configuration/reachability``).
    public var reachabilityUpdates: AsyncStream<ReachabilityStatus> { context.connectivity.reachability.statusUpdates() }

    /// Called on the callback queue each time the engine applies a new reachability status (after the
    /// queue's width has changed for it).
    public var reachabilityChanged: (@Sendable (ReachabilityStatus) -> Void)? {
        get { context.connectivity.reachabilityHandler }
        set { context.connectivity.reachabilityHandler = newValue }
    }

    /// The engine's outbox (``Configuration/outbox``), or `nil` without one. Getting it opens nothing: the
    /// outbox is opened when first read or written (its `async` accessors do that off the caller's thread).
    public var outbox: Outbox? { context.connectivity.outboxLocation.map { Outbox(lazily: $0, logger: context.connectivity.logger) } }

    /// What happens to the frozen requests of this engine's host, from now on: frozen, delivered,
    /// failed permanently, retry scheduled, dead-lettered. Replays after a restart are reported here
    /// too, so the app learns every outcome even when the operation that froze is gone.
    ///
    /// Subscribing opens nothing (the outbox may be on a server that is down).
    public var outboxEvents: AsyncStream<OutboxEvent> {
        guard let location = context.connectivity.outboxLocation, let origin = context.connectivity.origin else {
            return AsyncStream { $0.finish() }
        }
        return OutboxListeners.shared(location.listenersKey).events(origin: origin)
    }

    /// Sends now, in order, the frozen requests of this engine's host, ignoring their retry times (not
    /// reachability). Returns when the replay is idle again (everything sent, the host unreachable, or
    /// an attempt failed and must wait) with what happened meanwhile; ``outboxEvents`` has it too.
    /// - Returns: The outcomes of this flush, in order.
    @discardableResult
    public func flushOutbox() async -> [OutboxEvent] {
        let connectivity = context.connectivity
        // Opening the outbox is disk work: done on its I/O queue, not on the caller's executor.
        let replayer = await onQueue(connectivity.outboxLocation?.io ?? OutboxDatabase.io) { connectivity.replayer(creating: true) }
        return await replayer?.flush() ?? []
    }
}
