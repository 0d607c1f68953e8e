extension NetworkOperation {
    /// How urgently an operation should start, relative to others waiting in its queue.
    ///
    /// Waiting operations start highest priority first and first-come first-served within a
    /// priority. Priority can change while an operation waits; it does not affect running ones.
    public enum Priority: Int, Sendable, Hashable, Comparable, CaseIterable, CustomStringConvertible {
        /// Prefetching and other work nobody is waiting for.
        case veryLow = -8
        /// Background work.
        case low = -4
        /// The default.
        case normal = 0
        /// Work for what the user is looking at.
        case high = 4
        /// Work the user is waiting on right now.
        case veryHigh = 8

        public static func < (lhs: Priority, rhs: Priority) -> Bool { lhs.rawValue < rhs.rawValue }

        public var description: String {
            switch self {
            case .veryLow: "veryLow"
            case .low: "low"
            case .normal: "normal"
            case .high: "high"
            case .veryHigh: "veryHigh"
            }
        }
    }
}
