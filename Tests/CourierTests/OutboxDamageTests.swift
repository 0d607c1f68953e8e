import Foundation
import Testing
@testable import Courier

/// Issue 9 item 12: a damaged outbox is reported as such, set aside (never deleted), and replaced by
/// a fresh one, so that freezing keeps working; a damaged write-ahead log is not taken for an empty outbox.
@Suite("Damaged outbox")
struct OutboxDamageTests {
    static func directory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("courier-damage-\(UUID().uuidString)")
    }

    /// Writes an outbox database with `rows` rows through SQLite (python3, as another program would),
    /// never opened by this process (outboxes are opened once per process and directory).
    static func writeDatabase(in directory: URL, rows: Int) async throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let script = """
            import sqlite3,sys
            c=sqlite3.connect(sys.argv[1])
            c.execute("CREATE TABLE outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, origin TEXT NOT NULL, method TEXT NOT NULL, url TEXT NOT NULL, headers TEXT NOT NULL, body BLOB, idempotencyKey TEXT NOT NULL, createdAt DOUBLE NOT NULL, expiresAt DOUBLE, maximumAttempts INTEGER, attempts INTEGER NOT NULL DEFAULT 0, nextAttemptAt DOUBLE NOT NULL, deadReason TEXT, lastStatus INTEGER, lastError TEXT, leaseOwner TEXT, leaseExpires DOUBLE)")
            for i in range(int(sys.argv[2])):
                c.execute("INSERT INTO outbox (id, origin, method, url, headers, body, idempotencyKey, createdAt, nextAttemptAt) VALUES (?, 'https://api.example.com:443', 'POST', 'https://api.example.com/v1/x', '', ?, ?, 0, 0)", ('row-%d' % i, b'x' * 3000, 'key-%d' % i))
            c.commit()
            c.close()
            """
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        python.arguments = ["python3", "-c", script, directory.appendingPathComponent("outbox.sqlite").path, "\(rows)"]
        try python.run()
        await python.exited()
        try #require(python.terminationStatus == 0)
    }

    /// Overwrites `count` bytes of a file at `offset` with garbage.
    static func damage(_ file: URL, at offset: UInt64, count: Int) throws {
        let handle = try FileHandle(forWritingTo: file)
        try handle.seek(toOffset: offset)
        try handle.write(contentsOf: Data(repeating: 0xA5, count: count))
        try handle.close()
    }

    static func freezeOne(_ directory: URL) async throws -> (NetworkEngine, NetworkOperation) {
        let transport = FakeTransport { _ in throw NetworkError(.cannotConnect, "refused") }
        let engine = NetworkEngine.fake(transport) {
            $0.reachability = ManualReachability(.unreachable)
            $0.dataDirectory = directory
            $0.replaysOutbox = false
        }
        let op = engine.operation(path: "notes", method: .post, body: .text("keep me"))
        op.isFreezable = true
        engine.enqueue(op)
        #expect(await eventually { op.state == .frozen || op.state == .finished })
        return (engine, op)
    }

    @Test(arguments: [("header", UInt64(0)), ("middle", UInt64(8192))])
    func aDamagedDatabaseIsSetAsideAndFreezingGoesOnInAFreshOne(place: String, offset: UInt64) async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await Self.writeDatabase(in: directory, rows: 8)
        let main = directory.appendingPathComponent("outbox.sqlite")
        try Self.damage(main, at: offset, count: 4096)
        let damagedBytes = try Data(contentsOf: main)

        let (engine, op) = try await Self.freezeOne(directory)
        #expect(op.state == .frozen, "\(place): the request the user asked to keep is kept")
        let outbox = try #require(engine.outbox)
        #expect(outbox.entries.map(\.id) == [op.outboxID], "a fresh outbox")
        let report = try #require(outbox.damageReports.first)
        #expect(report.code == .outboxUnavailable)
        #expect(report.message.contains(main.path) && report.message.contains("set aside"))
        let aside = try #require(outbox.setAsideDatabases.first)
        #expect(aside.lastPathComponent.hasPrefix("outbox.sqlite.damaged-"))
        #expect(report.message.contains(aside.path))
        // Kept as it was (SQLite may have rewritten the header of one it could open, to enter WAL mode).
        let kept = try Data(contentsOf: aside)
        #expect(kept.count >= damagedBytes.count)
        #expect(kept.dropFirst(100).prefix(damagedBytes.count - 100) == damagedBytes.dropFirst(100), "the damaged database is kept")
    }

    @Test func aDamagedWriteAheadLogIsReportedNotTakenForAnEmptyOutbox() async throws {
        // A sound outbox whose log holds several transactions: written by this process, copied while open
        // (closing would checkpoint the log away).
        let source = Self.directory()
        let directory = Self.directory()
        defer {
            try? FileManager.default.removeItem(at: source)
            try? FileManager.default.removeItem(at: directory)
        }
        let database = try OutboxDatabase.open(at: source)
        for index in 0..<3 {
            try database.insert(OutboxRecord(
                id: "row-\(index)", origin: "https://api.example.com:443", method: .post, url: URL(string: "https://api.example.com/x")!,
                headers: [:], body: Data(repeating: 7, count: 2000), idempotencyKey: "key-\(index)", createdAt: 0, expiresAt: nil,
                maximumAttempts: nil, nextAttemptAt: 0))
        }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for name in ["outbox.sqlite", "outbox.sqlite-wal"] {
            try FileManager.default.copyItem(at: source.appendingPathComponent(name), to: directory.appendingPathComponent(name))
        }
        let wal = directory.appendingPathComponent("outbox.sqlite-wal")
        #expect(OutboxWAL.damage(at: wal) == nil, "a sound log")
        // Damage the first frame of the last transaction: SQLite would drop it silently.
        let bytes = [UInt8](try Data(contentsOf: wal))
        func word(_ offset: Int) -> UInt32 { bytes[offset..<offset + 4].reduce(0) { $0 << 8 | UInt32($1) } }
        let pageSize = Int(word(8))
        let frames = (bytes.count - 32) / (24 + pageSize)
        let commits = (0..<frames).filter { word(32 + $0 * (24 + pageSize) + 4) != 0 }
        try #require(commits.count >= 2)
        let victim = commits[commits.count - 2] + 1
        try Self.damage(wal, at: UInt64(32 + victim * (24 + pageSize) + 24 + 100), count: 16)
        #expect(OutboxWAL.damage(at: wal) != nil)

        let outbox = try Outbox(directory: directory)
        let report = try #require(outbox.damageReports.first, "the loss is reported")
        #expect(report.code == .outboxUnavailable)
        #expect(report.message.contains("write-ahead log"))
        let aside = try #require(outbox.setAsideDatabases.first)
        #expect(FileManager.default.fileExists(atPath: aside.path + "-wal"), "the damaged log is kept")
        #expect(outbox.entries.map(\.id) == ["row-0", "row-1"], "what could be read is kept")
    }

    @Test func onlyCorruptionIsDamageNeverABusyOrLockedDatabase() {
        #expect(!OutboxDatabase.isDamage(resultCode: 5), "SQLITE_BUSY: another process writes")
        #expect(!OutboxDatabase.isDamage(resultCode: 6), "SQLITE_LOCKED")
        #expect(!OutboxDatabase.isDamage(resultCode: 13), "SQLITE_FULL")
        #expect(OutboxDatabase.isDamage(resultCode: 11), "SQLITE_CORRUPT")
        #expect(OutboxDatabase.isDamage(resultCode: 26), "SQLITE_NOTADB")
        #expect(OutboxDatabase.isDamage(OutboxDatabase.Damage(description: "quick_check: ...")))
        #expect(!OutboxDatabase.isDamage(NetworkError(.timeout)))
    }

    @Test func aProcessFollowsAnotherProcesssSetAsideBeforeItsNextWrite() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = try OutboxDatabase.open(at: directory)
        func record(_ id: String) -> OutboxRecord {
            OutboxRecord(
                id: id, origin: "https://api.example.com:443", method: .post, url: URL(string: "https://api.example.com/x")!,
                headers: [:], body: nil, idempotencyKey: id, createdAt: 0, expiresAt: nil, maximumAttempts: nil, nextAttemptAt: 0)
        }
        try database.insert(record("before"))
        // Another process found the database damaged: it moved it aside and made a fresh one.
        let fileManager = FileManager.default
        for suffix in ["", "-wal", "-shm"] {
            let file = directory.appendingPathComponent("outbox.sqlite" + suffix)
            if fileManager.fileExists(atPath: file.path) {
                try fileManager.moveItem(at: file, to: directory.appendingPathComponent("outbox.sqlite.damaged-elsewhere" + suffix))
            }
        }
        try await Self.writeDatabase(in: directory, rows: 0)
        try database.insert(record("after"))
        #expect(database.records().map(\.id) == ["after"], "written to the database now in place, not the one set aside")
        #expect(database.damageReports.isEmpty, "not damage this process found")
    }

    /// Runs a Python snippet with `argv[1]` = the database path.
    static func python(_ script: String, _ path: String, wait: Bool = true) async throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script, path]
        try process.run()
        if wait {
            await process.exited()
            try #require(process.terminationStatus == 0)
        }
        return process
    }

    @Test func damageMetWhileInUseIsSetAsideAndTheWriteGoesToAFreshOutbox() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = try OutboxDatabase.open(at: directory)
        func record(_ id: String) -> OutboxRecord {
            OutboxRecord(
                id: id, origin: "https://api.example.com:443", method: .post, url: URL(string: "https://api.example.com/x")!,
                headers: [:], body: Data(repeating: 1, count: 3000), idempotencyKey: id, createdAt: 0, expiresAt: nil,
                maximumAttempts: nil, nextAttemptAt: 0)
        }
        for index in 0..<6 { try database.insert(record("row-\(index)")) }
        try await database.pool.writeWithoutTransaction { try $0.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        let main = directory.appendingPathComponent("outbox.sqlite")
        try Self.damage(main, at: 4096, count: 3 * 4096)
        // Another connection writes (the header page only): this process's cached pages are stale now.
        _ = try await Self.python("import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA user_version = 7'); c.commit(); c.close()", main.path)

        try database.insert(record("kept"))
        #expect(database.records().map(\.id) == ["kept"], "the request is kept, in a fresh outbox")
        let report = try #require(database.damageReports.first)
        #expect(report.code == .outboxUnavailable && report.message.contains("set aside"))
        #expect(OutboxDatabase.setAsideFiles(in: directory).count == 1)
    }

    @Test func anotherProcessHoldingTheDatabaseOpenIsSeen() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await Self.writeDatabase(in: directory, rows: 1)
        let path = directory.appendingPathComponent("outbox.sqlite").path
        #expect(!OutboxDatabase.isOpenElsewhere(path))
        let holder = try await Self.python("""
            import sqlite3,sys,time
            c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA journal_mode=WAL'); c.execute('SELECT count(*) FROM outbox').fetchall()
            open(sys.argv[1] + '.ready', 'w').close()
            import os
            for _ in range(1500):
                if os.path.exists(sys.argv[1] + '.stop'): break
                time.sleep(0.02)
            """, path, wait: false)
        let ready = await eventually(timeout: .seconds(30)) { FileManager.default.fileExists(atPath: path + ".ready") }
        #expect(ready)
        if ready {
            #expect(OutboxDatabase.isOpenElsewhere(path), "its log is live: not judged while another process has it open")
        }
        _ = FileManager.default.createFile(atPath: path + ".stop", contents: nil)
        await holder.exited()
    }
}
