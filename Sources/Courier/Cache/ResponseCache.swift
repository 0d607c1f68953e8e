public import Foundation
import NIOConcurrencyHelpers

/// A private HTTP cache (RFC 9111) shared by the engines that are given it.
///
/// ```swift
/// let cache = ResponseCache(memoryCapacity: 16 << 20)
/// let engine = NetworkEngine(host: "api.example.com", configuration: .init { $0.cache = cache })
/// ```
/// Responses live in memory and, unless `directory` is `nil`, on disk (written through), each tier
/// bounded by bytes with least-recently-used eviction; the disk tier survives restarts. **By default the
/// disk tier is the user's persistent cache directory** (``defaultDirectory``, shared by every process
/// that uses the default): pass `directory: nil` for a cache that lives in memory only, or a directory
/// of your own. A response that carries `Set-Cookie` is kept in memory only (a cookie is never written
/// to disk), and is served with the field, as every other stored field. Entries are
/// filed by normalised URL, with several variants per URL for `Vary`, and partitioned by a digest of
/// the request's credentials (never the credentials themselves). Safe to use from any thread, and the
/// disk tier from several processes.
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
        /// Bytes held in memory: the malloc'd memory of the stored responses (bodies, header fields,
        /// URLs) and of their bookkeeping, as estimated by the cache; what `memoryCapacity` bounds.
        public var memoryBytes = 0
        /// Stored responses in memory, all variants counted.
        public var entries = 0
        /// Bytes of bodies on disk.
        public var diskBytes = 0
        /// Stored responses on disk.
        public var diskEntries = 0
    }

    private struct State {
        var lru: MemoryLRU<String>
        var variants: [String: [CachedResponseEntry]] = [:]
        var statistics = Statistics()
        /// The keys whose disk tier is being read, and whether a store or an invalidation of the key came
        /// meanwhile: then what the read found is not put in memory (it may be what was just invalidated,
        /// or older than what was just stored). Holds only the keys of reads under way.
        var reads: [String: (readers: Int, changed: Bool)] = [:]

        /// A store or an invalidation of `key`: a read of it under way must not remember what it found.
        mutating func changed(_ key: String) {
            if reads[key] != nil { reads[key]?.changed = true }
        }
    }

    private let state: NIOLockedValueBox<State>
    private let disk: DiskCacheStore?
    /// The key of credential partitions (``CachePartitionKey``): the disk tier's, read or made on the disk
    /// queue when the cache is created; a lookup that comes first waits for that one small read.
    private let partitionKeyBox = NIOLockedValueBox<CachePartitionKey?>(nil)
    private let partitionKeyDirectory: URL?
    /// Where the disk tier's reads and its batched writes run, in order.
    let diskQueue = DispatchQueue(label: "courier.cache.disk")
    /// The cache's notion of now; tests inject a clock.
    let now: @Sendable () -> Date
    #if canImport(Darwin)
    /// Empties the memory tier on the system's memory-pressure warning (see ResponseCache+MemoryPressure).
    private let memoryPressure = NIOLockedValueBox<MemoryPressureObserver?>(nil)
    #endif

    /// Creates a cache.
    /// - Parameters:
    ///   - memoryCapacity: The most bytes held in memory, counted as the malloc'd memory the stored
    ///     responses and their bookkeeping take (a small response costs about a kilobyte more than its
    ///     body); 16 MiB by default.
    ///   - diskCapacity: The most body bytes kept on disk; 256 MiB by default.
    ///   - directory: Where the disk tier lives (created with owner-only permissions); ``defaultDirectory``
    ///     by default, `nil` for a memory-only cache.
    ///   - clock: The current time; the system clock by default. Tests pass a controllable one.
    public convenience init(
        memoryCapacity: Int = 16 << 20,
        diskCapacity: Int = 256 << 20,
        directory: URL? = ResponseCache.defaultDirectory,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.init(memoryCapacity: memoryCapacity, diskCapacity: diskCapacity, directory: directory, clock: clock, diskIndexTrust: 1_000_000_000)
    }

    /// Creates a cache whose disk key index trusts its negative answers for `diskIndexTrust`
    /// nanoseconds after each check against the database (see ``DiskCacheIndex``); tests lengthen it.
    init(memoryCapacity: Int, diskCapacity: Int, directory: URL?, clock: @escaping @Sendable () -> Date, diskIndexTrust: UInt64) {
        self.state = NIOLockedValueBox(State(lru: MemoryLRU(capacity: memoryCapacity)))
        self.disk = directory.map { DiskCacheStore(directory: $0, capacity: diskCapacity, indexTrustInterval: diskIndexTrust) }
        self.partitionKeyDirectory = directory
        self.now = clock
        diskQueue.setSpecific(key: Self.diskQueueKey, value: ObjectIdentifier(self))
        // The partition key and the disk's key index are loaded at once, off the caller's thread.
        if directory != nil {
            diskQueue.async { [weak self] in
                _ = self?.partitionKey
                _ = self?.disk?.pool()
            }
        }
        #if canImport(Darwin)
        let observer = observeMemoryPressure()
        memoryPressure.withLockedValue { $0 = observer }
        #endif
    }

    /// The platform's cache directory for Courier: `$XDG_CACHE_HOME/courier` or `~/.cache/courier`
    /// on Linux, `Caches/courier` on Apple platforms.
    public static var defaultDirectory: URL {
        PlatformDirectory.courier(xdgVariable: "XDG_CACHE_HOME", fallback: ".cache", apple: .cachesDirectory)
    }

    /// Closes the disk tier's database; it reopens on next use. Memory is kept.
    func closeDisk() {
        onDiskQueue {
            disk?.drainQueuedWrites()   // the writes still queued go first
            disk?.close()
        }
    }

    /// The disk tier's directory, or `nil` for a memory-only cache.
    public var directory: URL? { disk?.directory }

    /// Counters and sizes.
    public var statistics: Statistics {
        var statistics = state.withLockedValue { state in
            var statistics = state.statistics
            statistics.memoryBytes = state.lru.totalCost
            statistics.entries = state.variants.values.reduce(0) { $0 + $1.count }
            return statistics
        }
        if let disk {
            // After the writes already asked for (they run on the disk queue, in order).
            onDiskQueue {
                disk.drainQueuedWrites()
                statistics.diskBytes = disk.totalBytes
                statistics.diskEntries = disk.entryCount
            }
        }
        return statistics
    }

    /// Removes every stored response, in memory and on disk (after any write still under way).
    public func removeAll() {
        state.withLockedValue { state in
            _ = state.lru.trim(to: 0)
            state.variants = [:]
            for key in state.reads.keys { state.changed(key) }
        }
        onDiskQueue { disk?.removeAll() }
    }

    /// Runs `body` on the disk queue, at once when already there (a credential provider asked during a
    /// lookup runs there, and might look at the statistics).
    private func onDiskQueue(_ body: () -> Void) {
        if DispatchQueue.getSpecific(key: Self.diskQueueKey) == ObjectIdentifier(self) { return body() }
        diskQueue.sync(execute: body)
    }

    private static let diskQueueKey = DispatchSpecificKey<ObjectIdentifier>()

    /// Waits until every write to the disk tier asked for so far is done. Responses are stored in
    /// memory at once and written to disk on the cache's own queue, never on the thread that got the
    /// response; a command-line tool that exits right after a request calls this first.
    public func synchronize() async {
        await onQueue(diskQueue) { [disk] in disk?.drainQueuedWrites() }
    }

    /// Empties the memory tier (for memory pressure). The disk tier, written through, keeps everything;
    /// a memory-only cache loses everything. On Apple platforms the cache calls this itself when the
    /// system warns of memory pressure; elsewhere, call it from your own low-memory signal.
    public func flushMemory() { trimMemory(to: 0) }

    /// Evicts least-recently-used responses until memory holds at most `bytes`.
    /// - Parameter bytes: The most bytes to keep.
    public func trimMemory(to bytes: Int) {
        state.withLockedValue { state in
            for key in state.lru.trim(to: bytes) { state.variants[key] = nil }
        }
    }

    // MARK: Internal

    /// The stored variants for a URL, most recently used first (memory, then disk).
    /// The key of this cache's credential partitions (see ``partitionKeyBox``).
    var partitionKey: CachePartitionKey {
        partitionKeyBox.withLockedValue { key in
            if let key { return key }
            let loaded = partitionKeyDirectory.map(CachePartitionKey.load(in:)) ?? .ephemeral()
            key = loaded
            return loaded
        }
    }

    /// The partition of a request's responses, so that responses to different users are never mixed;
    /// `nil` without credentials. A keyed hash (``CachePartitionKey``) of the credential fields, or of
    /// `user` when the app names the user they belong to
    /// (``NetworkEngine/Configuration/cachePartitionName``), so that a refreshed token keeps its user's
    /// entries. The credentials themselves, or a bare hash of them, are never stored.
    /// - Parameters:
    ///   - headers: The request's fields, credentials included.
    ///   - names: The lowercase names that carry credentials (the engine's sensitive names and the
    ///     provider's fields).
    ///   - user: The app's name for the partition, if it gave one.
    func credentialPartition(of headers: HTTPFields, names: Set<String>, user: String? = nil) -> String? {
        let credentials = SensitiveHeaders.kept(names, from: headers)
        guard !credentials.isEmpty else { return nil }
        if let user { return partitionKey.partition(of: "user\n" + user) }
        let material = credentials.map { "\($0.name.canonicalName): \($0.value)" }.sorted().joined(separator: "\n")
        return partitionKey.partition(of: material)
    }

    func candidates(for url: URL) -> [CachedResponseEntry] {
        memoryCandidates(for: url) ?? diskCandidates(for: url)
    }

    /// The variants known without reading the disk: those held in memory, or none when the disk's key
    /// index says nothing is stored there for the URL. `nil` when the disk tier must be read (with
    /// ``diskCandidates(for:)``, off the caller's thread: see ``readDisk(for:then:)``).
    func memoryCandidates(for url: URL) -> [CachedResponseEntry]? {
        guard let key = CacheURLKey.key(for: url) else { return [] }
        let inMemory: [CachedResponseEntry]? = state.withLockedValue { state in
            guard let variants = state.variants[key] else { return nil }
            state.lru.touch(key)
            return variants
        }
        if let inMemory { return inMemory }
        guard let disk else { return [] }
        return disk.indexAnswer(for: key) == .absent ? [] : nil
    }

    /// The variants on disk (remembered in memory when found). Blocking I/O.
    func diskCandidates(for url: URL) -> [CachedResponseEntry] {
        guard let key = CacheURLKey.key(for: url), let disk else { return [] }
        // Registered before the read writes what is queued and reads: a store or an invalidation from
        // then on makes what it finds unfit to remember (this lookup still uses it: it began first).
        state.withLockedValue { $0.reads[key, default: (0, false)].readers += 1 }
        let fromDisk = disk.entries(for: key, now: now())
        remember(fromDisk, under: key)
        return fromDisk
    }

    /// Reads the disk tier on the cache's own queue, so neither the enqueueing thread (the main thread,
    /// often) nor Swift's cooperative pool waits for SQLite and the file system. The read comes after
    /// the writes queued before it, so it finds what memory has let go of.
    func readDisk(for url: URL, then body: @escaping @Sendable ([CachedResponseEntry]) -> Void) {
        diskQueue.async { [self] in body(diskCandidates(for: url)) }
    }

    /// Ends a read of `key` (``diskCandidates(for:)``) and keeps what it found in memory, unless the key
    /// was stored or invalidated while it read.
    private func remember(_ variants: [CachedResponseEntry], under key: String) {
        state.withLockedValue { state in
            guard let read = state.reads[key] else { return }
            state.reads[key] = read.readers > 1 ? (read.readers - 1, read.changed) : nil
            guard !read.changed, !variants.isEmpty else { return }
            state.variants[key] = variants
            let cost = Self.cost(of: variants, under: key)
            for evicted in state.lru.insert(key, cost: cost) { state.variants[evicted] = nil }
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
            state.changed(key)
            state.statistics.stores += 1
            let cost = Self.cost(of: variants, under: key)
            for evicted in state.lru.insert(key, cost: cost) { state.variants[evicted] = nil }
        }
        // Disk writes gather and go in batches on the disk queue; the caller never waits for them.
        if let disk, disk.enqueue(.store(entry, urlKey: key, now: now())) { scheduleDrain(of: disk) }
    }

    /// Forgets every variant stored under these keys (see `CacheInvalidation`).
    func invalidate(_ keys: [String]) {
        guard !keys.isEmpty else { return }
        state.withLockedValue { state in
            for key in keys {
                state.variants[key] = nil
                state.lru.remove(key)
                state.changed(key)
            }
        }
        if let disk, disk.enqueue(.invalidate(keys)) { scheduleDrain(of: disk) }
    }

    /// How long the first queued write waits for others to join its batch: one SQLite transaction (and
    /// one wake of the disk queue) for all the responses stored meanwhile. Anything that reads the disk
    /// tier (a lookup, ``statistics``, ``synchronize()``, closing) writes what is queued first.
    static let writeBatchDelay: DispatchTimeInterval = .milliseconds(5)

    private func scheduleDrain(of disk: DiskCacheStore) {
        diskQueue.asyncAfter(deadline: .now() + Self.writeBatchDelay) { disk.drainQueuedWrites() }
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

    /// What a key's variants count against the memory capacity: the malloc'd memory they and their
    /// bookkeeping hold (see ``CacheMemoryCost``), not only their body and header bytes.
    static func cost(of variants: [CachedResponseEntry], under key: String) -> Int {
        variants.reduce(CacheMemoryCost.key(key, variants: variants.count)) { $0 + CacheMemoryCost.entry($1) }
    }
}
