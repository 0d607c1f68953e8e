import DequeModule

/// At most `limit` decodes at once, the others waiting in arrival order, as a pure value. A waiter
/// cancelled before it asked is remembered, so that its late request is refused rather than left waiting.
struct DecodeLimiterStateMachine: Sendable {
    typealias WorkID = UInt64

    let limit: Int
    private(set) var running = 0
    private var waiting = Deque<WorkID>()
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

    mutating func acquire(_ id: WorkID) -> AcquireResult {
        if cancelledEarly.remove(id) != nil { return .cancelled }
        if running < limit {
            running += 1
            return .run
        }
        waiting.append(id)
        return .wait
    }

    /// A decode ended: returns the waiter that takes its slot, if any.
    mutating func release() -> WorkID? {
        if let next = waiting.popFirst() { return next }
        running = max(0, running - 1)
        return nil
    }

    /// `id`'s caller was cancelled: returns whether it was waiting (and is no longer). An `id` not seen
    /// yet is refused when it asks; one already running is not affected.
    mutating func cancel(_ id: WorkID, hasAsked: Bool) -> Bool {
        if let index = waiting.firstIndex(of: id) {
            waiting.remove(at: index)
            return true
        }
        if !hasAsked { cancelledEarly.insert(id) }
        return false
    }
}
