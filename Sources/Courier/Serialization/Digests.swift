import Crypto
import Foundation

/// The package's hashes, all from swift-crypto: one hash library (issue 11, item 7).
///
/// The hex rendering is the one the hand-written SHA-256 used before it (64 lower-case hexadecimal
/// characters), so the digests already stored (cache index `bodyDigest`, outbox unique identifiers,
/// credential partitions) stay valid.
package enum Digests {
    /// SHA-256 of `string`'s UTF-8 bytes, as lowercase hex (for other targets of the package).
    package static func sha256Hex(of string: String) -> String {
        sha256Hex(Array(string.utf8))
    }

    /// SHA-256 of `data` as 64 lower-case hexadecimal characters.
    /// - Parameter data: The message bytes.
    /// - Returns: The lower-case hex digest.
    static func sha256Hex(_ data: some DataProtocol) -> String {
        hex(SHA256.hash(data: data))
    }

    /// MD5 of `data` as 32 lower-case hexadecimal characters (Digest authentication only).
    /// - Parameter data: The message bytes.
    /// - Returns: The lower-case hex digest.
    static func md5Hex(_ data: some DataProtocol) -> String {
        hex(Insecure.MD5.hash(data: data))
    }

    /// Lower-case hexadecimal rendering of `bytes`.
    /// - Parameter bytes: The bytes to render.
    /// - Returns: Two lower-case hex digits per byte.
    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            output.append(digits[Int(byte >> 4)])
            output.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: output, as: UTF8.self)
    }
}
