import Foundation
import Testing
@testable import Courier

@Suite("SHA256")
struct SHA256Tests {
    @Test func emptyMessage() {
        #expect(SHA256.hexDigest([UInt8]()) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    @Test func abc() {
        #expect(SHA256.hexDigest(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test func twoBlockMessage448Bits() {
        let message = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
        #expect(SHA256.hexDigest(Array(message.utf8)) == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    }

    @Test func nist896BitMessage() {
        let message = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"
        #expect(SHA256.hexDigest(Array(message.utf8)) == "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1")
    }

    @Test func oneMillionA() {
        let message = [UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)
        #expect(SHA256.hexDigest(message) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test func oneMillionAIncrementallyFromData() {
        var hasher = SHA256()
        let chunk = Data(repeating: UInt8(ascii: "a"), count: 1000)
        for _ in 0..<1000 { hasher.update(chunk) }
        #expect(SHA256.hex(hasher.finalize()) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test func paddingBoundaryLengths() {
        // Known digests for "a" repeated 55, 56, 63, 64 times (padding edge cases).
        let expected: [Int: String] = [
            55: "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318",
            56: "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a",
            63: "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34",
            64: "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb",
        ]
        for (count, digest) in expected {
            #expect(SHA256.hexDigest([UInt8](repeating: 0x61, count: count)) == digest, "length \(count)")
        }
    }

    @Test func digestIs32Bytes() {
        let digest = SHA256.hash(Array("abc".utf8))
        #expect(digest.count == 32)
        #expect(digest.prefix(4) == [0xBA, 0x78, 0x16, 0xBF])
    }

    @Test func nonContiguousSequencesHashTheSame() {
        let lazy = "abc".utf8.lazy.map { $0 }
        #expect(SHA256.hexDigest(lazy) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hexDigest(Data("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hexDigest(stride(from: UInt8(0), to: 0, by: 1)) == SHA256.hexDigest([UInt8]()))
    }

    @Test func incrementalMatchesOneShotForRandomChunkings() {
        var generator = SplitMix64(seed: 0x5EED)
        for _ in 0..<40 {
            let length = Int(generator.next() % 700)
            let message = (0..<length).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            let expected = SHA256.hash(message)

            var hasher = SHA256()
            var offset = 0
            while offset < message.count {
                let size = min(Int(generator.next() % 150), message.count - offset)
                message[offset..<(offset + size)].withUnsafeBytes { hasher.update($0) }
                offset += size
            }
            hasher.update(UnsafeRawBufferPointer(start: nil, count: 0))
            #expect(hasher.finalize() == expected, "length \(length)")
        }
    }

    @Test func byteAtATimeMatchesOneShot() {
        let message = Array("The quick brown fox jumps over the lazy dog".utf8)
        var hasher = SHA256()
        for byte in message { hasher.update(Data([byte])) }
        #expect(SHA256.hex(hasher.finalize()) == "d7a8fbb307d7809469ca9abcb0082e4f8d5651e46d3cdb762d02d0bf37c9e592")
    }
}
