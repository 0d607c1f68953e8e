/// How far an upload or a download has come.
public struct TransferProgress: Sendable, Hashable, CustomStringConvertible {
    /// Bytes transferred so far.
    public var completedBytes: Int64
    /// The total, when known (from `Content-Length`, or the size of the request body).
    public var totalBytes: Int64?
    /// The current speed in bytes per second, averaged over the last couple of seconds; `nil` until it
    /// can be measured (and in progress reports that do not measure it).
    public var bytesPerSecond: Double?
    /// How long the rest should take at the current speed; `nil` when the total or the speed is unknown.
    public var estimatedTimeRemaining: Duration?

    /// Creates a progress value.
    /// - Parameters:
    ///   - completedBytes: Bytes transferred so far.
    ///   - totalBytes: The total, if known.
    ///   - bytesPerSecond: The current speed, if measured.
    ///   - estimatedTimeRemaining: The time the rest should take, if it can be estimated.
    public init(
        completedBytes: Int64, totalBytes: Int64?, bytesPerSecond: Double? = nil, estimatedTimeRemaining: Duration? = nil
    ) {
        self.completedBytes = completedBytes
        self.totalBytes = totalBytes
        self.bytesPerSecond = bytesPerSecond
        self.estimatedTimeRemaining = estimatedTimeRemaining
    }

    /// The fraction done, 0...1, when the total is known.
    public var fractionCompleted: Double? {
        guard let totalBytes else { return nil }
        guard totalBytes > 0 else { return 1 }
        return min(1, max(0, Double(completedBytes) / Double(totalBytes)))
    }

    public var description: String {
        if let fractionCompleted {
            return "\(completedBytes)/\(totalBytes ?? 0) bytes (\(Int(fractionCompleted * 100))%)"
        }
        return "\(completedBytes) bytes"
    }
}
