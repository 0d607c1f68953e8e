import Foundation
import NIOConcurrencyHelpers

/// A bandwidth limit shared by the transfers it applies to (a whole queue's, or one operation's): a
/// token bucket behind a lock. A transfer asks before it reads or sends a chunk and waits the time it is
/// told; while it waits it reads nothing, so TCP's flow control slows the peer down.
public final class Throttle: Sendable {
    private let bucket: NIOLockedValueBox<TokenBucket>

    /// The limit, in bytes per second.
    public let bytesPerSecond: Int

    /// Creates a limit of `bytesPerSecond` (at least 1), with bursts of at most a tenth of a second's worth
    /// (at least 16 KiB).
    public init(bytesPerSecond: Int) {
        self.bytesPerSecond = max(1, bytesPerSecond)
        self.bucket = NIOLockedValueBox(TokenBucket(bytesPerSecond: max(1, bytesPerSecond)))
    }

    /// How long to wait before `bytes` may move, now.
    func delay(for bytes: Int) -> Duration {
        let now = ContinuousClock.now
        return bucket.withLockedValue { $0.take(bytes, at: now) }
    }

    /// Waits as long as the limits ask before `bytes` may move (the longest of them).
    static func wait(for bytes: Int, under throttles: [Throttle]) async throws {
        guard !throttles.isEmpty else { return }
        let delay = throttles.map { $0.delay(for: bytes) }.max() ?? .zero
        if delay > .zero { try await Task.sleep(for: delay) }
    }
}
