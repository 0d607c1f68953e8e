import Foundation
import HTTPTypes

/// The malloc'd bytes a response held in the memory tier really costs: its body's storage, its header
/// fields (the array and every string), its URL, and the tier's own bookkeeping for its key (the
/// variants table, the LRU's table and recency queue), so that ``ResponseCache``'s `memoryCapacity`
/// bounds the memory the process uses, not only the body and header bytes (for small responses the
/// rest is most of it).
///
/// Estimates from the layouts of the standard library, Foundation and glibc's malloc (an 8-byte header
/// per block, 16-byte granularity, 32 bytes at least), rounded up; measured against `mallinfo2` by the
/// benchmark's "Cache miss-and-store" row.
enum CacheMemoryCost {
    /// A malloc'd block of `size` bytes.
    static func block(_ size: Int) -> Int { max(32, (size + 8 + 15) & ~15) }

    /// A native string's storage: none up to 15 UTF-8 bytes (kept inline), else an object with a
    /// 32-byte header. (Strings bridged from elsewhere may share storage; counting them whole errs high.)
    static func string(_ string: String) -> Int {
        let count = string.utf8.count
        return count <= 15 ? 0 : block(32 + count + 1)
    }

    /// A body's storage: inline up to 14 bytes, else Foundation's storage object and its bytes.
    static func data(_ data: Data) -> Int {
        data.count <= 14 ? 0 : block(dataStorageObject) + block(data.count)
    }

    /// An array's storage for `count` elements of `stride` bytes; growth by doubling may have left room
    /// for up to twice as many, counted as the next power of two.
    static func array(count: Int, stride: Int) -> Int {
        guard count > 0 else { return 0 }
        let capacity = count <= 1 ? 1 : 1 << (Int.bitWidth - (count - 1).leadingZeroBitCount)
        return block(32 + capacity * stride)
    }

    /// A dictionary's storage per element: its key, value and metadata in a table at most three
    /// quarters full (kept up to twice as large after growth), counted at two and a half slots.
    static func tableSlot(keyStride: Int, valueStride: Int) -> Int { (keyStride + valueStride + 1) * 5 / 2 }

    /// What the tier holds for one stored response, apart from its key's bookkeeping.
    static func entry(_ entry: CachedResponseEntry) -> Int {
        var bytes = MemoryLayout<CachedResponseEntry>.stride + data(entry.body) + url(entry.url) + headers(entry.headers)
        bytes += string(entry.status.reasonPhrase) + (entry.credentialPartition.map(string) ?? 0) + (entry.cacheKey.map(string) ?? 0)
        // The parsed Cache-Control kept with the entry (its directives).
        let directives = entry.facts.control.directives
        if !directives.isEmpty {
            bytes += array(count: directives.count, stride: MemoryLayout<CacheControl.Directive>.stride)
            for directive in directives { bytes += string(directive.name) + (directive.argument.map(string) ?? 0) }
        }
        if !entry.varySelectedHeaders.isEmpty {
            bytes += block(64 + entry.varySelectedHeaders.count * tableSlot(keyStride: 16, valueStride: 16))
            for (name, value) in entry.varySelectedHeaders { bytes += string(name) + string(value) }
        }
        return bytes
    }

    /// The bookkeeping for one URL key holding `variants` responses: its slots in the variants table
    /// and the LRU's table, its recency queue element (up to two, the queue being compacted lazily),
    /// the key string and the variants array.
    static func key(_ key: String, variants: Int) -> Int {
        let stringStride = MemoryLayout<String>.stride
        return string(key) + array(count: variants, stride: MemoryLayout<CachedResponseEntry>.stride) - variants * MemoryLayout<CachedResponseEntry>.stride
            + tableSlot(keyStride: stringStride, valueStride: MemoryLayout<[CachedResponseEntry]>.stride)
            + tableSlot(keyStride: stringStride, valueStride: 16) + 2 * (stringStride + 8)
    }

    /// Header fields: the array and each field's name (as written and canonical) and value.
    static func headers(_ fields: HTTPFields) -> Int {
        fields.reduce(array(count: fields.count, stride: MemoryLayout<HTTPField>.stride)) {
            $0 + string($1.name.rawName) + string($1.name.canonicalName) + string($1.value)
        }
    }

    /// A URL: Foundation's URL object and its parse information, holding the string.
    static func url(_ url: URL) -> Int { urlObjects + string(url.absoluteString) }

    /// Foundation's storage object behind a `Data` of more than 14 bytes.
    static let dataStorageObject = 64
    /// The objects behind a `URL` besides its string (calibrated with `mallinfo2`).
    static let urlObjects = 256
}
