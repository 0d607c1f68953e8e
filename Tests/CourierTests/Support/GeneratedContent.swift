import Foundation
import NIOCore

/// A large deterministic body that is never held whole in memory: a block of random bytes (SplitMix64
/// from `seed`) of a prime length, repeated. A prime period means that a byte written at the wrong offset
/// (a resume that appends at N ± a power of two, a chunk written twice) does not match by accident.
struct GeneratedContent: Sendable {
    /// The period: the largest prime below 1 MiB.
    static let period = 1_048_573

    let size: Int
    let seed: UInt64
    private let block: [UInt8]

    init(size: Int, seed: UInt64 = 0xC0_FFEE) {
        self.size = size
        self.seed = seed
        var generator = SplitMix64(seed: seed)
        var block = [UInt8](repeating: 0, count: Self.period + 8)
        var index = 0
        while index < block.count {
            var word = generator.next()
            for _ in 0..<8 where index < block.count {
                block[index] = UInt8(truncatingIfNeeded: word)
                word >>= 8
                index += 1
            }
        }
        self.block = Array(block.prefix(Self.period))
    }

    /// Writes the `count` bytes from `offset` into `buffer`.
    func write(offset: Int, count: Int, into buffer: inout ByteBuffer) {
        precondition(offset >= 0 && count >= 0 && offset + count <= size, "outside the content")
        var position = offset % Self.period
        var remaining = count
        block.withUnsafeBytes { source in
            while remaining > 0 {
                let take = min(remaining, Self.period - position)
                buffer.writeBytes(UnsafeRawBufferPointer(rebasing: source[position..<(position + take)]))
                remaining -= take
                position = 0
            }
        }
    }

    /// The `count` bytes from `offset`.
    func bytes(offset: Int = 0, count: Int) -> Data {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(count)
        write(offset: offset, count: count, into: &buffer)
        return Data(buffer.readableBytesView)
    }

    /// Writes the whole content to `url`, a few megabytes at a time.
    private func writeNow(to url: URL) throws {
        _ = FileManager.default.createFile(atPath: url.path, contents: nil)
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        var offset = 0
        while offset < size {
            let count = min(4 << 20, size - offset)
            try handle.write(contentsOf: bytes(offset: offset, count: count))
            offset += count
        }
    }

    /// Whether the file at `url` holds exactly this content (compared a few megabytes at a time).
    /// - Returns: `nil` when it does, else where it first differs (or its length, when that is wrong).
    private func mismatchNow(in url: URL) throws -> String? {
        let length = try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int ?? -1
        guard length == size else { return "\(url.lastPathComponent) has \(length) bytes, not \(size)" }
        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }
        var offset = 0
        while offset < size {
            let count = min(4 << 20, size - offset)
            let actual = try handle.read(upToCount: count) ?? Data()
            let expected = bytes(offset: offset, count: count)
            if actual != expected {
                let first = zip(actual, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? actual.count
                return "\(url.lastPathComponent) differs from byte \(offset + first)"
            }
            offset += count
        }
        return nil
    }
}

extension GeneratedContent {
    /// Writes the content to `url`, on a dispatch queue: hundreds of megabytes generated and written on
    /// one of the cooperative pool's two threads (slower still under the thread sanitizer) would starve
    /// every other test running meanwhile.
    func write(to url: URL) async throws {
        try await Self.offPool { try writeNow(to: url) }
    }

    /// Where `url` differs from the content, if anywhere (read off the cooperative pool, as ``write(to:)``).
    func mismatch(in url: URL) async throws -> String? {
        try await Self.offPool { try mismatchNow(in: url) }
    }

    private static func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try work() }) }
        }
    }
}
