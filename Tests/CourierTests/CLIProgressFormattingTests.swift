import Courier
import Foundation
import Testing
@testable import courier

/// Numbers the CLI prints that come from the network or from disk, not from its options: a server may
/// declare an exabyte and send a byte a minute, a damaged outbox may hold a date centuries away or NaN.
/// `Int(x)` on such a `Double` traps; what is printed instead is a placeholder.
@Suite("courier progress and ages")
struct CLIProgressFormattingTests {
    @Test func anEstimateTooLargeOrNotANumberIsAPlaceholder() {
        // 2^63 - 2 bytes left at a thousandth of a byte per second: 9.2e21 seconds.
        let crawling = TransferProgress(completedBytes: 1, totalBytes: .max, bytesPerSecond: 0.001)
        #expect(ProgressBar.describe(crawling, elapsed: .seconds(1)).hasSuffix("--:-- left"))
        for rate in [Double.nan, .infinity, 1e30] {
            _ = ProgressBar.describe(TransferProgress(completedBytes: 5, totalBytes: 10, bytesPerSecond: rate), elapsed: .seconds(1))
        }
        #expect(ProgressBar.timeLeft(247) == "4:07 left")
        for seconds in [Double.nan, .infinity, -1, 6_000_000, 1e300] { #expect(ProgressBar.timeLeft(seconds) == "--:-- left") }
    }

    @Test func agesOfDatesFarAwayOrNotANumberDoNotTrap() {
        #expect(OutboxCommand.age(since: Date().addingTimeInterval(-125)) == "2m")
        #expect(OutboxCommand.age(since: Date(timeIntervalSince1970: .nan)) == "0s")
        #expect(OutboxCommand.age(since: Date(timeIntervalSince1970: 1e300)) == "0s", "in the future")
        #expect(OutboxCommand.age(since: Date(timeIntervalSince1970: -1e300)) == "\(Int.max / 86400)d")
        #expect(OutboxCommand.wholeSeconds(-.infinity) == 0 && OutboxCommand.wholeSeconds(.infinity) == .max)
    }
}
