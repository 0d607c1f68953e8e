import Foundation
import GRDB
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
final class OutboxDatabase: Sendable {
    let directory: URL
    private let pool: DatabasePool
    /// This process's name on leases: `pid:random`.
    let owner: String

    private struct Listeners {
        var streams: [Int: (origin: String?, continuation: AsyncStream<OutboxEvent>.Continuation)] = [:]
        var nextKey = 0
        /// Frozen operations whose handlers still listen, by row id.
        var operations: [String: NetworkOperation] = [:]
    }

    private let listeners = NIOLockedValueBox(Listeners())

    private static let registry = NIOLockedValueBox<[String: OutboxDatabase]>([:])

    /// The outbox of a directory, opened once per process.
    static func open(at directory: URL) throws(NetworkError) -> OutboxDatabase {
        let path = directory.standardizedFileURL.path
        do {
            return try registry.withLockedValue { registry in
                if let database = registry[path] { return database }
                let database = try OutboxDatabase(directory: directory.standardizedFileURL)
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

    private init(directory: URL) throws {
        self.directory = directory
        self.owner = "\(getpid()):\(UUID().uuidString.prefix(8).lowercased())"
        let fileManager = FileManager.default
        try fileManager.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try fileManager.setAttributes([.posixPermissions: 0o700], ofItemAtPath: directory.path)
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        // A frozen request is reported only once it would survive a power cut, not just a crash:
        // every commit is synced (WAL's default, NORMAL, survives only a crash of the process).
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        pool = try DatabasePool(path: directory.appendingPathComponent("outbox.sqlite").path, configuration: configuration)
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
                    leaseExpires DOUBLE);
                CREATE INDEX IF NOT EXISTS outboxByOrigin ON outbox(origin, deadReason, seq);
                """)
        }
        for name in ["outbox.sqlite", "outbox.sqlite-wal", "outbox.sqlite-shm"] {
            let path = directory.appendingPathComponent(name).path
            if fileManager.fileExists(atPath: path) { try? fileManager.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path) }
        }
    }

    // MARK: Writing

    /// Commits a new row; returns once it is durable.
    func insert(_ record: OutboxRecord) throws(NetworkError) {
        do {
            try pool.write { db in
                try db.execute(sql: """
                    INSERT INTO outbox (id, origin, method, url, headers, body, idempotencyKey, createdAt, expiresAt,
                        maximumAttempts, attempts, nextAttemptAt) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """, arguments: [
                        record.id, record.origin, record.method.rawValue, record.url.absoluteString,
                        DiskCacheCoding.text(of: CredentialFields.removed(from: record.headers)), record.body,
                        record.idempotencyKey, record.createdAt, record.expiresAt, record.maximumAttempts,
                        record.attempts, record.nextAttemptAt,
                    ])
            }
        } catch {
            throw NetworkError(.outboxUnavailable, "the request could not be written to the outbox: \(error)", underlying: error)
        }
    }

    /// Reads the oldest pending row of an origin and, in the same transaction, claims it (lease and
    /// attempt counted) or dead-letters it, as ``ReplayStateMachine/decide(_:now:ignoringSchedule:)`` says.
    func claimHead(
        origin: String, now: Double, ignoringSchedule: Bool, lease: Double
    ) -> (head: ReplayStateMachine.Head?, decision: ReplayStateMachine.HeadDecision?, record: OutboxRecord?) {
        do {
            var damaged: [String] = []
            defer {
                // An operation of this process waiting for a damaged row hears about it.
                for id in damaged {
                    detachOperation(for: id)?.finish(.failure(NetworkError(
                        .outboxUnavailable, "its outbox entry is damaged and was set aside; it will not be sent", url: nil)))
                }
            }
            return try pool.writeWithoutTransaction { db in
                var result: (ReplayStateMachine.Head?, ReplayStateMachine.HeadDecision?, OutboxRecord?) = (nil, nil, nil)
                try db.inTransaction(.immediate) {
                    var found: (row: Row, record: OutboxRecord)?
                    while found == nil {
                        guard let row = try Row.fetchOne(db, sql: """
                            SELECT * FROM outbox WHERE origin = ? AND deadReason IS NULL ORDER BY seq LIMIT 1
                            """, arguments: [origin])
                        else { return .commit }
                        if let record = OutboxRecord(row: row) {
                            found = (row, record)
                        } else {
                            // A row that cannot be read is set aside (never deleted: it may be all the app
                            // has) and the next one becomes the head.
                            let seq = try row.decode(Int64.self, forColumn: "seq")
                            try db.execute(sql: "UPDATE outbox SET deadReason = 'damaged' WHERE seq = ?", arguments: [seq])
                            if let id = try? row.decode(String.self, forColumn: "id") { damaged.append(id) }
                        }
                    }
                    guard let (row, readable) = found else { return .commit }
                    var record = readable
                    let leaseOwner: String? = try? row.decode(String?.self, forColumn: "leaseOwner")
                    let leaseExpires: Double? = try? row.decode(Double?.self, forColumn: "leaseExpires")
                    var leasedUntil: Double?
                    if let leaseOwner, let leaseExpires, leaseExpires > now, Self.isAlive(leaseOwner) { leasedUntil = leaseExpires }
                    let head = ReplayStateMachine.Head(
                        id: record.id, attempts: record.attempts, maximumAttempts: record.maximumAttempts,
                        expiresAt: record.expiresAt, nextAttemptAt: record.nextAttemptAt, leasedUntil: leasedUntil)
                    let decision = ReplayStateMachine.decide(head, now: now, ignoringSchedule: ignoringSchedule)
                    switch decision {
                    case .send:
                        record.attempts += 1
                        try db.execute(sql: "UPDATE outbox SET attempts = ?, leaseOwner = ?, leaseExpires = ? WHERE id = ?",
                                       arguments: [record.attempts, owner, now + lease, record.id])
                    case .deadLetter(let reason):
                        record.deadReason = reason
                        try db.execute(sql: "UPDATE outbox SET deadReason = ?, leaseOwner = NULL WHERE id = ?",
                                       arguments: [reason.rawValue, record.id])
                    case .wait:
                        break
                    }
                    result = (head, decision, record)
                    return .commit
                }
                return result
            }
        } catch {
            return (nil, nil, nil)
        }
    }

    /// Records what became of an attempt: removes the row, or keeps it for a retry at a later time.
    func complete(id: String, _ completion: ReplayStateMachine.Completion, status: Int?, error: String?) {
        _ = try? pool.write { db in
            switch completion {
            case .delivered, .failedPermanently:
                try db.execute(sql: "DELETE FROM outbox WHERE id = ?", arguments: [id])
            case .retry(let at):
                try db.execute(sql: """
                    UPDATE outbox SET nextAttemptAt = ?, lastStatus = ?, lastError = ?, leaseOwner = NULL, leaseExpires = NULL
                    WHERE id = ?
                    """, arguments: [at, status, error, id])
            }
        }
    }

    // MARK: Reading and managing

    /// Every row (of one origin, if given), oldest first; damaged rows are left out.
    func records(origin: String? = nil) -> [OutboxRecord] {
        let rows: [Row] = (try? pool.read { db in
            if let origin {
                return try Row.fetchAll(db, sql: "SELECT * FROM outbox WHERE origin = ? ORDER BY seq", arguments: [origin])
            }
            return try Row.fetchAll(db, sql: "SELECT * FROM outbox ORDER BY seq")
        }) ?? []
        return rows.compactMap(OutboxRecord.init(row:))
    }

    /// How many rows there are, dead letters included.
    func count() -> Int {
        (try? pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM outbox") }) ?? 0
    }

    /// The origins with pending rows.
    func pendingOrigins() -> [String] {
        (try? pool.read { db in
            try String.fetchAll(db, sql: "SELECT DISTINCT origin FROM outbox WHERE deadReason IS NULL ORDER BY origin")
        }) ?? []
    }

    /// Removes one row; `false` when there was none with that id.
    /// An operation of this process still waiting for it fails with ``NetworkError/Code/cancelled``.
    @discardableResult
    func drop(id: String) -> Bool {
        let removed = (try? pool.write { db in
            try db.execute(sql: "DELETE FROM outbox WHERE id = ?", arguments: [id])
            return db.changesCount > 0
        }) ?? false
        operationDropped(id)
        return removed
    }

    /// Removes every row; returns how many. Operations of this process waiting for them fail as for ``drop(id:)``.
    @discardableResult
    func clear() -> Int {
        let ids = records().map(\.id)
        let count = (try? pool.write { db in
            try db.execute(sql: "DELETE FROM outbox")
            return db.changesCount
        }) ?? 0
        for id in ids { operationDropped(id) }
        return count
    }

    private func operationDropped(_ id: String) {
        detachOperation(for: id)?.finish(.failure(NetworkError(.cancelled, "its outbox entry was dropped", url: nil)))
    }

    /// Whether a lease owner (`pid:random`) may still be alive: this process, or a process that exists.
    static func isAlive(_ owner: String) -> Bool {
        guard let pidText = owner.split(separator: ":").first, let pid = Int32(pidText) else { return false }
        if pid == getpid() { return true }
        return kill(pid, 0) == 0 || errno == EPERM
    }

    // MARK: Listeners

    /// Events about rows of an origin (all origins with `nil`), from now on.
    func events(origin: String?) -> AsyncStream<OutboxEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: OutboxEvent.self, bufferingPolicy: .bufferingNewest(4096))
        listeners.withLockedValue { listeners in
            let key = listeners.nextKey
            listeners.nextKey += 1
            listeners.streams[key] = (origin, continuation)
            continuation.onTermination = { [weak self] _ in _ = self?.listeners.withLockedValue { $0.streams.removeValue(forKey: key) } }
        }
        return stream
    }

    func publish(_ event: OutboxEvent, origin: String) {
        listeners.withLockedValue { listeners in
            for (filter, continuation) in listeners.streams.values where filter == nil || filter == origin {
                continuation.yield(event)
            }
        }
    }

    /// Remembers a frozen operation whose handlers wait for its outcome.
    func attach(_ operation: NetworkOperation, to id: String) {
        listeners.withLockedValue { $0.operations[id] = operation }
    }

    /// The frozen operation waiting for a row's outcome, removed from the table.
    func detachOperation(for id: String) -> NetworkOperation? {
        listeners.withLockedValue { $0.operations.removeValue(forKey: id) }
    }
}
