import DequeModule

/// The speed of a transfer and the time it has left: a pure value fed with samples, time passed in.
///
/// The rate is a moving average over the last ``window`` (2 seconds by default): the bytes that moved
/// since the newest sample at or before `now - window` (or since the first sample, early on), divided
/// by the time since. So it follows a change of speed within the window, does not jump with each chunk,
/// and falls towards zero when the transfer stalls (ask with a later `now` and no new samples).
///
/// ```swift
/// var rate = TransferRate()
/// rate.add(0, at: start)                       // the transfer begins
/// rate.add(chunk.readableBytes, at: .now)      // for each chunk
/// let progress = TransferProgress(
///     completedBytes: done, totalBytes: total,
///     bytesPerSecond: rate.bytesPerSecond(at: .now),
///     estimatedTimeRemaining: rate.estimatedTimeRemaining(remainingBytes: total - done, at: .now))
/// ```
struct TransferRate: Sendable {
    /// How far back the average looks.
    let window: Duration
    /// (time, bytes so far) after each sample, oldest first; one sample at or before the window's start
    /// is kept as the average's base.
    private var samples: Deque<(time: ContinuousClock.Instant, total: Int64)> = []
    /// All bytes added so far.
    private(set) var totalBytes: Int64 = 0

    /// Creates an empty rate.
    /// - Parameter window: How far back the average looks; 2 seconds by default.
    init(window: Duration = .seconds(2)) {
        precondition(window > .zero, "the window must be positive")
        self.window = window
    }

    /// Records that `bytes` moved at `now`. Add a sample of 0 bytes when the transfer begins, so that
    /// the first chunk's bytes are counted over the time they took.
    /// - Parameters:
    ///   - bytes: Bytes moved since the previous sample.
    ///   - now: When; samples come in time order (an earlier time counts as the latest one).
    mutating func add(_ bytes: Int, at now: ContinuousClock.Instant) {
        totalBytes += Int64(max(0, bytes))
        let time = samples.last.map { max($0.time, now) } ?? now
        // A small transfer takes two samples (its start and its one report): room for a few at once, not
        // a storage per sample while the deque grows.
        if samples.isEmpty { samples.reserveCapacity(4) }
        samples.append((time, totalBytes))
        // Keep exactly one sample at or before the window's start.
        let start = time - window
        while samples.count >= 2, samples[1].time <= start { samples.removeFirst() }
    }

    /// The average speed over the window ending at `now`.
    /// - Parameter now: The current time.
    /// - Returns: Bytes per second, or `nil` before two samples at different times.
    func bytesPerSecond(at now: ContinuousClock.Instant) -> Double? {
        guard samples.count >= 2, let newest = samples.last else { return nil }
        let end = max(now, newest.time)
        let start = end - window
        // The newest sample at or before the window's start, else the oldest one.
        var base = samples[0]
        for sample in samples.dropFirst() {
            guard sample.time <= start else { break }   // samples are in time order
            base = sample
        }
        let elapsed = (end - base.time).seconds
        guard elapsed > 0 else { return nil }
        return Double(newest.total - base.total) / elapsed
    }

    /// The time the rest of the transfer should take at the current speed.
    /// - Parameters:
    ///   - remainingBytes: Bytes still to move (the total less what is done).
    ///   - now: The current time.
    /// - Returns: The estimate; `.zero` when nothing remains; `nil` when the speed is unknown or zero.
    func estimatedTimeRemaining(remainingBytes: Int64, at now: ContinuousClock.Instant) -> Duration? {
        guard remainingBytes > 0 else { return .zero }
        guard let rate = bytesPerSecond(at: now), rate > 0 else { return nil }
        return .seconds(Double(remainingBytes) / rate)
    }

    /// The time the rest of a transfer of `totalBytes` should take, counting the bytes added so far.
    /// - Parameters:
    ///   - totalBytes: The whole transfer's size, when known.
    ///   - now: The current time.
    /// - Returns: The estimate, or `nil` when the total or the speed is unknown.
    func estimatedTimeRemaining(totalBytes total: Int64?, at now: ContinuousClock.Instant) -> Duration? {
        guard let total else { return nil }
        return estimatedTimeRemaining(remainingBytes: total - totalBytes, at: now)
    }
}
