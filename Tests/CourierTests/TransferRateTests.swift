import Testing
@testable import Courier

/// Tier 1: transfer speed and time remaining, from samples with time passed in.
@Suite("TransferRate")
struct TransferRateTests {
    private let start = ContinuousClock.now

    private func near(_ value: Double?, _ expected: Double, tolerance: Double = 0.01) -> Bool {
        guard let value else { return false }
        return abs(value - expected) <= expected * tolerance
    }

    @Test func aSteadyTransferMeasuresItsRateAndTimeLeft() {
        var rate = TransferRate()
        rate.add(0, at: start)
        for tick in 1...50 { rate.add(10_000, at: start + .milliseconds(100 * tick)) }  // 100 kB/s for 5 s
        let now = start + .seconds(5)
        #expect(near(rate.bytesPerSecond(at: now), 100_000))
        #expect(rate.totalBytes == 500_000)
        let left = rate.estimatedTimeRemaining(totalBytes: 1_000_000, at: now)
        #expect(left.map { abs(($0 - .seconds(5)).seconds) < 0.05 } == true)
        #expect(rate.estimatedTimeRemaining(totalBytes: 500_000, at: now) == .zero)
        #expect(rate.estimatedTimeRemaining(totalBytes: nil, at: now) == nil)
    }

    @Test func theAverageFollowsASpeedChangeWithinTheWindow() {
        var rate = TransferRate(window: .seconds(2))
        rate.add(0, at: start)
        for tick in 1...100 { rate.add(1000, at: start + .milliseconds(100 * tick)) }  // 10 kB/s for 10 s
        for tick in 101...130 { rate.add(10_000, at: start + .milliseconds(100 * tick)) }  // then 100 kB/s for 3 s
        #expect(near(rate.bytesPerSecond(at: start + .seconds(13)), 100_000))
    }

    @Test func aStalledTransferSlowsDown() {
        var rate = TransferRate(window: .seconds(2))
        rate.add(0, at: start)
        rate.add(100_000, at: start + .seconds(1))
        #expect(near(rate.bytesPerSecond(at: start + .seconds(1)), 100_000))
        // Nothing for a while: the rate falls as the window slides.
        #expect(near(rate.bytesPerSecond(at: start + .seconds(2)), 50_000))
        #expect(rate.bytesPerSecond(at: start + .seconds(10)) == 0)
        #expect(rate.estimatedTimeRemaining(remainingBytes: 10, at: start + .seconds(10)) == nil)
    }

    @Test func unknownUntilTwoSamplesApart() {
        var rate = TransferRate()
        #expect(rate.bytesPerSecond(at: start) == nil)
        rate.add(0, at: start)
        #expect(rate.bytesPerSecond(at: start + .seconds(1)) == nil)
        rate.add(500, at: start)
        #expect(rate.bytesPerSecond(at: start) == nil)
        #expect(rate.bytesPerSecond(at: start + .milliseconds(500)) == 1000)
    }

    @Test func progressCarriesRateAndTimeLeft() {
        let plain = TransferProgress(completedBytes: 1, totalBytes: 2)
        #expect(plain.bytesPerSecond == nil && plain.estimatedTimeRemaining == nil)
        let rich = TransferProgress(completedBytes: 1, totalBytes: 2, bytesPerSecond: 10, estimatedTimeRemaining: .seconds(3))
        #expect(rich.bytesPerSecond == 10 && rich.estimatedTimeRemaining == .seconds(3))
        #expect(rich != plain)
    }
}
