import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import Testing
@testable import Courier

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Tier 2: what a download does to the file system it writes to (issue 23, part B): links and other
/// non-regular files planted at the partial file or its record, modes, the same file named twice or
/// spelled two ways, another writer holding the partial file. Over a fake origin.
@Suite("Downloads and the file system")
struct TransferTrustTests {
    /// A body of `size` bytes of `fill`, with a strong entity tag (so it can be resumed).
    static func origin(size: Int = 300_000, fill: UInt8 = 0x41, delay: Duration? = nil) -> FakeTransport {
        FakeTransport { request in
            let byte = request.url.path.hasSuffix("/b") ? 0x42 : fill
            let body = Data(repeating: byte, count: size)
            return FakeTransport.reply(status: 200, headers: [.eTag: "\"v1\"", .contentLength: String(size)], data: body,
                                       parts: 10, delay: delay)
        }
    }

    static let victimText = Data("the victim's own bytes\n".utf8)

    /// A folder with `victim.txt`; removed after `body`.
    static func withFolder(_ body: (URL, URL) async throws -> Void) async throws {
        try await TransferTestSupport.withTemporaryDirectory { folder in
            let victim = folder.appendingPathComponent("victim.txt")
            try victimText.write(to: victim)
            try await body(folder, victim)
        }
    }

    static func mode(of url: URL) -> mode_t? {
        var info = stat()
        guard lstat(url.path, &info) == 0 else { return nil }
        return info.st_mode & 0o7777
    }

    // MARK: B1: links and non-regular files at the partial file and the record

    @Test(arguments: [false, true])
    func aSymbolicLinkAtThePartialFileIsNotFollowed(resumable: Bool) async throws {
        try await Self.withFolder { (folder: URL, victim: URL) async throws in
            let out = folder.appendingPathComponent("out.bin")
            try FileManager.default.createSymbolicLink(at: DownloadWriter.partialURL(for: out), withDestinationURL: victim)
            let engine = NetworkEngine.fake(Self.origin())
            let error = await failure(of: engine.operation(path: "file").download(to: out, resumable: resumable))
            #expect(error?.code == .fileUnavailable, "\(String(describing: error))")
            #expect(try Data(contentsOf: victim) == Self.victimText, "the victim is untouched")
            #expect(!FileManager.default.fileExists(atPath: out.path))
        }
    }

    @Test func aHardLinkAtThePartialFileIsNotWrittenThrough() async throws {
        try await Self.withFolder { (folder: URL, victim: URL) async throws in
            let out = folder.appendingPathComponent("out.bin")
            #expect(link(victim.path, DownloadWriter.partialURL(for: out).path) == 0)
            let engine = NetworkEngine.fake(Self.origin())
            let error = await failure(of: engine.operation(path: "file").download(to: out))
            #expect(error?.code == .fileUnavailable, "\(String(describing: error))")
            #expect(try Data(contentsOf: victim) == Self.victimText)
        }
    }

    @Test func aSymbolicLinkAtTheRecordIsRefused() async throws {
        try await Self.withFolder { (folder: URL, victim: URL) async throws in
            let out = folder.appendingPathComponent("out.bin")
            let store = ResumeRecordStore(destination: out)
            try Data(repeating: 0x41, count: 1000).write(to: store.partialURL)
            try FileManager.default.createSymbolicLink(at: store.recordURL, withDestinationURL: victim)
            let engine = NetworkEngine.fake(Self.origin())
            let error = await failure(of: engine.operation(path: "file").download(to: out, resumable: true))
            #expect(error?.code == .fileUnavailable, "\(String(describing: error))")
            #expect(try Data(contentsOf: victim) == Self.victimText)
            #expect(await store.read() == nil, "a link is not read through")
        }
    }

    @Test func aRecordLinkedToDevZeroIsNotReadWithoutBound() async throws {
        try await Self.withFolder { (folder: URL, _: URL) async throws in
            let out = folder.appendingPathComponent("out.bin")
            let store = ResumeRecordStore(destination: out)
            try FileManager.default.createSymbolicLink(atPath: store.recordURL.path, withDestinationPath: "/dev/zero")
            #expect(await store.read() == nil)
            let engine = NetworkEngine.fake(Self.origin())
            let error = await failure(of: engine.operation(path: "file").download(to: out, resumable: true))
            #expect(error?.code == .fileUnavailable, "\(String(describing: error))")
        }
    }

    @Test func aRecordThatIsAFIFODoesNotHang() async throws {
        try await Self.withFolder { (folder: URL, _: URL) async throws in
            let out = folder.appendingPathComponent("out.bin")
            let store = ResumeRecordStore(destination: out)
            #expect(mkfifo(store.recordURL.path, 0o600) == 0)
            #expect(await store.read() == nil, "read at once, not waiting for a writer")
            try Data(repeating: 0x41, count: 1000).write(to: store.partialURL)
            let engine = NetworkEngine.fake(Self.origin())
            let error = await failure(of: engine.operation(path: "file").download(to: out, resumable: true))
            #expect(error?.code == .fileUnavailable, "\(String(describing: error))")
        }
    }

    // MARK: B7: modes

    @Test func replacingAFileKeepsItsModeAndPartialsAreOwnerOnly() async throws {
        try await Self.withFolder { (folder: URL, _: URL) async throws in
            let out = folder.appendingPathComponent("secret.bin")
            try Data("old".utf8).write(to: out)
            #expect(chmod(out.path, 0o600) == 0)
            let engine = NetworkEngine.fake(Self.origin())
            _ = try await engine.send(engine.operation(path: "file").download(to: out))
            #expect(Self.mode(of: out) == 0o600, "the replaced file's mode is kept")
            #expect(try Data(contentsOf: out).count == 300_000)

            // An interrupted resumable download keeps its partial file and record: both owner-only.
            let dropping = FakeTransport { _ in
                FakeTransport.reply(status: 200, headers: [.eTag: "\"v1\"", .contentLength: "300000"],
                                    data: Data(repeating: 1, count: 100_000), parts: 4, failure: NetworkError(.connectionLost, "dropped"))
            }
            let fresh = folder.appendingPathComponent("fresh.bin")
            let kept = await failure(of: NetworkEngine.fake(dropping).operation(path: "file").download(to: fresh, resumable: true))
            #expect(kept?.code == .connectionLost)
            let store = ResumeRecordStore(destination: fresh)
            #expect(Self.mode(of: store.partialURL) == 0o600)
            #expect(Self.mode(of: store.recordURL) == 0o600)
            _ = try await engine.send(engine.operation(path: "file").download(to: fresh, resumable: true))
            #expect(Self.mode(of: fresh) == 0o666 & ~PartialFile.creationMask, "a new file gets the usual mode")
        }
    }

    @Test func thePartialFileIsOwnerOnlyWhileDownloading() async throws {
        try await Self.withFolder { (folder: URL, _: URL) async throws in
            let out = folder.appendingPathComponent("slow.bin")
            let engine = NetworkEngine.fake(Self.origin(delay: .milliseconds(100)))
            let op = engine.operation(path: "file").download(to: out)
            engine.enqueue(op)
            let partial = DownloadWriter.partialURL(for: out)
            #expect(await eventually { FileManager.default.fileExists(atPath: partial.path) })
            #expect(Self.mode(of: partial) == 0o600)
            _ = try await op.response()
        }
    }

    // MARK: B11: the same destination twice

    @Test func theSameDestinationTwiceIsWrittenOnce() async throws {
        try await Self.withFolder { (folder: URL, _: URL) async throws in
            let out = folder.appendingPathComponent("twice.bin")
            let engine = NetworkEngine.fake(Self.origin())
            let response = try await engine.send(engine.operation(path: "file").download(to: [out, out]))
            #expect(response.statusCode == 200)
            #expect(try Data(contentsOf: out) == Data(repeating: 0x41, count: 300_000))
            #expect(Set(try FileManager.default.contentsOfDirectory(atPath: folder.path)) == ["victim.txt", "twice.bin"])
        }
    }

    // MARK: B2: one file spelled two ways, another writer

    @Test func aSymlinkedFolderIsTheSameDestination() async throws {
        try await Self.withFolder { (folder: URL, _: URL) async throws in
            let real = folder.appendingPathComponent("real"), link = folder.appendingPathComponent("link")
            try FileManager.default.createDirectory(at: real, withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(at: link, withDestinationURL: real)
            #expect(DestinationLocks.key(for: real.appendingPathComponent("out.bin")) == DestinationLocks.key(for: link.appendingPathComponent("out.bin")))
            let engine = NetworkEngine.fake(Self.origin(size: 3 << 20, delay: .milliseconds(20)))
            let a = engine.operation(path: "a").download(to: real.appendingPathComponent("out.bin"))
            let b = engine.operation(path: "b").download(to: link.appendingPathComponent("out.bin"))
            engine.enqueue(a)
            engine.enqueue(b)
            let results = [await failure(of: a), await failure(of: b)]
            #expect(results.allSatisfy { $0 == nil }, "one waits for the other: \(results)")
            let bytes = try Data(contentsOf: real.appendingPathComponent("out.bin"))
            #expect(bytes.count == 3 << 20)
            #expect(bytes == Data(repeating: 0x41, count: 3 << 20) || bytes == Data(repeating: 0x42, count: 3 << 20), "one body, whole")
        }
    }

    /// Another process holding the partial file (its `flock`; a lock taken through another open file
    /// excludes this process the same way) is refused, and its partial file is neither truncated,
    /// resized nor removed.
    @Test(arguments: [false, true])
    func aPartialFileLockedByAnotherWriterIsLeftAlone(resumable: Bool) async throws {
        try await Self.withFolder { (folder: URL, _: URL) async throws in
            let out = folder.appendingPathComponent("busy.bin")
            let partial = DownloadWriter.partialURL(for: out)
            let theirs = Data(repeating: 0x5A, count: 12_345)
            try theirs.write(to: partial)
            let descriptor = open(partial.path, O_RDWR)
            #expect(descriptor >= 0 && flock(descriptor, LOCK_EX | LOCK_NB) == 0)
            defer { close(descriptor) }
            let engine = NetworkEngine.fake(Self.origin())
            let error = await failure(of: engine.operation(path: "file").download(to: out, resumable: resumable))
            #expect(error?.code == .fileUnavailable && error?.message.contains("busy") == true, "\(String(describing: error))")
            #expect(try Data(contentsOf: partial) == theirs, "not truncated, resized or removed")
            #expect(!FileManager.default.fileExists(atPath: out.path))
        }
    }

    // MARK: B8: long names

    @Test func sidecarNamesFitNameMaxAndStayDistinct() {
        let short = URL(fileURLWithPath: "/d/movie.mp4")
        #expect(PartialFileNames.partialURL(for: short).lastPathComponent == ".movie.mp4.courier-partial")
        #expect(PartialFileNames.recordURL(for: short).lastPathComponent == ".movie.mp4.courier-partial.json")
        let long = String(repeating: "é", count: 120) + ".bin"   // 244 bytes
        let other = String(repeating: "é", count: 120) + ".bim"
        for name in [long, other, String(repeating: "n", count: 255)] {
            let url = URL(fileURLWithPath: "/d").appendingPathComponent(name)
            let names = [PartialFileNames.partialURL(for: url), PartialFileNames.recordURL(for: url),
                         PartialFileNames.recordTemporaryURL(for: url, random: String(repeating: "r", count: 12)),
                         PartialFileNames.copyURL(for: url, random: String(repeating: "r", count: 12))].map(\.lastPathComponent)
            #expect(names.allSatisfy { $0.utf8.count <= 255 }, "\(names.map(\.utf8.count))")
        }
        #expect(PartialFileNames.stem(of: long) != PartialFileNames.stem(of: other))
    }

    @Test func aDestinationOf250BytesDownloadsAndResumes() async throws {
        try await Self.withFolder { (folder: URL, _: URL) async throws in
            let out = folder.appendingPathComponent(String(repeating: "n", count: 246) + ".bin")
            let dropping = FakeTransport { _ in
                FakeTransport.reply(status: 200, headers: [.eTag: "\"v1\"", .contentLength: "300000"],
                                    data: Data(repeating: 0x41, count: 100_000), parts: 4, failure: NetworkError(.connectionLost, "dropped"))
            }
            let kept = await failure(of: NetworkEngine.fake(dropping).operation(path: "file").download(to: out, resumable: true))
            #expect(kept?.code == .connectionLost, "\(String(describing: kept))")
            let store = ResumeRecordStore(destination: out)
            #expect(await store.partialLength() == 100_000)
            #expect(await store.read()?.bytesOnDisk == 100_000)
            let transport = Self.origin()
            let engine = NetworkEngine.fake(transport)
            let response = try await engine.send(engine.operation(path: "file").download(to: out, resumable: true))
            #expect(response.statusCode == 200)
            #expect(try Data(contentsOf: out).count == 300_000)
            #expect(Set(try FileManager.default.contentsOfDirectory(atPath: folder.path)) == ["victim.txt", out.lastPathComponent])
        }
    }

    // MARK: a rename that fails

    @Test func aRenameThatFailsLeavesNoPartialAndTheNextDownloadWorks() async throws {
        try await Self.withFolder { (folder: URL, _: URL) async throws in
            let out = folder.appendingPathComponent("taken")
            try FileManager.default.createDirectory(at: out.appendingPathComponent("inside"), withIntermediateDirectories: true)
            let engine = NetworkEngine.fake(Self.origin())
            let error = await failure(of: engine.operation(path: "file").download(to: out))
            #expect(error?.code == .fileUnavailable, "\(String(describing: error))")
            #expect(!FileManager.default.fileExists(atPath: DownloadWriter.partialURL(for: out).path), "the partial is removed")
            try FileManager.default.removeItem(at: out)
            _ = try await engine.send(engine.operation(path: "file").download(to: out))
            #expect(try Data(contentsOf: out).count == 300_000, "no descriptor or lock left behind")
        }
    }
}
