/// Exponential backoff with full jitter (AWS Architecture Blog, "Exponential Backoff and Jitter"): the
/// wait before retry *n* is a uniformly random duration between zero and `min(maximum, base · 2ⁿ⁻¹)`.
/// Full jitter spreads the retries of many clients that failed together, so they do not come back
/// together. A pure value: the random number is passed in.
public struct RetryBackoff: Sendable, Equatable {
    /// The ceiling of the first wait.
    public var base: Duration
    /// The largest ceiling any wait has.
    public var maximum: Duration

    /// Creates a schedule.
    /// - Parameters:
    ///   - base: The ceiling of the first wait; 0.5 s by default.
    ///   - maximum: The largest ceiling; 30 s by default.
    public init(base: Duration = .milliseconds(500), maximum: Duration = .seconds(30)) {
        self.base = base
        self.maximum = maximum
    }

    /// The ceiling of the wait before retry `retry` (1 for the first retry).
    public func ceiling(forRetry retry: Int) -> Duration {
        let doublings = max(0, min(retry - 1, 40))
        let base = max(self.base, .zero), maximum = max(self.maximum, .zero)
        // Doubling a duration past the maximum stops there (no overflow for late retries).
        var ceiling = base
        for _ in 0..<doublings {
            if ceiling >= maximum { break }
            ceiling = ceiling * 2
        }
        return min(ceiling, maximum)
    }

    /// The wait before retry `retry`: `unit` (in `0..<1`, uniformly random in use) times its ceiling.
    public func delay(forRetry retry: Int, unit: Double) -> Duration {
        let unit = unit.isFinite ? min(max(unit, 0), 1) : 0
        return ceiling(forRetry: retry) * unit
    }
}
