public import Foundation
import NIOConcurrencyHelpers

/// A private HTTP cache (RFC 9111) shared by the engines that are given it.
///
/// ```swift
/// let cache = ResponseCache(memoryCapacity: 16 << 20)
/// let engine = NetworkEngine(host: "api.example.com", configuration: .init { $0.cache = cache })
/// ```
/// Responses live in memory, bounded by bytes with least-recently-used eviction. Entries are filed by
/// normalised URL, with several variants per URL for `Vary`, and partitioned by a digest of the
/// request's credentials (never the credentials themselves). Safe to use from any thread.
public final class ResponseCache: Sendable {
    /// What the cache has done so far.
    public struct Statistics: Sendable, Hashable {
        /// Fresh responses served without the network.
        public var hits = 0
        /// Requests that found nothing usable and went to the network.
        public var misses = 0
        /// Stored responses confirmed by `304 Not Modified`.
        public var revalidations = 0
        /// Stale responses served.
        public var staleServed = 0
        /// Responses stored.
        public var stores = 0
        /// Bytes held in memory (bodies and headers).
        public var memoryBytes = 0
        /// Stored responses, all variants counted.
        public var entries = 0
    }

    private struct State {
        var lru: MemoryLRU<String>
        var variants: [String: [CachedResponseEntry]] = [:]
        var statistics = Statistics()
    }

    private let state: NIOLockedValueBox<State>
    /// The cache's notion of now; tests inject a clock.
    let now: @Sendable () -> Date

    /// Creates a cache.
    /// - Parameters:
    ///   - memoryCapacity: The most bytes held in memory; 16 MiB by default.
    ///   - clock: The current time; the system clock by default. Tests pass a controllable one.
    public init(memoryCapacity: Int = 16 << 20, clock: @escaping @Sendable () -> Date = { Date() }) {
        self.state = NIOLockedValueBox(State(lru: MemoryLRU(capacity: memoryCapacity)))
        self.now = clock
    }

    /// Counters and sizes.
    public var statistics: Statistics {
        state.withLockedValue { state in
            var statistics = state.statistics
            statistics.memoryBytes = state.lru.totalCost
            statistics.entries = state.variants.values.reduce(0) { $0 + $1.count }
            return statistics
        }
    }

    /// Removes every stored response.
    public func removeAll() {
        state.withLockedValue { state in
            _ = state.lru.trim(to: 0)
            state.variants = [:]
        }
    }

    /// Empties the memory tier (for memory pressure). With only a memory tier, that is everything.
    public func flushMemory() { trimMemory(to: 0) }

    /// Evicts least-recently-used responses until memory holds at most `bytes`.
    /// - Parameter bytes: The most bytes to keep.
    public func trimMemory(to bytes: Int) {
        state.withLockedValue { state in
            for key in state.lru.trim(to: bytes) { state.variants[key] = nil }
        }
    }

    // MARK: Internal

    /// The stored variants for a URL, most recently used first.
    func candidates(for url: URL) -> [CachedResponseEntry] {
        guard let key = CacheURLKey.key(for: url) else { return [] }
        return state.withLockedValue { state in
            guard let variants = state.variants[key] else { return [] }
            state.lru.touch(key)
            return variants
        }
    }

    /// Stores an entry, replacing the variant it supersedes (same Vary selection and credentials).
    func store(_ entry: CachedResponseEntry) {
        guard let key = entry.cacheKey else { return }
        state.withLockedValue { state in
            var variants = state.variants[key] ?? []
            variants.removeAll {
                $0.varySelectedHeaders == entry.varySelectedHeaders && $0.credentialPartition == entry.credentialPartition
            }
            variants.insert(entry, at: 0)
            state.variants[key] = variants
            state.statistics.stores += 1
            let cost = variants.reduce(0) { $0 + Self.cost(of: $1) }
            for evicted in state.lru.insert(key, cost: cost) { state.variants[evicted] = nil }
        }
    }

    /// Forgets every variant stored under these keys (see `CacheInvalidation`).
    func invalidate(_ keys: [String]) {
        guard !keys.isEmpty else { return }
        state.withLockedValue { state in
            for key in keys {
                state.variants[key] = nil
                state.lru.remove(key)
            }
        }
    }

    func record(_ outcome: CacheOutcome) {
        state.withLockedValue { state in
            switch outcome {
            case .hit: state.statistics.hits += 1
            case .miss: state.statistics.misses += 1
            case .revalidated: state.statistics.revalidations += 1
            case .stale: state.statistics.staleServed += 1
            case .unsatisfiable: break
            }
        }
    }

    private static func cost(of entry: CachedResponseEntry) -> Int {
        entry.body.count + entry.headers.reduce(64) { $0 + $1.name.rawName.utf8.count + $1.value.utf8.count + 4 }
    }
}
