@testable import Courier
import CourierTestServer
import Foundation
import NIOConcurrencyHelpers
import Testing

/// Frozen files and forms with more than one process: another process delivers or drops a row and
/// removes its copy; a process killed while copying leaves nothing another process then trips on; a
/// process opening the outbox while another freezes removes no copy a row needs.
@Suite("Outbox bodies across processes", .serialized)
struct OutboxBodyProcessTests {
    static func directory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("courier-body-procs-\(UUID().uuidString)")
    }

    static func names(_ folder: URL) -> Set<String> {
        Set((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? [])
    }

    /// The child's source file N (see `courier-outbox-child freeze-files`).
    static func childSource(_ n: Int) -> [UInt8] { (0..<(20_000 + 100 * n)).map { UInt8(($0 + n) % 251) } }

    @Test(.timeLimit(.minutes(1))) func anotherProcessDeliveringOrDroppingARowRemovesItsCopy() async throws {
        let directory = Self.directory()
        let file = directory.appendingPathExtension("upload.bin")
        defer {
            try? FileManager.default.removeItem(at: directory)
            try? FileManager.default.removeItem(at: file)
        }
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let engine = OutboxProcessTests.freezingEngine(server, directory)
        let bytes = Data((0..<90_000).map { UInt8($0 % 241) })
        try bytes.write(to: file)
        func freeze() async throws -> NetworkOperation {
            let op = engine.operation(path: "echo", method: .post, body: .file(file))
            op.isFreezable = true
            engine.enqueue(op)
            #expect(await eventually { op.state == .frozen })
            return op
        }
        let dropped = try await freeze()
        let delivered = try await freeze()
        let bodies = directory.appendingPathComponent("bodies")
        let droppedID = try #require(dropped.outboxID), deliveredID = try #require(delivered.outboxID)
        #expect(Self.names(bodies) == [droppedID, deliveredID])

        #expect(try await OutboxProcessTests.run(CLITests.binary, ["outbox", "drop", droppedID, "--data-dir", directory.path]).status == 0)
        #expect(await failure(of: dropped)?.code == .cancelled)
        #expect(Self.names(bodies) == [deliveredID], "the dropping process removed that copy, and only that one")

        try Data("changed".utf8).write(to: file)
        let flush = try await OutboxProcessTests.run(CLITests.binary, ["outbox", "flush", "--data-dir", directory.path])
        #expect(flush.status == 0, "\(flush.stdout)")
        #expect(try await delivered.response().statusCode == 200, "delivered elsewhere, and this process hears it")
        #expect(server.recordedRequests.last?.body == Array(bytes), "from the copy: the bytes as frozen")
        #expect(Self.names(bodies).isEmpty)
    }

    @Test(.timeLimit(.minutes(2))) func killedWhileCopyingAndSweptWhileFreezingNoRowLosesItsCopy() async throws {
        let directory = Self.directory()
        let sources = URL(fileURLWithPath: directory.path + "-sources")
        defer {
            try? FileManager.default.removeItem(at: directory)
            try? FileManager.default.removeItem(at: sources)
        }
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let crash = OutboxCrashTests()
        let total = 40
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let outbox = try Outbox(directory: directory)

        // Other processes open the outbox (and sweep its copies) over and over while the child freezes.
        let stop = NIOLockedValueBox(false)
        let sweeps = NIOLockedValueBox(0)
        let sweeper = Thread {
            while !stop.withLockedValue({ $0 }) {
                let list = Process()
                list.executableURL = CLITests.binary
                list.arguments = ["outbox", "list", "--data-dir", directory.path]
                list.standardOutput = FileHandle.nullDevice
                list.standardError = FileHandle.nullDevice
                guard (try? list.run()) != nil else { return }
                list.waitUntilExit()
                sweeps.withLockedValue { $0 += 1 }
            }
        }
        sweeper.start()
        var kills = 0
        for _ in 0..<4 where kills < 2 && crash.rowCount(outbox) < total - 10 {
            let target = min(crash.rowCount(outbox) + Int.random(in: 1...8), total - 5)
            let run = try await crash.runChild(["freeze-files", server.baseURL, directory.path, "\(total)", "15"]) { crash.rowCount(outbox) >= target }
            if run.killed { kills += 1 } else { #expect(run.status == 0) }
        }
        let finished = try await crash.runChild(["freeze-files", server.baseURL, directory.path, "\(total)", "5"])
        stop.withLockedValue { $0 = true }
        #expect(finished.status == 0)
        #expect(sweeps.withLockedValue { $0 } > 0, "another process opened the outbox while the child froze")

        // Every row has its whole copy, and nothing else is left once a process sweeps (the CLI's list).
        _ = try await OutboxProcessTests.run(CLITests.binary, ["outbox", "list", "--data-dir", directory.path])
        let records = outbox.database!.records()
        #expect(records.count == total)
        #expect(Set(records.map(\.idempotencyKey)) == Set((0..<total).map { "files-\($0)" }))
        #expect(Self.names((outbox.database! as! OutboxDatabase).bodies.folder) == Set(records.map(\.id)), "no orphan, no half-made copy, no row without its copy")
        for record in records {
            let layout = try #require(record.frozenBody)
            #expect((outbox.database! as! OutboxDatabase).bodies.problem(with: layout, id: record.id) == nil)
        }

        // Replayed by another process: every form arrives with its file as it was, and the copies go.
        for n in 0..<total { try Data("changed \(n)".utf8).write(to: sources.appendingPathComponent("\(n).bin")) }
        #expect(try await crash.runChild(["replay", server.baseURL, directory.path]).status == 0)
        var received: [String: [UInt8]] = [:]
        for request in server.recordedRequests {
            let boundary = try #require(request.header("content-type")?.components(separatedBy: "boundary=").last)
            let parts = try #require(TransferTestSupport.parseMultipart(request.body, boundary: boundary))
            received[request.header("idempotency-key") ?? ""] = parts.last?.body
        }
        #expect(server.recordedRequests.count == total)
        for n in 0..<total { #expect(received["files-\(n)"] == Self.childSource(n), "files-\(n)") }
        // The child exits once nothing is pending, perhaps between its last commit and removing that copy
        // (as a crash would): the next process to open the outbox sweeps it.
        _ = try await OutboxProcessTests.run(CLITests.binary, ["outbox", "list", "--data-dir", directory.path])
        #expect(Self.names((outbox.database! as! OutboxDatabase).bodies.folder).isEmpty)
        print("body process test: \(kills) kills, \(sweeps.withLockedValue { $0 }) sweeps by other processes")
    }

    @Test(.timeLimit(.minutes(1))) func aFormFrozenOnTheCommandLineIsFlushedFromItsCopyAndOrphansGoAtOpen() async throws {
        let directory = Self.directory()
        let file = directory.appendingPathExtension("doc.txt")
        defer {
            try? FileManager.default.removeItem(at: directory)
            try? FileManager.default.removeItem(at: file)
        }
        try Data("the document as frozen".utf8).write(to: file)
        let port = try await TestServer.vacantPort()
        let url = "http://127.0.0.1:\(port)/echo"
        let frozen = try await OutboxProcessTests.run(
            CLITests.binary, ["post", "--freezable", url, "-F", "title=Notes", "-F", "doc=@\(file.path)", "--data-dir", directory.path])
        #expect(frozen.status == 0 && frozen.stdout.hasPrefix("frozen "), "\(frozen.stdout)")
        let id = String(frozen.stdout.dropFirst("frozen ".count)).trimmingCharacters(in: .whitespacesAndNewlines)

        // What crashes leave behind: a copy whose row never came, a half-made copy of a dead process;
        // and what a live process (this one) is making right now.
        let bodies = directory.appendingPathComponent("bodies")
        let dead = try await OutboxBodyTests.deadProcessID()
        for (name, owner) in [("orphan", "\(dead):deadbeef"), (".partial.\(dead).deadbeef.x", nil), ("in-the-making", "\(getpid()):live0000")] {
            let folder = bodies.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try Data("x".utf8).write(to: folder.appendingPathComponent("body"))
            if let owner { try Data(owner.utf8).write(to: folder.appendingPathComponent(".owner")) }
        }
        let list = try await OutboxProcessTests.run(CLITests.binary, ["outbox", "list", "--data-dir", directory.path])
        #expect(list.stdout.contains(id))
        #expect(Self.names(bodies) == [id, "in-the-making"], "opened by another process: the orphans went, nothing else")

        try Data("edited after freezing".utf8).write(to: file)
        let server = try await TestServer.start(port: port)
        defer { Task { try? await server.shutdown() } }
        let flushed = try await OutboxProcessTests.run(CLITests.binary, ["outbox", "flush", "--data-dir", directory.path])
        #expect(flushed.status == 0 && flushed.stdout.hasPrefix("delivered \(id) 200 POST"), "\(flushed.stdout)")
        let request = try #require(server.recordedRequests.last)
        let boundary = try #require(request.header("content-type")?.components(separatedBy: "boundary=").last)
        let parts = try #require(TransferTestSupport.parseMultipart(request.body, boundary: boundary))
        #expect(parts.map { String(decoding: $0.body, as: UTF8.self) } == ["Notes", "the document as frozen"])
        #expect(request.header("content-length") == String(request.body.count))
        #expect(Self.names(bodies) == ["in-the-making"])
    }

    @Test(.timeLimit(.minutes(1))) func aDamagedOutboxSetAsideTakesItsCopiesAlong() async throws {
        let directory = Self.directory()
        let file = directory.appendingPathExtension("doc.txt")
        defer {
            try? FileManager.default.removeItem(at: directory)
            try? FileManager.default.removeItem(at: file)
        }
        try Data("kept with the damaged outbox".utf8).write(to: file)
        let url = "http://127.0.0.1:\(try await TestServer.vacantPort())/echo"
        let frozen = try await OutboxProcessTests.run(CLITests.binary, ["post", "--freezable", url, "-F", "doc=@\(file.path)", "--data-dir", directory.path])
        let id = String(frozen.stdout.dropFirst("frozen ".count)).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(frozen.status == 0 && Self.names(directory.appendingPathComponent("bodies")) == [id])
        // Garbage over the database's header after a checkpoint, as in the damaged-outbox tests.
        let checkpoint = Process()
        checkpoint.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        checkpoint.arguments = ["python3", "-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()",
                                directory.appendingPathComponent("outbox.sqlite").path]
        try checkpoint.run()
        await checkpoint.exited()
        let handle = try #require(FileHandle(forWritingAtPath: directory.appendingPathComponent("outbox.sqlite").path))
        try handle.write(contentsOf: Data(repeating: 0x5A, count: 512))
        try handle.close()

        let list = try await OutboxProcessTests.run(CLITests.binary, ["outbox", "list", "--data-dir", directory.path])
        #expect(list.stdout.components(separatedBy: "a damaged outbox was set aside").count == 2, "one set-aside outbox: \(list.stdout)")
        let aside = try #require(Self.names(directory).first { $0.hasPrefix("outbox.sqlite.damaged-") && $0.hasSuffix("-bodies") })
        #expect(Self.names(directory.appendingPathComponent(aside)) == [id], "the copies went with the rows they belong to")
        #expect(Self.names(directory.appendingPathComponent(aside).appendingPathComponent(id)) == ["part-0"])
        #expect(Self.names(directory.appendingPathComponent("bodies")).isEmpty)
    }
}
