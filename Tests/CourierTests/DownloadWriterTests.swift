import Foundation
import NIOCore
import Testing
@testable import Courier

/// The download writer on its own (no transport): one megabyte written while the next is gathered,
/// every byte in its place, and a failed write counted as what is really on disk.
@Suite struct DownloadWriterTests {
    /// `count` bytes of a pattern that shifts with the offset (a misplaced or repeated part shows).
    static func bytes(_ count: Int, from offset: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: ($0 + offset) &* 31 &+ ($0 + offset) >> 11) }
    }

    /// Chunk sizes as a network delivers them: small ones, one exactly a write, larger ones.
    static let chunkSizes = [1, 16_384, 65_536, 1 << 20, 3 << 20, 7, 300_000, 2 << 20, 65_536, 999_999, 12]

    @Test func everyByteLandsInOrderWhileTheNextMegabyteIsGathered() async throws {
        let folder = try ResumableDownloadTests.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent("out.bin")
        var writer = try await DownloadWriter.open([destination])
        var expected: [UInt8] = []
        for size in Self.chunkSizes {
            let chunk = Self.bytes(size, from: expected.count)
            expected += chunk
            try await writer.write(ByteBuffer(bytes: chunk))
            #expect(writer.length <= Int64(expected.count), "the length counts only finished writes")
        }
        try await writer.flush()
        #expect(writer.length == Int64(expected.count), "after a flush every byte given is counted")
        try await writer.finish()
        #expect(try Data(contentsOf: destination) == Data(expected))
        #expect(!FileManager.default.fileExists(atPath: DownloadWriter.partialURL(for: destination).path))
    }

    @Test func anAbandonedWriterWaitsForItsWriteAndRemovesThePartialFile() async throws {
        let folder = try ResumableDownloadTests.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent("out.bin")
        var writer = try await DownloadWriter.open([destination])
        try await writer.write(ByteBuffer(bytes: Self.bytes(3 << 20, from: 0)))   // a write left in flight
        let kept = await writer.abandon(keep: false)
        #expect(kept == 3 << 20)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
    }

    @Test(.enabled(if: TemporaryMount.isPermitted, TransferAcceptanceTests.cannotMount))
    func aFailedWriteIsThrownAndAKeptFileCountsOnlyTheBytesOnDisk() async throws {
        let disk = try TemporaryMount(size: "2m", readOnly: false)
        defer { disk.unmount() }
        let destination = disk.folder.appendingPathComponent("out.bin")
        var writer = try await DownloadWriter.open([destination])
        var given = 0
        var failure: NetworkError?
        do {
            while given < 8 << 20 {
                try await writer.write(ByteBuffer(bytes: Self.bytes(256 << 10, from: given)))
                given += 256 << 10
            }
            try await writer.flush()
        } catch {
            failure = error
        }
        #expect(failure?.code == .fileUnavailable)
        #expect(failure?.message.contains("the disk is full") == true, "\(String(describing: failure))")

        let kept = await writer.abandon(keep: true)
        let partial = DownloadWriter.partialURL(for: destination)
        let onDisk = try Data(contentsOf: partial)
        #expect(kept > 0 && kept < Int64(given), "kept \(kept) of \(given)")
        #expect(Int64(onDisk.count) >= kept, "the file holds at least what is counted")
        #expect(onDisk.prefix(Int(kept)) == Data(Self.bytes(Int(kept), from: 0)), "no hole or misplaced part before what is counted")
    }
}
