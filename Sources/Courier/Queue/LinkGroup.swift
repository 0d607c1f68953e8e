import NIOConcurrencyHelpers
import Synchronization

/// The queue group of an engine: engines that reach the network the same way share one.
///
/// A group is what the shared queue parks or runs by: its width follows one reachability object (the
/// one the app gave, or the system's monitor for the host and port, which the engines of a host share)
/// with the same per-link limits and `wifiOnlyMode`, so every engine of a group always computes the same
/// width from the same status. Engines of different groups never share a flight (their widths may
/// differ: one parked at 0 on cellular, the other on Wi-Fi), and a flight is parked or run by its group,
/// never by whichever engine subscribed first.
struct LinkGroup: Hashable, Sendable {
    let queue: ObjectIdentifier
    /// The reachability object the width follows.
    let source: ObjectIdentifier
    let concurrency: ConnectionConcurrency
    let wifiOnlyMode: Bool

    /// The process's groups: an id for each, counted by the engines (connectivities) using it.
    private static let registry = NIOLockedValueBox<[LinkGroup: (id: UInt64, users: Int)]>([:])
    private static let nextID = Atomic<UInt64>(1)
    /// Versions of width decisions, shared by every engine so that the newest decision of a group wins
    /// whichever engine made it (see ``QueueStateMachine/setLimit(_:for:version:)``).
    private static let versions = NIOLockedValueBox<UInt64>(1)

    /// The group's id; the caller uses it until ``release()``.
    func acquire() -> UInt64 {
        Self.registry.withLockedValue { registry in
            if let entry = registry[self] {
                registry[self] = (entry.id, entry.users + 1)
                return entry.id
            }
            let id = Self.nextID.wrappingAdd(1, ordering: .relaxed).oldValue
            registry[self] = (id, 1)
            return id
        }
    }

    /// One user of the group is gone; returns `true` when it was the last (the group's width can go).
    func release() -> Bool {
        Self.registry.withLockedValue { registry in
            guard let entry = registry[self] else { return false }
            if entry.users <= 1 {
                registry[self] = nil
                return true
            }
            registry[self] = (entry.id, entry.users - 1)
            return false
        }
    }

    /// A version for a width decided now: higher than every one decided before.
    static func nextVersion() -> UInt64 { versioned { () }.version }

    /// Reads a status and numbers the decision in one step, so that of two engines of a group, the one
    /// that read the newer status always holds the higher version.
    static func versioned<Value>(_ read: () -> Value) -> (value: Value, version: UInt64) {
        versions.withLockedValue { version in
            version += 1
            return (read(), version)
        }
    }
}
