/// Turns a transfer's chunks into progress reports: a pure value, time passed in.
///
/// A network read or a body part can be a few kilobytes, so a gigabyte is tens of thousands of chunks.
/// Reporting each one would cost a lock, a dispatch to the callback queue and a rate computation per
/// chunk, far more than the transfer itself, for a screen that redraws sixty times a second. The meter
/// counts every chunk but reports at most once per ``interval``, plus the first chunk and the moment
/// the known total is reached; ``finish(at:)`` gives the last figure if it was not reported yet. The
/// rate and the time left come from a ``TransferRate`` fed at the same pace.
struct ProgressMeter: Sendable {
    /// The shortest time between two reports (50 a second).
    static let interval: Duration = .milliseconds(20)

    /// Bytes done so far (a resumed download starts at the bytes already on disk).
    private(set) var completed: Int64
    /// The total, when known.
    let total: Int64?
    private var rate = TransferRate()
    /// Bytes counted since the rate's last sample.
    private var unsampled = 0
    /// When the transfer began; becomes the rate's first sample at the first report.
    private let start: ContinuousClock.Instant
    private var lastReport: ContinuousClock.Instant?
    /// What was last reported, so ``finish(at:)`` does not repeat it.
    private var reported: Int64?

    /// Starts a meter at `completed` bytes out of `total`.
    init(completed: Int64 = 0, total: Int64?, at now: ContinuousClock.Instant) {
        self.completed = completed
        self.total = total
        start = now
    }

    /// Counts `bytes` that moved at `now`.
    /// - Returns: The progress to report, or `nil` when the last report is too recent.
    mutating func add(_ bytes: Int, at now: ContinuousClock.Instant) -> TransferProgress? {
        completed += Int64(bytes)
        unsampled += bytes
        let reachedTotal = total.map { completed >= $0 } ?? false
        if let lastReport, !reachedTotal, now - lastReport < Self.interval { return nil }
        return report(at: now)
    }

    /// The last figure, when it was not reported yet (or nothing was reported at all).
    mutating func finish(at now: ContinuousClock.Instant) -> TransferProgress? {
        reported == completed ? nil : report(at: now)
    }

    private mutating func report(at now: ContinuousClock.Instant) -> TransferProgress {
        if lastReport == nil { rate.add(0, at: start) }
        rate.add(unsampled, at: now)
        unsampled = 0
        lastReport = now
        reported = completed
        return TransferProgress(
            completedBytes: completed, totalBytes: total, bytesPerSecond: rate.bytesPerSecond(at: now),
            estimatedTimeRemaining: total.flatMap { rate.estimatedTimeRemaining(remainingBytes: max(0, $0 - completed), at: now) })
    }
}
