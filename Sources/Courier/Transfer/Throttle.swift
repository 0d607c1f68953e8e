import Foundation
import NIOConcurrencyHelpers

/// A bandwidth limit shared by the transfers it applies to (a whole queue's, or one operation's): a
/// token bucket behind a lock. A transfer asks before it reads or sends a chunk and waits the time it is
/// told; while it waits it reads nothing, so TCP's flow control slows the peer down.
///
/// A queue keeps one for its whole life and changes its limit in place
/// (``NetworkQueue/maximumBytesPerSecond``), so a limit set later reaches transfers already prepared,
/// waiting or running, at their next chunk.
public final class Throttle: Sendable {
    /// `nil`: no limit (a queue's throttle before a limit is set).
    private let bucket: NIOLockedValueBox<TokenBucket?>

    /// The limit, in bytes per second (`Int.max` while a queue has none).
    public var bytesPerSecond: Int { limit ?? Int.max }

    /// Creates a limit of `bytesPerSecond` (at least 1), with bursts of at most a tenth of a second's worth.
    public init(bytesPerSecond: Int) {
        self.bucket = NIOLockedValueBox(TokenBucket(bytesPerSecond: max(1, bytesPerSecond)))
    }

    /// Creates a throttle without a limit, or with `limit`, to be changed with ``setLimit(_:)``.
    init(limit: Int?) {
        self.bucket = NIOLockedValueBox(limit.map { TokenBucket(bytesPerSecond: max(1, $0)) })
    }

    /// The limit in bytes per second, `nil` for none.
    var limit: Int? { bucket.withLockedValue { $0.map { Int(exactly: $0.bytesPerSecond.rounded(.down)) ?? Int.max } } }

    /// Changes the limit now (`nil`: none); the next chunk of every transfer under it obeys it.
    func setLimit(_ bytesPerSecond: Int?) {
        bucket.withLockedValue { $0 = bytesPerSecond.map { TokenBucket(bytesPerSecond: max(1, $0)) } }
    }

    /// How long to wait before `bytes` may move, now.
    func delay(for bytes: Int) -> Duration {
        // The clock is read only under a limit (a queue's throttle has none unless one is set).
        bucket.withLockedValue { bucket in
            guard bucket != nil else { return .zero }
            return bucket!.take(bytes, at: .now)
        }
    }

    /// Whether any of `throttles` has a limit now.
    static func limits(_ throttles: [Throttle]) -> Bool { throttles.contains { $0.limit != nil } }

    /// Waits as long as the limits ask before `bytes` may move (the longest of them).
    static func wait(for bytes: Int, under throttles: [Throttle]) async throws {
        var delay = Duration.zero
        for throttle in throttles { delay = max(delay, throttle.delay(for: bytes)) }
        if delay > .zero { try await Task.sleep(for: delay) }
    }
}
