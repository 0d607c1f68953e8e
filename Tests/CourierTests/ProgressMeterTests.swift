import Testing
@testable import Courier

/// Tier 1: how chunks become progress reports (at most one per interval, the first and the last
/// always), with time passed in.
@Suite("ProgressMeter")
struct ProgressMeterTests {
    private let start = ContinuousClock.now

    @Test func theFirstChunkIsReportedAndChunksWithinTheIntervalAreFolded() throws {
        var meter = ProgressMeter(total: 10_000, at: start)
        let firstReport = meter.add(1000, at: start + .milliseconds(1))
        let first = try #require(firstReport)
        #expect(first.completedBytes == 1000 && first.totalBytes == 10_000)
        // Nine more chunks in the next 10 ms: counted, not reported, except the one that reaches the total.
        var reports: [Int64] = []
        for index in 2...10 {
            if let report = meter.add(1000, at: start + .milliseconds(1 + index)) { reports.append(report.completedBytes) }
        }
        #expect(reports == [10_000])
        #expect(meter.completed == 10_000)
        #expect(meter.finish(at: start + .milliseconds(20)) == nil)   // the end was already reported
    }

    @Test func aChunkAfterTheIntervalIsReportedWithRateAndTimeLeft() throws {
        var meter = ProgressMeter(completed: 5000, total: 105_000, at: start)   // a resumed download
        _ = meter.add(1000, at: start + .milliseconds(10))
        #expect(meter.add(1000, at: start + .milliseconds(15)) == nil)
        let laterReport = meter.add(8000, at: start + .milliseconds(100))
        let later = try #require(laterReport)
        #expect(later.completedBytes == 15_000)
        // 10,000 bytes in 100 ms since the transfer began: 100 kB/s, and 90,000 bytes left take 0.9 s.
        let rate = try #require(later.bytesPerSecond)
        #expect(abs(rate - 100_000) < 1)
        let left = try #require(later.estimatedTimeRemaining)
        #expect(abs((left - .milliseconds(900)).seconds) < 0.001)
    }

    @Test func finishReportsWhatTheLastReportMissed() throws {
        var meter = ProgressMeter(total: nil, at: start)
        _ = meter.add(10, at: start)
        #expect(meter.add(10, at: start + .milliseconds(1)) == nil)
        let lastReport = meter.finish(at: start + .milliseconds(2))
        let last = try #require(lastReport)
        #expect(last.completedBytes == 20 && last.totalBytes == nil && last.estimatedTimeRemaining == nil)
        #expect(meter.finish(at: start + .milliseconds(3)) == nil)
        // Nothing at all: finish still reports the zero, so a progress bar learns the transfer ended.
        var empty = ProgressMeter(total: 0, at: start)
        #expect(empty.finish(at: start)?.completedBytes == 0)
    }
}
