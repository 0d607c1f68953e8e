/// A bandwidth limit as a token bucket: a pure value, with the time passed in.
///
/// Tokens are bytes. The bucket fills at ``bytesPerSecond`` up to ``capacity`` (the largest burst);
/// sending takes tokens, and a send larger than what is in the bucket runs it into debt, which the
/// returned wait pays back. Over any long transfer the average is the rate, whatever the chunk sizes:
/// 10 MiB at 1 MiB/s waits about 10 s in total.
///
/// The owner (a transfer's reader or writer) asks before each chunk and waits before it moves the
/// chunk on (so that a download stops reading the socket and TCP's window closes on the server):
/// ```swift
/// var bucket = TokenBucket(bytesPerSecond: 1 << 20)
/// let wait = bucket.take(chunk.readableBytes, at: .now)
/// if wait > .zero { try await Task.sleep(for: wait) }
/// ```
struct TokenBucket: Sendable {
    /// The sustained rate, in bytes per second.
    let bytesPerSecond: Double
    /// The most bytes that may go at once after an idle spell.
    let capacity: Double
    /// Bytes that may go now; negative when a send ran the bucket into debt.
    private var tokens: Double
    private var lastRefill: ContinuousClock.Instant?

    /// Creates a full bucket.
    /// - Parameters:
    ///   - bytesPerSecond: The limit; must be positive.
    ///   - capacity: The burst, in bytes; a tenth of a second's worth by default (at least 1 byte), so
    ///     that even a low limit (1 KiB/s) is not exceeded by a burst of many seconds' worth. A chunk
    ///     larger than the burst still goes at once and runs the bucket into debt, which the next wait
    ///     pays back: chunks are not split.
    init(bytesPerSecond: Int, capacity: Int? = nil) {
        precondition(bytesPerSecond > 0, "a bandwidth limit must be positive")
        self.bytesPerSecond = Double(bytesPerSecond)
        self.capacity = Double(max(1, capacity ?? bytesPerSecond / 10))
        self.tokens = self.capacity
    }

    /// Takes `bytes` from the bucket at `now`.
    /// - Parameters:
    ///   - bytes: The bytes about to be sent or read.
    ///   - now: The current time.
    /// - Returns: How long to wait before those bytes may go (`.zero` when they may go at once).
    mutating func take(_ bytes: Int, at now: ContinuousClock.Instant) -> Duration {
        refill(at: now)
        tokens -= Double(max(0, bytes))
        guard tokens < 0 else { return .zero }
        return .seconds(-tokens / bytesPerSecond)
    }

    /// The bytes that may go at `now` without waiting (0 while in debt).
    /// - Parameter now: The current time.
    /// - Returns: The available tokens.
    mutating func available(at now: ContinuousClock.Instant) -> Int {
        refill(at: now)
        return max(0, Int(tokens))
    }

    private mutating func refill(at now: ContinuousClock.Instant) {
        if let lastRefill, now > lastRefill {
            let elapsed = (now - lastRefill).seconds
            tokens = min(capacity, tokens + elapsed * bytesPerSecond)
        }
        if lastRefill.map({ now > $0 }) ?? true { lastRefill = now }
    }
}
