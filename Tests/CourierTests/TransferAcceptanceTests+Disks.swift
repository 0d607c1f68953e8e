import Foundation
import Testing
@testable import Courier

/// Destinations that fail (a full disk, a read-only folder) and a body going to several places at once.
extension TransferAcceptanceTests {
    static let cannotMount: Comment = "mounting a tmpfs is not permitted here (it needs root or CAP_SYS_ADMIN)"

    @Test(.enabled(if: TemporaryMount.isPermitted, cannotMount))
    func aFullDiskIsATypedErrorWithNothingUnderTheFinalName() async throws {
        let content = GeneratedContent(size: 4 << 20)
        let server = try await TransferOriginServer.start(content: content)
        defer { Task { try? await server.shutdown() } }
        let disk = try TemporaryMount(size: "1m", readOnly: false)
        defer { disk.unmount() }
        let engine = Self.engine(port: server.port)
        let destination = disk.folder.appendingPathComponent("big.bin")

        let error = await failure(of: engine.operation(path: "/file").download(to: destination))
        #expect(error?.code == .fileUnavailable)
        #expect(error?.message.contains("the disk is full") == true, "\(String(describing: error))")
        #expect(!FileManager.default.fileExists(atPath: destination.path))
        #expect(disk.names.isEmpty, "the partial file is removed: \(disk.names)")

        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        // Resumable, through the command-line tool: one line, exit status 1, no crash, nothing under the final name.
        let run = try ChildProcess(CLITests.binary, ["download", server.fileURL, "-o", destination.path], stderr: folder.appendingPathComponent("stderr.log"))
        #expect(await run.exit() == .exit(1), "\(run.stderr)")
        #expect(run.stderr.contains("fileUnavailable") && run.stderr.contains("the disk is full"), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: destination.path))

        // The engine is still usable: the same download to a disk with room succeeds.
        _ = try await engine.send(engine.operation(path: "/file").download(to: folder.appendingPathComponent("big.bin")))
        #expect(try await content.mismatch(in: folder.appendingPathComponent("big.bin")) == nil)
    }

    @Test(.enabled(if: TemporaryMount.isPermitted, cannotMount))
    func aReadOnlyFolderIsATypedErrorAndNothingIsWritten() async throws {
        let server = try await TransferOriginServer.start(content: GeneratedContent(size: 1 << 20))
        defer { Task { try? await server.shutdown() } }
        // Root ignores permission bits, so the folder is a read-only mount.
        let disk = try TemporaryMount(size: "1m", readOnly: true)
        defer { disk.unmount() }
        let engine = Self.engine(port: server.port)
        let destination = disk.folder.appendingPathComponent("file.bin")
        for resumable in [false, true] {
            let error = await failure(of: engine.operation(path: "/file").download(to: destination, resumable: resumable))
            #expect(error?.code == .fileUnavailable, "\(String(describing: error))")
            let message = error?.message.lowercased() ?? ""
            #expect(message.contains(destination.path.lowercased()) && (message.contains("read-only") || message.contains("not writable")),
                    "the message names the file and says why: \(String(describing: error))")
        }
        #expect(disk.names.isEmpty)
    }

    // MARK: Several destinations

    @Test func oneDownloadGoesToTwoFilesAndABodyStreamAtOnce() async throws {
        let content = GeneratedContent(size: 8 << 20)
        let server = try await TransferOriginServer.start(content: content)
        defer { Task { try? await server.shutdown() } }
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let engine = Self.engine(port: server.port)
        let working = folder.appendingPathComponent("working.bin"), archive = folder.appendingPathComponent("archive.bin")
        let op = engine.operation(path: "/file").download(to: [working, archive])
        let stream = op.bodyStream
        engine.enqueue(op)
        let streamed = Task {
            var bytes = Data()
            var chunks = 0
            for try await chunk in stream {
                bytes.append(chunk)
                chunks += 1
            }
            return (bytes, chunks)
        }
        let response = try await op.response()
        let (bytes, chunks) = try await streamed.value
        #expect(response.fileURLs == [working, archive] && response.body.isEmpty)
        #expect(try await content.mismatch(in: working) == nil)
        #expect(try await content.mismatch(in: archive) == nil)
        #expect(bytes == content.bytes(count: content.size) && chunks > 1, "the stream got the same bytes, as they came")
        #expect(Self.names(in: folder) == ["working.bin", "archive.bin"])
        #expect(server.requests.count == 1, "one transfer feeds all three")
    }
}

/// A disk that fills as the last megabytes are written (review finding: the write in flight at the end of
/// the body failed inside `finish()`, and the record kept claimed the whole body was on disk).
extension TransferAcceptanceTests {
    @Test(.enabled(if: TemporaryMount.isPermitted, cannotMount))
    func aWriteThatFailsAtTheEndLeavesARecordCountingOnlyTheBytesOnDisk() async throws {
        let content = GeneratedContent(size: 2_200_000)
        let server = try await TransferOriginServer.start(content: content)
        defer { Task { try? await server.shutdown() } }
        let roomy = try Self.folder()
        defer { try? FileManager.default.removeItem(at: roomy) }
        let small = try TemporaryMount(size: "2m", readOnly: false)
        defer { small.unmount() }
        let (first, second) = (roomy.appendingPathComponent("a.bin"), small.folder.appendingPathComponent("b.bin"))
        let engine = Self.engine(port: server.port)

        let error = await failure(of: engine.operation(path: "/file").download(to: [first, second], resumable: true))
        #expect(error?.code == .fileUnavailable, "\(String(describing: error))")
        let store = ResumeRecordStore(destination: first)
        #expect(await eventually(timeout: .seconds(5)) { FileManager.default.fileExists(atPath: store.recordURL.path) })
        let onDisk = try Data(contentsOf: store.partialURL)
        let record = ResumeRecordStore.readNow(at: store.recordURL.path)
        #expect(record != nil)
        #expect((record?.bytesOnDisk ?? .max) <= Int64(onDisk.count), "the record counts \(record?.bytesOnDisk ?? -1); the file holds \(onDisk.count)")
        #expect((record?.bytesOnDisk ?? .max) < Int64(content.size), "the last write failed on the second file: the record cannot count the whole body")
        #expect(!FileManager.default.fileExists(atPath: first.path), "nothing under the final name")
    }
}
