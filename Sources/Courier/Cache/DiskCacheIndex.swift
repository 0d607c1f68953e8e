/// Which URL keys may have rows in the disk tier, so that a lookup whose key is not there answers
/// "nothing stored" at once instead of reading SQLite behind the disk queue's writes.
///
/// A pure value (no I/O, no clock: times are passed in, in monotonic nanoseconds). It holds a 64-bit
/// hash per URL key, not the key, so it costs about 16 bytes per key. Its answers:
/// - ``Answer/absent`` is exact for what this process wrote, and trusted only for `trustInterval`
///   after the index was last checked against the database (``validated(at:)``): the disk store
///   checks `PRAGMA data_version` on its writer connection at every write transaction and at least
///   that often otherwise, and reloads the keys when another connection (another process, or another
///   ``ResponseCache`` on the same directory) committed. So another process's new entries are seen
///   within `trustInterval`; until then a lookup is a miss, which RFC 9111 always allows (the index
///   never makes a lookup serve anything: what is served is read from the database itself). A response
///   another process invalidates is still served from this process's memory tier until memory lets it
///   go: the memory tier does not watch the disk.
/// - ``Answer/mayBePresent`` may be wrong (a row evicted or invalidated by another process, a hash
///   collision): the disk is read, and finds nothing.
/// - ``Answer/unknown``: not loaded yet, or not checked lately; the disk is read (and the index checked).
///
/// Keys are counted as present from the moment their store is queued (before it reaches the disk),
/// and removed when an invalidation is queued; a disk read for a present key runs on the disk queue
/// after the queued writes, so it sees them.
struct DiskCacheIndex: Sendable {
    /// What the index says about one URL key.
    enum Answer: Equatable, Sendable {
        /// Nothing is stored for the key on disk.
        case absent
        /// Something may be stored: read the disk.
        case mayBePresent
        /// The index cannot say: read the disk.
        case unknown
    }

    /// How long after a check against the database a negative answer is trusted, in nanoseconds.
    let trustInterval: UInt64
    /// The hashes of the keys with rows on disk (or queued for it); `nil` until loaded.
    private var keys: Set<UInt64>?
    /// Stores queued but not yet written, by key hash: a reload keeps these keys.
    private var queuedStores: [UInt64: Int] = [:]
    /// When the index was last known to match the database.
    private var validatedAt: UInt64?

    /// An index not loaded yet.
    /// - Parameter trustInterval: Nanoseconds a negative answer is trusted after a check; one second by default.
    init(trustInterval: UInt64 = 1_000_000_000) {
        self.trustInterval = trustInterval
    }

    /// The hash the index files a URL key under (stable within the process only).
    static func hash(_ key: String) -> UInt64 {
        var hasher = Hasher()
        hasher.combine(key)
        return UInt64(bitPattern: Int64(hasher.finalize()))
    }

    /// Whether the disk may hold something for `key`, at monotonic time `now`.
    func answer(for key: String, now: UInt64) -> Answer {
        guard let keys else { return .unknown }
        if keys.contains(Self.hash(key)) { return .mayBePresent }
        guard let validatedAt, now >= validatedAt, now - validatedAt <= trustInterval else { return .unknown }
        return .absent
    }

    /// Whether the index should be checked against the database at `now` (a disk read is about to happen).
    func needsValidation(now: UInt64) -> Bool {
        guard keys != nil, let validatedAt, now >= validatedAt else { return true }
        return now - validatedAt > trustInterval
    }

    /// Whether the keys are loaded.
    var isLoaded: Bool { keys != nil }

    /// Number of keys held (for tests and statistics).
    var count: Int { keys?.count ?? 0 }

    // MARK: Events

    /// A store of `key` was queued for the disk.
    mutating func storeQueued(_ key: String) {
        let hash = Self.hash(key)
        keys?.insert(hash)
        queuedStores[hash, default: 0] += 1
    }

    /// A queued store of `key` was done (written, or given up).
    mutating func storeDone(_ key: String) {
        let hash = Self.hash(key)
        guard let count = queuedStores[hash] else { return }
        queuedStores[hash] = count > 1 ? count - 1 : nil
    }

    /// An invalidation of these keys was queued: after it, and before any later store, nothing is on
    /// disk for them.
    mutating func invalidationQueued(_ keys: [String]) {
        for key in keys { self.keys?.remove(Self.hash(key)) }
    }

    /// The last row of `key` left the disk (evicted, damaged, a variant that may not be written), as
    /// the database says after the change; a store still queued keeps the key.
    mutating func lastRowRemoved(_ key: String) {
        let hash = Self.hash(key)
        if queuedStores[hash] == nil { keys?.remove(hash) }
    }

    /// Everything was removed from the disk.
    mutating func removedAll() {
        if keys != nil { keys = Set(queuedStores.keys) }
    }

    /// The keys as the database holds them at `now` (plus those whose store is still queued).
    mutating func loaded(_ databaseKeys: some Sequence<String>, at now: UInt64) {
        var hashes = Set(queuedStores.keys)
        for key in databaseKeys { hashes.insert(Self.hash(key)) }
        keys = hashes
        validatedAt = now
    }

    /// The database was checked at `now` and no other connection had changed it.
    mutating func validated(at now: UInt64) {
        if keys != nil { validatedAt = now }
    }

    /// The database was closed or dropped: nothing is known until it is loaded again.
    mutating func forget() {
        keys = nil
        validatedAt = nil
    }
}
