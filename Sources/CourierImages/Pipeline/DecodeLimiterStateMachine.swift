import Courier

/// At most `limit` decodes at once, as a pure value. Waiters are served highest priority first (a
/// visible cell's decode before a prefetch's), in arrival order within a priority. A waiter cancelled
/// before it asked is remembered, so that its late request is refused rather than left waiting.
struct DecodeLimiterStateMachine: Sendable {
    typealias WorkID = UInt64
    typealias Priority = NetworkOperation.Priority

    let limit: Int
    private(set) var running = 0
    /// Waiters in arrival order (few at a time: one per decode waiting for a core).
    private var waiting: [(id: WorkID, priority: Priority)] = []
    private var cancelledEarly: Set<WorkID> = []

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// What a request for a slot gets.
    enum AcquireResult: Equatable, Sendable {
        /// A slot: run now.
        case run
        /// Wait for ``release()`` to name it.
        case wait
        /// It was cancelled already: do not run.
        case cancelled
    }

    var waitingCount: Int { waiting.count }

    mutating func acquire(_ id: WorkID, priority: Priority = .normal) -> AcquireResult {
        if cancelledEarly.remove(id) != nil { return .cancelled }
        if running < limit {
            running += 1
            return .run
        }
        waiting.append((id, priority))
        return .wait
    }

    /// A decode ended: returns the waiter that takes its slot (the first of the highest priority), if any.
    mutating func release() -> WorkID? {
        guard let top = waiting.map(\.priority).max() else {
            running = max(0, running - 1)
            return nil
        }
        let index = waiting.firstIndex { $0.priority == top }!
        return waiting.remove(at: index).id
    }

    /// `id`'s caller was cancelled: returns whether it was waiting (and is no longer). An `id` not seen
    /// yet is refused when it asks; one already running is not affected.
    mutating func cancel(_ id: WorkID, hasAsked: Bool) -> Bool {
        if let index = waiting.firstIndex(where: { $0.id == id }) {
            waiting.remove(at: index)
            return true
        }
        if !hasAsked { cancelledEarly.insert(id) }
        return false
    }
}
