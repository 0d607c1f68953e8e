import Synchronization

/// A process-wide unique, cheap identity for an operation inside the queue.
struct OperationID: Hashable, Sendable, CustomStringConvertible {
    let rawValue: UInt64

    private static let counter = Atomic<UInt64>(1)

    /// A new identifier, never handed out before in this process.
    static func next() -> OperationID {
        OperationID(rawValue: counter.wrappingAdd(1, ordering: .relaxed).oldValue)
    }

    var description: String { "op-\(rawValue)" }
}
