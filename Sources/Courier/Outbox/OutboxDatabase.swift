import Foundation
import GRDB
import Logging
import NIOConcurrencyHelpers
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The outbox of one data directory: an SQLite database (through GRDB, WAL mode) shared by every
/// engine of the process that uses the directory, and safe with other processes (SQLite's locking;
/// claims are made in `BEGIN IMMEDIATE` transactions, with a lease naming the claiming process).
///
/// Each row is committed before anyone is told a request was frozen. Credentials never reach it:
/// ``insert(_:)`` removes them (see ``CredentialFields``), whoever built the record.
final class OutboxDatabase: OutboxStore {
    let directory: URL
    /// The database, and the identity of its file: replaced when the file turns out damaged and is set
    /// aside (here or by another process; see OutboxDatabase+Recovery).
    let store: NIOLockedValueBox<Store>
    /// The damage found in this directory's outbox by this process, oldest first (see OutboxDatabase+Recovery).
    let damageLog = NIOLockedValueBox<[NetworkError]>([])
    let logger: Logger?
    /// This process's name on leases: `pid:random`.
    let owner: String
    /// The copies of frozen files and forms' files, in `bodies/` (see ``OutboxBodyStore``).
    let bodies: OutboxBodyStore

    let listeners: OutboxListeners
    /// Where opening an outbox and an operation's own writes (freezing, dropping) run: never a caller's
    /// thread nor the cooperative pool. Serial, so one operation's freeze and drop keep their order.
    static let io = DispatchQueue(label: "courier.outbox.io")
    /// Where this outbox's replays run (claims, outcomes), drops and the cross-process watch: one outbox's
    /// slow disk never holds back another's, and a drop never falls between a claim and its send.
    let work = DispatchQueue(label: "courier.outbox.work")
    /// Where lease renewals run, so that a renewal never waits behind a claim.
    let leases = DispatchQueue(label: "courier.outbox.leases")

    private static let registry = NIOLockedValueBox<[String: OutboxDatabase]>([:])
    /// How long a write waits for another process's lock, by directory path, where not the default 10 s
    /// (tests of a busy database set a short one before opening it).
    static let busyTimeouts = NIOLockedValueBox<[String: Double]>([:])

    /// The outbox of a directory, opened once per process. Damage found on the way is set aside and
    /// reported (``damageReports``, and `logger`, the first opener's).
    static func open(at directory: URL, logger: Logger? = nil) throws(NetworkError) -> OutboxDatabase {
        let path = directory.standardizedFileURL.path
        do {
            return try registry.withLockedValue { registry in
                if let database = registry[path] { return database }
                let database = try OutboxDatabase(directory: directory.standardizedFileURL, logger: logger)
                registry[path] = database
                return database
            }
        } catch {
            throw NetworkError(.outboxUnavailable, "the outbox in \(path) cannot be opened: \(error)", underlying: error)
        }
    }

    /// Whether a directory holds an outbox (checked without creating anything).
    static func exists(at directory: URL) -> Bool {
        FileManager.default.fileExists(atPath: directory.appendingPathComponent("outbox.sqlite").path)
    }

    private init(directory: URL, logger: Logger?) throws {
        self.directory = directory
        self.logger = logger
        self.listeners = OutboxListeners.shared(OutboxLocation.sqliteListenersKey(directory))
        self.owner = "\(getpid()):\(UUID().uuidString.prefix(8).lowercased())"
        self.bodies = OutboxBodyStore(directory: directory, owner: owner)
        let fileManager = FileManager.default
        try fileManager.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try fileManager.setAttributes([.posixPermissions: 0o700], ofItemAtPath: directory.path)
        let (store, damage) = try Self.openStore(in: directory)
        self.store = NIOLockedValueBox(store)
        claimWorkQueue(work)
        for report in damage { reportDamage(report) }
        // Copies left by a crash between copying a body and committing (or removing) its row.
        bodies.sweep { liveRowIDs() }
    }

    var location: URL { directory }
    var damageReports: [NetworkError] { damageLog.withLockedValue { $0 } }
    var setAsideDatabases: [URL] { Self.setAsideFiles(in: directory) }

    /// The database connection pool (the current one: see ``store``).
    var pool: DatabasePool { store.withLockedValue { $0.pool } }

    /// Creates the table, or brings an older one up to date. Idempotent, so that several processes
    /// opening one outbox at once are safe.
    static func createSchema(_ pool: DatabasePool) throws {
        try pool.write { db in
            try db.execute(sql: """
                CREATE TABLE IF NOT EXISTS outbox (
                    seq INTEGER PRIMARY KEY AUTOINCREMENT,
                    id TEXT NOT NULL UNIQUE,
                    origin TEXT NOT NULL,
                    method TEXT NOT NULL,
                    url TEXT NOT NULL,
                    headers TEXT NOT NULL,
                    body BLOB,
                    idempotencyKey TEXT NOT NULL,
                    createdAt DOUBLE NOT NULL,
                    expiresAt DOUBLE,
                    maximumAttempts INTEGER,
                    attempts INTEGER NOT NULL DEFAULT 0,
                    nextAttemptAt DOUBLE NOT NULL,
                    deadReason TEXT,
                    lastStatus INTEGER,
                    lastError TEXT,
                    leaseOwner TEXT,
                    leaseExpires DOUBLE,
                    outcome TEXT,
                    finishedAt DOUBLE,
                    orderingKey TEXT,
                    bodyLayout TEXT,
                    pipeline TEXT);
                CREATE INDEX IF NOT EXISTS outboxByOrigin ON outbox(origin, deadReason, seq);
                """)
            // Outboxes made by earlier versions: outcomes (another process's waiting operation reads them),
            // then ordering keys (rows without one keep their host's order, as before).
            let columns = try Row.fetchAll(db, sql: "PRAGMA table_info(outbox)").compactMap { $0["name"] as String? }
            if !columns.contains("outcome") { try db.execute(sql: "ALTER TABLE outbox ADD COLUMN outcome TEXT") }
            if !columns.contains("finishedAt") { try db.execute(sql: "ALTER TABLE outbox ADD COLUMN finishedAt DOUBLE") }
            if !columns.contains("orderingKey") { try db.execute(sql: "ALTER TABLE outbox ADD COLUMN orderingKey TEXT") }
            if !columns.contains("bodyLayout") { try db.execute(sql: "ALTER TABLE outbox ADD COLUMN bodyLayout TEXT") }
            // The pipeline that froze a row (rows of earlier versions have none: any engine of their origin).
            if !columns.contains("pipeline") { try db.execute(sql: "ALTER TABLE outbox ADD COLUMN pipeline TEXT") }
            try db.execute(sql: "CREATE INDEX IF NOT EXISTS outboxByPipeline ON outbox(pipeline, deadReason, seq)")
        }
    }

    // MARK: Writing

    /// Commits a new row; returns once it is durable. A database found damaged on the way is set aside
    /// and the row goes to a fresh one (see OutboxDatabase+Recovery).
    func insert(_ record: OutboxRecord) throws(NetworkError) {
        do {
            try withRecovery { pool in
                try pool.write { db in
                    try db.execute(sql: """
                        INSERT INTO outbox (id, origin, method, url, headers, body, idempotencyKey, createdAt, expiresAt,
                            maximumAttempts, attempts, nextAttemptAt, lastStatus, lastError, orderingKey, bodyLayout, pipeline)
                            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """, arguments: [
                            record.id, record.origin, record.method.rawValue, record.url.absoluteString,
                            OutboxRecord.headersColumn(
                                CredentialFields.removed(from: record.headers),
                                requirements: record.frozenBody == nil ? [] : [OutboxRecord.bodyLayoutRequirement]),
                            record.body,
                            record.idempotencyKey, record.createdAt, record.expiresAt, record.maximumAttempts,
                            record.attempts, record.nextAttemptAt, record.lastStatus, record.lastError, record.orderingKey,
                            record.frozenBody?.text, record.pipeline,
                        ])
                }
            }
        } catch {
            throw NetworkError(
                .outboxUnavailable, "the request could not be written to the outbox in \(directory.path): \(error)", underlying: error)
        }
    }

    /// Commits the row of a request being frozen, whose body ``OutboxBodyStore/freeze(bytes:source:id:limit:)``
    /// made ready (and copied, for a file or a form), then makes sure the copy is where the database now
    /// holding the row looks for it: a damaged database set aside between the copy and the commit (by this
    /// process, when the insert met the damage, or by another) may have taken it along, and it is linked back
    /// (see OutboxBodyStore+SetAside). Only then is the copy no longer "in the making". A row whose copy is
    /// nowhere is removed again: the request was not kept, and is never reported frozen.
    /// - Parameter record: The row.
    /// - Throws: ``NetworkError/Code/outboxUnavailable`` when the row cannot be committed or its copy is lost
    ///   (nothing of it is left in the outbox).
    func insertFrozen(_ record: OutboxRecord, bytes: Data?, source: RequestBodySource?, limit: Int) throws(NetworkError) -> OutboxRecord {
        // The body first: a file or a form's files are copied (complete and synced) before the row exists.
        let frozen = try bodies.freeze(bytes: bytes, source: source, id: record.id, limit: limit)
        var record = record
        record.body = frozen.bytes
        record.frozenBody = frozen.layout
        try insertFrozen(record)
        return record
    }

    /// The body of a row: its bytes, or a file or form rebuilt from the row's copies.
    func requestBody(of record: OutboxRecord) -> RequestBody? {
        let contentType = record.headers[.contentType]
        if let layout = record.frozenBody {
            return layout.requestBody(copiesIn: bodies.folder(for: record.id), bytes: record.body, contentType: contentType)
        }
        return record.body.map { RequestBody.data($0, contentType: contentType ?? "application/octet-stream") }
    }

    func insertFrozen(_ record: OutboxRecord) throws(NetworkError) {
        do {
            try insert(record)
        } catch {
            bodies.remove(record.id)
            throw error
        }
        if let layout = record.frozenBody, let problem = bodies.restoreIfSetAside(layout, id: record.id, in: directory) {
            delete(id: record.id)
            throw NetworkError(
                .outboxUnavailable, "the copy of the body was taken away while the request was committed to the outbox in "
                    + "\(directory.path) (a damaged outbox was set aside meanwhile): \(problem)")
        }
        bodies.committed(record.id)
    }

    // MARK: Reading and managing

    /// Every row (of one origin, if given), oldest first; damaged rows are left out.
    func records(origin: String?) throws(NetworkError) -> [OutboxRecord] {
        let rows: [Row]
        do {
            rows = try withRecovery { pool in try pool.read { db in
                if let origin {
                    return try Row.fetchAll(db, sql: "SELECT * FROM outbox WHERE origin = ? AND outcome IS NULL ORDER BY seq", arguments: [origin])
                }
                return try Row.fetchAll(db, sql: "SELECT * FROM outbox WHERE outcome IS NULL ORDER BY seq")
            } }
        } catch {
            throw NetworkError(.outboxUnavailable, "the outbox in \(location.path) cannot be read: \(error)", underlying: error)
        }
        return rows.compactMap(OutboxRecord.init(row:))
    }

    /// The ids of every row neither removed nor finished (pending rows and dead letters, damaged ones
    /// included): the rows whose body copies must stay. `nil` when they cannot be read.
    func liveRowIDs() -> Set<String>? {
        (try? withRecovery { pool in try pool.read { db in
            try String.fetchAll(db, sql: "SELECT id FROM outbox WHERE outcome IS NULL")
        } }).map(Set.init)
    }

    /// How many rows there are, dead letters included (finished ones kept for other processes are not counted).
    func count() -> Int {
        (try? withRecovery { pool in try pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM outbox WHERE outcome IS NULL") } }) ?? 0
    }

    /// The origins with pending rows.
    func pendingOrigins() -> [String] {
        (try? withRecovery { pool in try pool.read { db in
            try String.fetchAll(db, sql: "SELECT DISTINCT origin FROM outbox WHERE deadReason IS NULL AND outcome IS NULL ORDER BY origin")
        } }) ?? []
    }

    /// Removes one row; `false` when there was none with that id.
    /// An operation of this process still waiting for it fails with ``NetworkError/Code/cancelled``.
    ///
    /// When this process is replaying the row: a replay still waiting in the queue is cancelled (nothing
    /// was sent); one on the wire decides, so that nothing is reported cancelled that the server then
    /// answered: a 2xx or final 4xx is reported as such, anything else drops the row.
    @discardableResult
    func drop(id: String) -> Bool {
        // On the work queue, in order with claims, sends and outcomes: a row claimed a moment ago is
        // already known as in flight, and an outcome being recorded finishes first.
        onWork { dropOnWork(id: id) }
    }

    func dropAskedByUser(id: String) -> Bool { drop(id: id) }

    private func dropOnWork(id: String) -> Bool {
        if dropReplayInFlight(id) { return true }
        let removed = (try? pool.write { [owner] db in
            // Not a row another live process is sending now (its lease holds): its attempt decides.
            if let row = try Row.fetchOne(db, sql: "SELECT leaseOwner, leaseExpires FROM outbox WHERE id = ?", arguments: [id]),
                let leaseOwner: String = row["leaseOwner"], leaseOwner != owner,
                let expires: Double = row["leaseExpires"], expires > Date().timeIntervalSince1970, Self.isAlive(leaseOwner) {
                return false
            }
            try db.execute(sql: "DELETE FROM outbox WHERE id = ? AND outcome IS NULL", arguments: [id])
            return db.changesCount > 0
        }) ?? false
        if removed {
            // After the commit: a row never points at a removed copy.
            bodies.remove(id)
            listeners.operationDropped(id)
        } else {
            // Already settled (perhaps by another process): the waiting operation hears what happened.
            settle([id])
        }
        return removed
    }

    /// Removes every row; returns how many. Operations of this process waiting for them fail as for ``drop(id:)``.
    @discardableResult
    func clear() -> Int {
        onWork { clearOnWork() }
    }

    private func clearOnWork() -> Int {
        let ids = records().map(\.id)
        var count = 0
        for id in ids where dropOnWork(id: id) { count += 1 }
        // Rows that could not be read go too (but not a row whose replay is on the wire: that one decides
        // for itself); finished rows stay for their retention.
        let inFlight = listeners.replaying
        count += (try? pool.write { db in
            try db.execute(sql: "DELETE FROM outbox WHERE outcome IS NULL AND id NOT IN (SELECT value FROM json_each(?))",
                           arguments: [String(decoding: try JSONEncoder().encode(inFlight), as: UTF8.self)])
            return db.changesCount
        }) ?? 0
        // Their copies, and any other copy no row needs now.
        bodies.sweep { liveRowIDs() }
        return count
    }

    /// Whether a lease owner (`pid:random`) may still be alive: this process, or a process that exists.
    static func isAlive(_ owner: String) -> Bool {
        guard let pidText = owner.split(separator: ":").first, let pid = Int32(pidText) else { return false }
        if pid == getpid() { return true }
        return kill(pid, 0) == 0 || errno == EPERM
    }
}
