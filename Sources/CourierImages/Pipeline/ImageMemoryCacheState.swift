import Courier

/// The decoded-image memory cache's contents and eviction order, as a pure value: least recently used
/// out first, within a count and a byte limit.
struct ImageMemoryCacheState<Key: Hashable & Sendable>: Sendable {
    private var images: [Key: CourierImage] = [:]
    private var lru: MemoryLRU<Key>
    private(set) var countLimit: Int

    init(countLimit: Int, byteLimit: Int) {
        self.countLimit = max(0, countLimit)
        self.lru = MemoryLRU(capacity: byteLimit)
    }

    var count: Int { images.count }
    var totalBytes: Int { lru.totalCost }
    var byteLimit: Int { lru.capacity }

    /// The image of `key`, marked most recently used.
    mutating func image(for key: Key) -> CourierImage? {
        guard let image = images[key] else { return nil }
        lru.touch(key)
        return image
    }

    /// Stores `image` (an image larger than the whole byte limit is not kept) and evicts what no longer fits.
    mutating func insert(_ image: CourierImage, for key: Key) {
        guard image.byteCount <= lru.capacity, countLimit > 0 else { return }
        images[key] = image
        for evicted in lru.insert(key, cost: image.byteCount) { images[evicted] = nil }
        while images.count > countLimit, let oldest = lru.removeLeastRecent() { images[oldest] = nil }
    }

    /// Forgets `key`.
    mutating func remove(_ key: Key) {
        images[key] = nil
        lru.remove(key)
    }

    /// Forgets every image whose key matches.
    mutating func removeAll(where matches: (Key) -> Bool) {
        for key in images.keys where matches(key) { remove(key) }
    }

    /// Evicts least recently used images until at most `bytes` are held.
    mutating func trim(toBytes bytes: Int) {
        for evicted in lru.trim(to: bytes) { images[evicted] = nil }
    }
}
