import Foundation

/// Reads an SQLite write-ahead log the way SQLite's recovery does, to tell what it would silently
/// drop: SQLite keeps the frames up to the first one whose checksum fails and ignores every frame
/// after, so a damaged frame in the middle of the log loses the transactions committed after it
/// without a word. (Format: <https://www.sqlite.org/fileformat2.html#walformat>.)
///
/// A log that simply ends early (a torn write of a transaction that never committed) or holds frames
/// of an earlier generation (other salts) is normal. Damage is: a header that does not check out in
/// a log that has frames, or a commit frame of the current generation after the first frame that fails.
enum OutboxWAL {
    /// What the log loses, or `nil` when it is sound (or absent).
    static func damage(at url: URL) -> String? {
        guard let data = try? Data(contentsOf: url), data.count > 32 else { return nil }
        return damage(in: [UInt8](data))
    }

    static func damage(in bytes: [UInt8]) -> String? {
        func word(_ offset: Int) -> UInt32 {
            UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
        }
        let magic = word(0)
        let pageSizeField = Int(word(8))
        let pageSize = pageSizeField == 1 ? 65_536 : pageSizeField
        let frameSize = 24 + pageSize
        guard magic & 0xFFFF_FFFE == 0x377F_0682, word(4) == 3_007_000,
            pageSize >= 512, pageSize <= 65_536, pageSize & (pageSize - 1) == 0
        else {
            return "its header is damaged (\(bytes.count) bytes of frames are ignored)"
        }
        let bigEndian = magic & 1 == 1
        func checksum(_ start: Int, _ count: Int, _ seed: (UInt32, UInt32)) -> (UInt32, UInt32) {
            var (s1, s2) = seed
            var offset = start
            while offset < start + count {
                let (x0, x1): (UInt32, UInt32)
                if bigEndian {
                    (x0, x1) = (word(offset), word(offset + 4))
                } else {
                    (x0, x1) = (word(offset).byteSwapped, word(offset + 4).byteSwapped)
                }
                s1 = s1 &+ x0 &+ s2
                s2 = s2 &+ x1 &+ s1
                offset += 8
            }
            return (s1, s2)
        }
        var running = checksum(0, 24, (0, 0))
        guard running == (word(24), word(28)) else {
            return "its header fails its checksum (\(bytes.count) bytes of frames are ignored)"
        }
        let salts = (word(16), word(20))
        let frames = (bytes.count - 32) / frameSize
        var firstBad: Int?
        var lostCommits = 0
        for index in 0..<frames {
            let offset = 32 + index * frameSize
            guard (word(offset + 8), word(offset + 12)) == salts else {
                if firstBad == nil { break }   // the end of this generation: the rest is old
                continue
            }
            let isCommit = word(offset + 4) != 0
            if firstBad == nil {
                var sum = checksum(offset, 8, running)
                sum = checksum(offset + 24, pageSize, sum)
                if sum == (word(offset + 16), word(offset + 20)) && word(offset) != 0 {
                    running = sum
                    continue
                }
                firstBad = index
            }
            if isCommit { lostCommits += 1 }
        }
        guard let firstBad, lostCommits > 0 else { return nil }
        return "frame \(firstBad + 1) of \(frames) fails its checksum, and \(lostCommits) committed "
            + "transaction\(lostCommits == 1 ? "" : "s") from there on would be dropped"
    }
}
