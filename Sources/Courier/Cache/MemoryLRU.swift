import DequeModule

/// Least-recently-used bookkeeping by byte cost, as a pure value: it says which keys to evict, and
/// holds nothing else. Recency is a queue of (key, tick) with lazy deletion: an entry whose tick is
/// older than the key's current tick is stale and skipped.
package struct MemoryLRU<Key: Hashable & Sendable>: Sendable {
    package private(set) var capacity: Int
    package private(set) var totalCost = 0
    private var costs: [Key: (cost: Int, tick: UInt64)] = [:]
    private var recency = Deque<(key: Key, tick: UInt64)>()
    private var clock: UInt64 = 0

    package init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    package var count: Int { costs.count }

    package func contains(_ key: Key) -> Bool { costs[key] != nil }

    /// Adds or replaces `key` with `cost`, marks it most recent, and returns the keys evicted to stay
    /// within capacity (never `key` itself unless it alone exceeds the capacity).
    package mutating func insert(_ key: Key, cost: Int) -> [Key] {
        if let old = costs[key] { totalCost -= old.cost }
        clock += 1
        costs[key] = (max(0, cost), clock)
        totalCost += max(0, cost)
        recency.append((key, clock))
        return evict(toFit: capacity)
    }

    /// Marks `key` most recently used.
    package mutating func touch(_ key: Key) {
        guard let entry = costs[key] else { return }
        clock += 1
        costs[key] = (entry.cost, clock)
        recency.append((key, clock))
        compactIfNeeded()
    }

    /// Forgets `key`.
    package mutating func remove(_ key: Key) {
        guard let entry = costs.removeValue(forKey: key) else { return }
        totalCost -= entry.cost
        compactIfNeeded()
    }

    /// Evicts least-recently-used keys until the total cost is at most `bytes`; returns them.
    package mutating func trim(to bytes: Int) -> [Key] {
        evict(toFit: max(0, bytes))
    }

    /// Evicts the least recently used key; `nil` when empty.
    package mutating func removeLeastRecent() -> Key? {
        while let oldest = recency.popFirst() {
            guard let entry = costs[oldest.key], entry.tick == oldest.tick else { continue }
            costs[oldest.key] = nil
            totalCost -= entry.cost
            return oldest.key
        }
        return nil
    }

    private mutating func evict(toFit limit: Int) -> [Key] {
        var evicted: [Key] = []
        while totalCost > limit, let oldest = recency.popFirst() {
            guard let entry = costs[oldest.key], entry.tick == oldest.tick else { continue }
            costs[oldest.key] = nil
            totalCost -= entry.cost
            evicted.append(oldest.key)
        }
        return evicted
    }

    private mutating func compactIfNeeded() {
        guard recency.count > 64, recency.count > 2 * costs.count else { return }
        recency = Deque(recency.filter { costs[$0.key]?.tick == $0.tick })
    }
}
