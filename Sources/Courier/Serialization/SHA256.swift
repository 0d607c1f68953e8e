import Foundation

/// A pure-Swift SHA-256 (FIPS 180-4) implementation.
///
/// One-shot: `SHA256.hexDigest(Array("abc".utf8))`.
/// Incremental:
/// ```swift
/// var hasher = SHA256()
/// hasher.update(chunk1)
/// hasher.update(chunk2)
/// let digest = hasher.finalize()
/// ```
struct SHA256: Sendable {
    /// The digest length in bytes.
    static let digestByteCount = 32
    /// The block length in bytes.
    static let blockByteCount = 64

    /// The eight working hash words H0...H7.
    private var state: [UInt32] = [
        0x6A09_E667, 0xBB67_AE85, 0x3C6E_F372, 0xA54F_F53A,
        0x510E_527F, 0x9B05_688C, 0x1F83_D9AB, 0x5BE0_CD19,
    ]
    /// Bytes of the current, incomplete block (always fewer than 64).
    private var buffer: [UInt8] = []
    /// Total number of message bytes processed so far (wrapping, as the standard allows < 2^64 bits).
    private var byteCount: UInt64 = 0

    /// Creates a hasher in its initial state.
    init() {
        buffer.reserveCapacity(Self.blockByteCount)
    }

    // MARK: One-shot

    /// Computes the SHA-256 digest of `data`.
    /// - Parameter data: The message bytes.
    /// - Returns: The 32-byte digest.
    static func hash(_ data: some Sequence<UInt8>) -> [UInt8] {
        var hasher = SHA256()
        let handled: Void? = data.withContiguousStorageIfAvailable { buffer in
            hasher.update(UnsafeRawBufferPointer(buffer))
        }
        if handled == nil {
            Array(data).withUnsafeBytes { hasher.update($0) }
        }
        return hasher.finalize()
    }

    /// Computes the SHA-256 digest of `data` as 64 lowercase hexadecimal characters.
    /// - Parameter data: The message bytes.
    /// - Returns: The lowercase hex digest.
    static func hexDigest(_ data: some Sequence<UInt8>) -> String {
        hex(hash(data))
    }

    /// Lowercase hexadecimal rendering of `bytes`.
    /// - Parameter bytes: The bytes to render.
    /// - Returns: Two lowercase hex digits per byte.
    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            output.append(digits[Int(byte >> 4)])
            output.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: output, as: UTF8.self)
    }

    // MARK: Incremental

    /// Feeds more message bytes into the hash.
    /// - Parameter bytes: The bytes to add; may be empty.
    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        byteCount &+= UInt64(bytes.count)
        var offset = 0

        if !buffer.isEmpty {
            let take = min(Self.blockByteCount - buffer.count, bytes.count)
            buffer.append(contentsOf: UnsafeRawBufferPointer(start: base, count: take))
            offset = take
            guard buffer.count == Self.blockByteCount else { return }
            buffer.withUnsafeBytes { block in
                if let blockBase = block.baseAddress {
                    Self.compress(&state, block: blockBase)
                }
            }
            buffer.removeAll(keepingCapacity: true)
        }

        while bytes.count - offset >= Self.blockByteCount {
            Self.compress(&state, block: base + offset)
            offset += Self.blockByteCount
        }

        if offset < bytes.count {
            buffer.append(contentsOf: UnsafeRawBufferPointer(start: base + offset, count: bytes.count - offset))
        }
    }

    /// Feeds the bytes of `data` into the hash.
    /// - Parameter data: The bytes to add.
    mutating func update(_ data: Data) {
        data.withUnsafeBytes { update($0) }
    }

    /// Applies the final padding and returns the digest. The hasher is consumed.
    /// - Returns: The 32-byte digest.
    consuming func finalize() -> [UInt8] {
        let bitLength = byteCount &* 8
        // 0x80, zeros up to 56 mod 64, then the 64-bit big-endian bit length.
        let zeroCount = (Self.blockByteCount + 55 - buffer.count) % Self.blockByteCount
        var padding: [UInt8] = [0x80]
        padding.append(contentsOf: repeatElement(0, count: zeroCount))
        for shift in stride(from: 56, through: 0, by: -8) {
            padding.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift)))
        }
        padding.withUnsafeBytes { update($0) }

        var digest: [UInt8] = []
        digest.reserveCapacity(Self.digestByteCount)
        for word in state {
            digest.append(UInt8(truncatingIfNeeded: word >> 24))
            digest.append(UInt8(truncatingIfNeeded: word >> 16))
            digest.append(UInt8(truncatingIfNeeded: word >> 8))
            digest.append(UInt8(truncatingIfNeeded: word))
        }
        return digest
    }

    // MARK: Compression

    /// The 64 round constants K (first 32 bits of the fractional parts of the cube roots of the first 64 primes).
    private static let roundConstants: [UInt32] = [
        0x428A_2F98, 0x7137_4491, 0xB5C0_FBCF, 0xE9B5_DBA5, 0x3956_C25B, 0x59F1_11F1, 0x923F_82A4, 0xAB1C_5ED5,
        0xD807_AA98, 0x1283_5B01, 0x2431_85BE, 0x550C_7DC3, 0x72BE_5D74, 0x80DE_B1FE, 0x9BDC_06A7, 0xC19B_F174,
        0xE49B_69C1, 0xEFBE_4786, 0x0FC1_9DC6, 0x240C_A1CC, 0x2DE9_2C6F, 0x4A74_84AA, 0x5CB0_A9DC, 0x76F9_88DA,
        0x983E_5152, 0xA831_C66D, 0xB003_27C8, 0xBF59_7FC7, 0xC6E0_0BF3, 0xD5A7_9147, 0x06CA_6351, 0x1429_2967,
        0x27B7_0A85, 0x2E1B_2138, 0x4D2C_6DFC, 0x5338_0D13, 0x650A_7354, 0x766A_0ABB, 0x81C2_C92E, 0x9272_2C85,
        0xA2BF_E8A1, 0xA81A_664B, 0xC24B_8B70, 0xC76C_51A3, 0xD192_E819, 0xD699_0624, 0xF40E_3585, 0x106A_A070,
        0x19A4_C116, 0x1E37_6C08, 0x2748_774C, 0x34B0_BCB5, 0x391C_0CB3, 0x4ED8_AA4A, 0x5B9C_CA4F, 0x682E_6FF3,
        0x748F_82EE, 0x78A5_636F, 0x84C8_7814, 0x8CC7_0208, 0x90BE_FFFA, 0xA450_6CEB, 0xBEF9_A3F7, 0xC671_78F2,
    ]

    /// `value` rotated right by `count` bits (0 < count < 32).
    @inline(__always)
    private static func rotr(_ value: UInt32, _ count: UInt32) -> UInt32 {
        (value >> count) | (value << (32 &- count))
    }

    /// Processes one 64-byte block starting at `block`, updating `state`.
    private static func compress(_ state: inout [UInt32], block: UnsafeRawPointer) {
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { w in
            for t in 0..<16 {
                w[t] = UInt32(bigEndian: block.loadUnaligned(fromByteOffset: t * 4, as: UInt32.self))
            }
            for t in 16..<64 {
                let s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3)
                let s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10)
                w[t] = w[t - 16] &+ s0 &+ w[t - 7] &+ s1
            }

            var a = state[0], b = state[1], c = state[2], d = state[3]
            var e = state[4], f = state[5], g = state[6], h = state[7]
            roundConstants.withUnsafeBufferPointer { k in
                for t in 0..<64 {
                    let sigma1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)
                    let choice = (e & f) ^ (~e & g)
                    let temp1 = h &+ sigma1 &+ choice &+ k[t] &+ w[t]
                    let sigma0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)
                    let majority = (a & b) ^ (a & c) ^ (b & c)
                    let temp2 = sigma0 &+ majority
                    h = g
                    g = f
                    f = e
                    e = d &+ temp1
                    d = c
                    c = b
                    b = a
                    a = temp1 &+ temp2
                }
            }
            state[0] &+= a; state[1] &+= b; state[2] &+= c; state[3] &+= d
            state[4] &+= e; state[5] &+= f; state[6] &+= g; state[7] &+= h
        }
    }
}
