@testable import Courier
import Foundation
import GRDB
import Testing

/// Frozen files and forms when the outbox is set aside or read by an older version: a copy the user asked
/// to keep is never lost as a side effect of a set-aside (the row's copy stays where the live database
/// looks for it, and the set-aside database keeps the copies of its rows), and a version that does not
/// know frozen uploads cannot replay such a row as some other body.
@Suite("Outbox bodies: set-aside databases and older versions", .serialized)
struct OutboxBodyRecoveryTests {
    static func directory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("courier-body-recovery-\(UUID().uuidString)")
    }

    static func names(_ folder: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).sorted()
    }

    static func pattern(_ count: Int, seed: Int = 0) -> Data { Data((0..<count).map { UInt8(($0 * 5 + seed) % 249) }) }

    /// Copies a file body for the row `id` and returns the row that describes it (not committed yet).
    static func frozenFile(_ database: OutboxDatabase, id: String, source: URL) throws -> OutboxRecord {
        let frozen = try database.bodies.freeze(bytes: nil, source: .file(source), id: id, limit: 10 << 20)
        return OutboxRecord(
            id: id, origin: "https://api.example.com:443", method: .post, url: URL(string: "https://api.example.com/upload")!,
            headers: [.contentType: "application/octet-stream"], body: frozen.bytes, frozenBody: frozen.layout, idempotencyKey: id,
            createdAt: 0, expiresAt: nil, maximumAttempts: nil, nextAttemptAt: 0)
    }

    static func source(_ directory: URL, _ name: String, _ data: Data) throws -> URL {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let url = directory.appendingPathComponent(name)
        try data.write(to: url)
        return url
    }

    // MARK: Set-aside

    @Test func aSetAsideBetweenTheCopyAndTheCommitLeavesTheCopyWhereTheFreshOutboxLooks() throws {
        let directory = Self.directory(), sources = Self.directory()
        defer {
            try? FileManager.default.removeItem(at: directory)
            try? FileManager.default.removeItem(at: sources)
        }
        let database = try OutboxDatabase.open(at: directory)
        let older = try Self.frozenFile(database, id: "older", source: Self.source(sources, "a.bin", Self.pattern(70_000)))
        try database.insertFrozen(older)
        // A request being frozen: copied, its row not committed yet...
        let record = try Self.frozenFile(database, id: "being-frozen", source: Self.source(sources, "b.bin", Self.pattern(90_000, seed: 1)))
        let layout = try #require(record.frozenBody)
        // ...when another process finds the database damaged and sets it aside (as it does, under the directory's lock).
        let main = directory.appendingPathComponent("outbox.sqlite").path
        let (other, _) = try OutboxDatabase.openStore(in: directory, damaged: OutboxDatabase.FileIdentity(path: main), cause: "found damaged elsewhere")
        try other.pool.close()

        try database.insertFrozen(record)
        #expect(database.records().map(\.id) == ["being-frozen"], "committed to the fresh outbox")
        #expect(database.bodies.problem(with: layout, id: "being-frozen") == nil, "its copy is where the fresh outbox looks for it")
        #expect(Self.names(database.bodies.folder) == ["being-frozen"])
        let aside = try #require(OutboxDatabase.setAsideFiles(in: directory).first)
        let keptAside = OutboxBodyStore.setAsideFolder(for: aside)
        #expect(Self.names(keptAside).contains("older"), "the set-aside database's rows keep their copies: \(Self.names(keptAside))")
        #expect(OutboxBodyStore.problem(with: try #require(older.frozenBody), in: keptAside.appendingPathComponent("older")) == nil)
    }

    @Test func aCopyAnOlderVersionMovedAsideIsLinkedBackAndOneThatIsGoneIsNotReportedKept() async throws {
        let directory = Self.directory(), sources = Self.directory()
        defer {
            try? FileManager.default.removeItem(at: directory)
            try? FileManager.default.removeItem(at: sources)
        }
        let database = try OutboxDatabase.open(at: directory)
        let record = try Self.frozenFile(database, id: "moved", source: Self.source(sources, "a.bin", Self.pattern(40_000)))
        let lost = try Self.frozenFile(database, id: "lost", source: Self.source(sources, "b.bin", Self.pattern(1000)))
        // A process of the first frozen-uploads build set the database aside and took every copy with it.
        let fileManager = FileManager.default
        let aside = "outbox.sqlite.damaged-20260101T000000Z"
        for suffix in ["", "-wal", "-shm"] where fileManager.fileExists(atPath: directory.appendingPathComponent("outbox.sqlite" + suffix).path) {
            try fileManager.moveItem(at: directory.appendingPathComponent("outbox.sqlite" + suffix), to: directory.appendingPathComponent(aside + suffix))
        }
        try fileManager.moveItem(at: database.bodies.folder, to: directory.appendingPathComponent(aside + "-bodies"))
        try fileManager.removeItem(at: directory.appendingPathComponent(aside + "-bodies/lost"))
        try await OutboxDamageTests.writeDatabase(in: directory, rows: 0)

        try database.insertFrozen(record)
        #expect(database.bodies.problem(with: try #require(record.frozenBody), id: "moved") == nil, "linked back where the row looks")
        #expect(Self.names(directory.appendingPathComponent(aside + "-bodies/moved")).contains("body"), "and still kept with the set-aside database")

        #expect(throws: NetworkError.self) { try database.insertFrozen(lost) }
        #expect(database.records().map(\.id) == ["moved"], "a row whose copy is nowhere is not kept (nor reported frozen)")
    }

    @Test func damageMetByTheCommitItselfKeepsTheCopyOfTheRequestBeingFrozen() async throws {
        let directory = Self.directory(), sources = Self.directory()
        defer {
            try? FileManager.default.removeItem(at: directory)
            try? FileManager.default.removeItem(at: sources)
        }
        let database = try OutboxDatabase.open(at: directory)
        let older = try Self.frozenFile(database, id: "older", source: Self.source(sources, "a.bin", Self.pattern(30_000)))
        try database.insertFrozen(older)
        for index in 0..<6 {
            try database.insert(OutboxRecord(
                id: "row-\(index)", origin: "https://api.example.com:443", method: .post, url: URL(string: "https://api.example.com/x")!,
                headers: [:], body: Data(repeating: 1, count: 3000), idempotencyKey: "k\(index)", createdAt: 0, expiresAt: nil,
                maximumAttempts: nil, nextAttemptAt: 0))
        }
        try await database.pool.writeWithoutTransaction { try $0.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        let main = directory.appendingPathComponent("outbox.sqlite")
        try OutboxDamageTests.damage(main, at: 4096, count: 3 * 4096)
        _ = try await OutboxDamageTests.python(
            "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA user_version = 7'); c.commit(); c.close()", main.path)

        let record = try Self.frozenFile(database, id: "kept", source: Self.source(sources, "b.bin", Self.pattern(60_000, seed: 2)))
        try database.insertFrozen(record)
        #expect(database.records().map(\.id) == ["kept"], "the insert met the damage, set the database aside, and went to a fresh one")
        #expect(database.bodies.problem(with: try #require(record.frozenBody), id: "kept") == nil, "with its copy")
        let aside = try #require(OutboxDatabase.setAsideFiles(in: directory).first)
        let keptAside = OutboxBodyStore.setAsideFolder(for: aside)
        #expect(OutboxBodyStore.problem(with: try #require(older.frozenBody), in: keptAside.appendingPathComponent("older")) == nil)
        #expect(!FileManager.default.fileExists(atPath: database.bodies.folder(for: "older").path), "moved with its row")
    }

    @Test func aDamagedLogKeepsTheCopiesOfTheRowsTheLiveOutboxLost() throws {
        let source = Self.directory(), directory = Self.directory(), sources = Self.directory()
        defer {
            for folder in [source, directory, sources] { try? FileManager.default.removeItem(at: folder) }
        }
        // Three frozen files, one transaction each, still in the log (copied while open: closing would checkpoint it).
        let database = try OutboxDatabase.open(at: source)
        var layouts: [String: FrozenBody] = [:]
        for index in 0..<3 {
            let record = try Self.frozenFile(database, id: "row-\(index)", source: Self.source(sources, "\(index).bin", Self.pattern(5000 + index, seed: index)))
            try database.insertFrozen(record)
            layouts[record.id] = record.frozenBody
        }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for name in ["outbox.sqlite", "outbox.sqlite-wal", "bodies"] {
            try FileManager.default.copyItem(at: source.appendingPathComponent(name), to: directory.appendingPathComponent(name))
        }
        // The first frame of the last transaction damaged: SQLite would drop row-2 silently.
        let wal = directory.appendingPathComponent("outbox.sqlite-wal")
        let bytes = [UInt8](try Data(contentsOf: wal))
        func word(_ offset: Int) -> UInt32 { bytes[offset..<offset + 4].reduce(0) { $0 << 8 | UInt32($1) } }
        let pageSize = Int(word(8))
        let frames = (bytes.count - 32) / (24 + pageSize)
        let commits = (0..<frames).filter { word(32 + $0 * (24 + pageSize) + 4) != 0 }
        try #require(commits.count >= 2)
        try OutboxDamageTests.damage(wal, at: UInt64(32 + (commits[commits.count - 2] + 1) * (24 + pageSize) + 24 + 100), count: 16)

        let outbox = try Outbox(directory: directory)
        #expect(outbox.entries.map(\.id) == ["row-0", "row-1"], "what could be read is kept")
        #expect(Self.names(directory.appendingPathComponent("bodies")) == ["row-0", "row-1"], "the live outbox swept the copy it has no row for")
        let aside = try #require(outbox.setAsideDatabases.first)
        let keptAside = OutboxBodyStore.setAsideFolder(for: aside)
        #expect(Self.names(keptAside) == ["row-0", "row-1", "row-2"], "the database set aside keeps every copy its rows name")
        for (id, layout) in layouts {
            #expect(OutboxBodyStore.problem(with: layout, in: keptAside.appendingPathComponent(id)) == nil, "\(id)")
        }
    }

    // MARK: Older versions

    @Test func aRowWithCopiesCannotBeReadByAVersionBeforeFrozenUploads() throws {
        let directory = Self.directory(), sources = Self.directory()
        defer {
            try? FileManager.default.removeItem(at: directory)
            try? FileManager.default.removeItem(at: sources)
        }
        let database = try OutboxDatabase.open(at: directory)
        try database.insertFrozen(Self.frozenFile(database, id: "file", source: Self.source(sources, "a.bin", Self.pattern(2000))))
        var form = MultipartForm()
        form.addField("Holiday", name: "album")
        form.addFile(try Self.source(sources, "b.jpg", Self.pattern(3000)), name: "photo")
        let frozenForm = try database.bodies.freeze(bytes: nil, source: .multipart(form), id: "form", limit: 1 << 20)
        try database.insertFrozen(OutboxRecord(
            id: "form", origin: "https://api.example.com:443", method: .post, url: URL(string: "https://api.example.com/photos")!,
            headers: [.contentType: form.contentType], body: frozenForm.bytes, frozenBody: frozenForm.layout, idempotencyKey: "form",
            createdAt: 0, expiresAt: nil, maximumAttempts: nil, nextAttemptAt: 0))
        try database.insertFrozen(OutboxRecord(
            id: "data", origin: "https://api.example.com:443", method: .post, url: URL(string: "https://api.example.com/notes")!,
            headers: [.contentType: "text/plain"], body: Data("note".utf8), idempotencyKey: "data",
            createdAt: 0, expiresAt: nil, maximumAttempts: nil, nextAttemptAt: 0))

        // Every earlier version reads the headers column as a list of name/value pairs (DiskCacheCoding.headers,
        // unchanged since the outbox's first version); a row it cannot read is set aside as damaged, never sent.
        let stored = try database.pool.read { db in
            try Dictionary(uniqueKeysWithValues: Row.fetchAll(db, sql: "SELECT id, headers FROM outbox").map { row in
                (row["id"] as String, row["headers"] as String)
            })
        }
        #expect(DiskCacheCoding.headers(from: try #require(stored["file"])) == nil, "an older version would send its empty body column")
        #expect(DiskCacheCoding.headers(from: try #require(stored["form"])) == nil, "an older version would send the form's fields alone")
        #expect(DiskCacheCoding.headers(from: try #require(stored["data"])) != nil, "a body in memory stays readable by every version")
        // This version reads them all, headers intact.
        let records = Dictionary(uniqueKeysWithValues: database.records().map { ($0.id, $0) })
        #expect(records["file"]?.headers[.contentType] == "application/octet-stream" && records["file"]?.frozenBody?.kind == .file)
        #expect(records["form"]?.headers[.contentType] == form.contentType && records["form"]?.frozenBody?.kind == .multipart)
        #expect(records["data"]?.body == Data("note".utf8))
    }

    @Test func aRowNamingWhatThisVersionCannotDoOrMissingItsLayoutIsDamaged() throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = try OutboxDatabase.open(at: directory)
        try database.pool.write { db in
            for (id, headers, layout) in [
                ("later", #"{"fields":[],"requires":["somethingLater"]}"#, nil as String?),
                ("no-layout", #"{"fields":[],"requires":["bodyLayout"]}"#, nil),
                ("plain", #"[["Content-Type","text/plain"]]"#, nil),
            ] {
                try db.execute(sql: """
                    INSERT INTO outbox (id, origin, method, url, headers, body, idempotencyKey, createdAt, nextAttemptAt, bodyLayout)
                        VALUES (?, 'https://api.example.com:443', 'POST', 'https://api.example.com/x', ?, X'00', ?, 0, 0, ?)
                    """, arguments: [id, headers, id, layout])
            }
        }
        #expect(database.records().map(\.id) == ["plain"], "never replayed as something other than what was frozen")
    }

    @Test(.timeLimit(.minutes(1))) func rowsAnOlderVersionSetAsideAsDamagedAreSentWithTheirCopiesAgain() async throws {
        let setup = try await OutboxFileBodyTests.setUp()
        defer { setup.tearDown() }
        let report = try setup.source("report.bin", Self.pattern(120_000))
        let upload = try await setup.freeze(.file(report))
        var form = MultipartForm()
        form.addField("Holiday", name: "album")
        form.addFile(try setup.source("photo.jpg", Self.pattern(80_000, seed: 4)), name: "photo")
        let post = try await setup.freeze(.multipart(form))
        let ids = try [#require(upload.outboxID), #require(post.outboxID)]
        // An older version sharing the outbox could not read them and set them aside, as it does any row it cannot read.
        let database = try OutboxDatabase.open(at: setup.directory)
        try await database.pool.write { db in
            try db.execute(sql: "UPDATE outbox SET deadReason = 'damaged' WHERE id IN (?, ?)", arguments: [ids[0], ids[1]])
        }

        setup.reachability.setStatus(.reachable(via: .wired))
        #expect(try await upload.response().body == Self.pattern(120_000), "sent whole, from its copy")
        let posted = try await post.response()
        let parts = try #require(TransferTestSupport.parseMultipart(Array(posted.body), boundary: form.boundary))
        #expect(parts.map(\.body) == [Array("Holiday".utf8), Array(Self.pattern(80_000, seed: 4))])
        #expect(await eventually { setup.copies.isEmpty })
    }
}
