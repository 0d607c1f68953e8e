import Courier
import Foundation
import NIOConcurrencyHelpers

/// A transfer's progress on standard error: a bar redrawn in place on a terminal (bytes, percent,
/// rate, time left), a plain line every couple of seconds otherwise.
final class ProgressBar: Sendable {
    private struct State {
        var started = ContinuousClock.now
        var lastDrawn: ContinuousClock.Instant?
        var last: TransferProgress?
        var drewOnTerminal = false
    }

    private let toTerminal: Bool
    private let state = NIOLockedValueBox(State())

    init(toTerminal: Bool) {
        self.toTerminal = toTerminal
    }

    /// The partial file a resumable download keeps beside `file`.
    static func partialURL(for file: URL) -> URL { PartialFileNames.partialURL(for: file) }

    /// Takes a new progress value; draws at most 10 times a second on a terminal, every 2 s otherwise.
    func update(_ progress: TransferProgress) {
        let line: String? = state.withLockedValue { state in
            state.last = progress
            let now = ContinuousClock.now
            let interval: Duration = toTerminal ? .milliseconds(100) : .seconds(2)
            if let drawn = state.lastDrawn, now - drawn < interval, progress.completedBytes != progress.totalBytes { return nil }
            state.lastDrawn = now
            state.drewOnTerminal = toTerminal
            return Self.describe(progress, elapsed: now - state.started)
        }
        guard let line else { return }
        StandardStream.standardError.write(toTerminal ? "\r\u{1B}[K" + line : line + "\n")
    }

    /// Ends the bar's line on a terminal.
    func finish() {
        let drew = state.withLockedValue { $0.drewOnTerminal }
        if drew { StandardStream.standardError.write("\n") }
    }

    /// `  42%  12.3 MiB / 29.1 MiB  4.2 MiB/s  0:04 left`, or without a total `12.3 MiB  4.2 MiB/s`.
    static func describe(_ progress: TransferProgress, elapsed: Duration) -> String {
        let seconds = max(Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18, 0.001)
        let rate = progress.bytesPerSecond ?? Double(progress.completedBytes) / seconds
        var parts: [String] = []
        if let fraction = progress.fractionCompleted { parts.append(String(format: "%3.0f%%", fraction * 100)) }
        parts.append(progress.totalBytes.map { "\(size(progress.completedBytes)) / \(size($0))" } ?? size(progress.completedBytes))
        // `Int64(x)` traps on a NaN, infinite or huge `Double` (a server declaring an exabyte and sending a byte
        // a minute): `Int64(exactly:)` does not.
        parts.append("\(size(Int64(exactly: rate.rounded(.down)) ?? .max))/s")
        if let total = progress.totalBytes, rate > 0, total > progress.completedBytes {
            let left = progress.estimatedTimeRemaining.map { Double($0.components.seconds) } ?? Double(total - progress.completedBytes) / rate
            parts.append(timeLeft(left))
        }
        return parts.joined(separator: "  ")
    }

    /// `4:07 left`; `--:-- left` for an estimate that is not a number or over 99,999 minutes.
    static func timeLeft(_ seconds: Double) -> String {
        guard seconds >= 0, seconds < 6_000_000, let whole = Int(exactly: seconds.rounded(.down)) else { return "--:-- left" }
        return String(format: "%d:%02d left", whole / 60, whole % 60)
    }

    /// Bytes as B, KiB, MiB or GiB with one decimal.
    static func size(_ bytes: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(bytes)
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(bytes) B" : String(format: "%.1f %@", value, units[unit])
    }
}
