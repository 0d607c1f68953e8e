/// When the moments of an operation's life happened, on the continuous clock
/// (``EventMonitor/operation(_:didFinish:metrics:)``).
///
/// The durations are measured between these instants, so they never go backwards:
/// ``queuedDuration`` + the time from start to finish = ``totalDuration``, and ``timeToFirstByte`` is at
/// most the time from start to finish.
public struct OperationMetrics: Sendable, Hashable {
    /// When the operation was enqueued; `nil` for one cancelled before it was.
    public var enqueuedAt: ContinuousClock.Instant?
    /// When it started executing (its request, or one it shares, was given a slot); `nil` when it never
    /// did (a cache hit, a failure before it ran, a cancellation while it waited).
    public var startedAt: ContinuousClock.Instant?
    /// When the head of its first response arrived (interim responses included); `nil` without one.
    public var firstResponseAt: ContinuousClock.Instant?
    /// When it had its outcome.
    public var finishedAt: ContinuousClock.Instant
    /// How many attempts it made: 1, plus one per retry; 0 when no request was sent.
    public var attempts: Int

    /// Creates metrics (for testing a monitor).
    /// - Parameters:
    ///   - enqueuedAt: When the operation was enqueued.
    ///   - startedAt: When it started executing.
    ///   - firstResponseAt: When its first response head arrived.
    ///   - finishedAt: When it finished.
    ///   - attempts: How many attempts it made.
    public init(
        enqueuedAt: ContinuousClock.Instant?, startedAt: ContinuousClock.Instant?, firstResponseAt: ContinuousClock.Instant?,
        finishedAt: ContinuousClock.Instant, attempts: Int
    ) {
        self.enqueuedAt = enqueuedAt
        self.startedAt = startedAt
        self.firstResponseAt = firstResponseAt
        self.finishedAt = finishedAt
        self.attempts = attempts
    }

    /// How long it waited in the queue (for its dependencies, its cache entry, connectivity and a free
    /// slot) before it started; `nil` when it never started.
    public var queuedDuration: Duration? {
        guard let enqueuedAt, let startedAt else { return nil }
        return startedAt - enqueuedAt
    }

    /// From start to the first response head (retries' waits included when the first attempts got no
    /// answer); `nil` when no response came from the network.
    public var timeToFirstByte: Duration? {
        guard let startedAt, let firstResponseAt else { return nil }
        return firstResponseAt - startedAt
    }

    /// From enqueueing to the outcome (for a frozen operation, the time in the outbox included); zero for
    /// an operation that was never enqueued.
    public var totalDuration: Duration {
        guard let enqueuedAt else { return .zero }
        return finishedAt - enqueuedAt
    }
}

/// The instants an operation records for its monitors while it runs: a pure value kept in its storage.
struct OperationTimeline: Sendable {
    var enqueuedAt: ContinuousClock.Instant?
    var startedAt: ContinuousClock.Instant?
    var firstResponseAt: ContinuousClock.Instant?
    var attempts = 0

    mutating func enqueued(at now: ContinuousClock.Instant) {
        if enqueuedAt == nil { enqueuedAt = now }
    }

    mutating func started(at now: ContinuousClock.Instant) {
        if startedAt == nil { startedAt = now }
        if attempts == 0 { attempts = 1 }
    }

    /// A head implies a start: an operation that joins a running request may hear its head before its
    /// own start is recorded, and its time to first byte must not go negative.
    mutating func receivedHead(at now: ContinuousClock.Instant) {
        started(at: now)
        if firstResponseAt == nil { firstResponseAt = now }
    }

    /// A retry implies a start too (the same race), so the first attempt is counted.
    mutating func retrying(at now: ContinuousClock.Instant) {
        started(at: now)
        attempts += 1
    }

    func metrics(finishedAt now: ContinuousClock.Instant) -> OperationMetrics {
        OperationMetrics(enqueuedAt: enqueuedAt, startedAt: startedAt, firstResponseAt: firstResponseAt, finishedAt: now, attempts: attempts)
    }
}
