import Foundation

/// Pre-compressed payloads and fixed bodies served by the test server.
///
/// The compressed bytes were generated once with Python's `gzip`/`zlib` modules and are
/// embedded as base64 so the server needs no zlib dependency. Every constant is a lazily
/// initialised, thread-safe `static let`, so each payload is decoded at most once.
enum Fixtures {
    /// `{"gzipped":true}` compressed with gzip
    /// (`gzip.compress(b'{"gzipped":true}', mtime=0)`).
    static let gzipJSON: [UInt8] = decode("H4sIAAAAAAACA6tWSq/KLChITVGyKikqTa0FAFOSmIsQAAAA")

    /// `{"deflated":true}` compressed with zlib-wrapped deflate (`zlib.compress(...)`).
    static let deflateJSON: [UInt8] = decode("eJyrVkpJTctJLElNUbIqKSpNrQUAOFgGcA==")

    /// Number of uncompressed bytes in ``gzipBomb``: 16 MiB of zeros.
    static let gzipBombUncompressedSize = 16 << 20

    /// A gzip stream that inflates to 16 MiB of zero bytes (about 16 KiB compressed).
    ///
    /// Built from a raw-deflate block that compresses 1 MiB of zeros and ends with a full
    /// flush (so it is byte aligned and independent of earlier data), repeated 16 times,
    /// followed by an empty final block and the gzip trailer (CRC-32 and size of the
    /// 16 MiB of zeros). Python: `c = zlib.compressobj(9, zlib.DEFLATED, -15);
    /// c.compress(bytes(1 << 20)) + c.flush(zlib.Z_FULL_FLUSH)`.
    static let gzipBomb: [UInt8] = {
        let header: [UInt8] = [0x1F, 0x8B, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03]
        let megabyteOfZeros = decode(zeroMegabyteDeflateBlock)
        let finalEmptyBlock: [UInt8] = [0x03, 0x00]
        let crc32: UInt32 = 0xA47C_A14A  // zlib.crc32(bytes(16 << 20))
        let size = UInt32(truncatingIfNeeded: gzipBombUncompressedSize)
        var bytes = header
        bytes.reserveCapacity(header.count + 16 * megabyteOfZeros.count + 10)
        for _ in 0..<16 {
            bytes += megabyteOfZeros
        }
        bytes += finalEmptyBlock
        bytes += littleEndianBytes(crc32) + littleEndianBytes(size)
        return bytes
    }()

    /// Base64 of one full-flushed raw-deflate block holding 1 MiB of zeros.
    private static let zeroMegabyteDeflateBlock = """
        7MExAQAAAMKg9U9tCF+gAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA
        AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA
        AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA
        AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA
        AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA
        AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA
        AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA
        AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA
        AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA
        AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA
        AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA
        AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA
        AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA
        AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA+AwAA//8=
        """

    /// Body of `/json`.
    static let json = #"{"name":"Courier","version":1,"tags":["a","b"],"nested":{"ok":true}}"#

    /// Body of `/invalid-json`.
    static let invalidJSON = #"{"name": "Courier", broken"#

    /// Body of `/xml`.
    static let xml = #"<?xml version="1.0"?><rates base="EUR"><rate currency="USD">1.08</rate>"#
        + #"<rate currency="GBP">0.85</rate></rates>"#

    /// Body of `/latin1`: "café" encoded in ISO-8859-1.
    static let latin1: [UInt8] = [0x63, 0x61, 0x66, 0xE9]

    /// Fixed `Last-Modified` value of `/cache/{seconds}`.
    static let lastModified = "Wed, 21 Oct 2015 07:28:00 GMT"

    /// Decodes base64, ignoring line breaks and indentation.
    private static func decode(_ base64: String) -> [UInt8] {
        Data(base64Encoded: base64, options: .ignoreUnknownCharacters).map { [UInt8]($0) } ?? []
    }

    private static func littleEndianBytes(_ value: UInt32) -> [UInt8] {
        (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
    }
}
