import Testing
@testable import Courier

/// Tier 1: the bandwidth limit's token bucket, with computed time (no sleeping).
@Suite("TokenBucket")
struct TokenBucketTests {
    /// Sends `total` bytes in `chunk`-byte pieces, advancing a virtual clock by each wait.
    private func simulate(total: Int, chunk: Int, bucket: inout TokenBucket) -> Duration {
        let start = ContinuousClock.now
        var now = start
        var sent = 0
        while sent < total {
            let size = min(chunk, total - sent)
            now += bucket.take(size, at: now)
            sent += size
        }
        return now - start
    }

    @Test func tenMebibytesAtOneMebibytePerSecondTakeAboutTenSeconds() {
        for chunk in [1024, 16 * 1024, 64 * 1024, 1 << 20] {
            var bucket = TokenBucket(bytesPerSecond: 1 << 20)
            let elapsed = simulate(total: 10 << 20, chunk: chunk, bucket: &bucket)
            // The first burst (a tenth of a second) is free; the rest goes at the rate.
            #expect(elapsed >= .seconds(9.8) && elapsed <= .seconds(10), "chunk \(chunk): \(elapsed)")
        }
    }

    @Test func defaultCapacityIsATenthOfASecondButAtLeastSixteenKiB() {
        #expect(TokenBucket(bytesPerSecond: 1 << 20).capacity == Double((1 << 20) / 10))
        #expect(TokenBucket(bytesPerSecond: 1000).capacity == 100, "a tenth of a second, even at a low rate (issue 23 B12)")
        #expect(TokenBucket(bytesPerSecond: 1024).capacity == 102)
        #expect(TokenBucket(bytesPerSecond: 1000, capacity: 500).capacity == 500)
    }

    @Test func burstsAreCappedAfterIdleTime() {
        var bucket = TokenBucket(bytesPerSecond: 100_000, capacity: 20_000)
        let start = ContinuousClock.now
        #expect(bucket.take(20_000, at: start) == .zero)
        // An hour idle refills no more than the capacity.
        let later = start + .seconds(3600)
        #expect(bucket.available(at: later) == 20_000)
        #expect(bucket.take(20_000, at: later) == .zero)
        // The next 50 000 bytes must wait for half a second of refill.
        #expect(bucket.take(50_000, at: later) == .seconds(0.5))
    }

    @Test func aSendLargerThanTheBucketGoesIntoDebt() {
        var bucket = TokenBucket(bytesPerSecond: 1000, capacity: 1000)
        let start = ContinuousClock.now
        #expect(bucket.take(3000, at: start) == .seconds(2))
        // Waited the 2 s: the debt is paid, the bucket empty.
        #expect(bucket.take(1000, at: start + .seconds(2)) == .seconds(1))
        #expect(bucket.available(at: start + .seconds(2)) == 0)
    }

    @Test func timeGoingBackwardsAddsNothing() {
        var bucket = TokenBucket(bytesPerSecond: 1000, capacity: 1000)
        let start = ContinuousClock.now
        _ = bucket.take(1000, at: start)
        #expect(bucket.take(500, at: start - .seconds(10)) == .seconds(0.5))
    }
}
