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
    let pool: DatabasePool
    /// This process's name on leases: `pid:random`.
    let owner: String

    struct Listeners {
        var streams: [Int: (origin: String?, continuation: AsyncStream<OutboxEvent>.Continuation)] = [:]
        var nextKey = 0
        /// Frozen operations whose handlers still listen, by row id.
        var operations: [String: NetworkOperation] = [:]
        /// Replays of this process on their way, by row id, and whether a drop was asked for meanwhile.
        var replays: [String: (operation: NetworkOperation, dropRequested: Bool)] = [:]
        /// Whether the cross-process watch runs, and the files' state it last saw (see OutboxDatabase+Watch).
        var isWatching = false
        var watchedStamp: [Int64] = []
    }

    let listeners = NIOLockedValueBox(Listeners())
    /// Where opening an outbox and an operation's own writes (freezing, dropping) run: never a caller's
    /// thread nor the cooperative pool. Serial, so one operation's freeze and drop keep their order.
    static let io = DispatchQueue(label: "courier.outbox.io")
    /// Where this outbox's replays run (claims, outcomes), drops and the cross-process watch: one outbox's
    /// slow disk never holds back another's, and a drop never falls between a claim and its send.
    let work = DispatchQueue(label: "courier.outbox.work")
    private static let workKey = DispatchSpecificKey<ObjectIdentifier>()
    /// Where lease renewals run, so that a renewal never waits behind a claim.
    let leases = DispatchQueue(label: "courier.outbox.leases")

    private static let registry = NIOLockedValueBox<[String: OutboxDatabase]>([:])
    /// How long a write waits for another process's lock, by directory path, where not the default 10 s
    /// (tests of a busy database set a short one before opening it).
    static let busyTimeouts = NIOLockedValueBox<[String: Double]>([:])

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
        configuration.busyMode = .timeout(Self.busyTimeouts.withLockedValue { $0[directory.path] } ?? 10)
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
                    leaseExpires DOUBLE,
                    outcome TEXT,
                    finishedAt DOUBLE);
                CREATE INDEX IF NOT EXISTS outboxByOrigin ON outbox(origin, deadReason, seq);
                """)
            // Outboxes made before outcomes were recorded (another process's waiting operation reads them).
            let columns = try Row.fetchAll(db, sql: "PRAGMA table_info(outbox)").compactMap { $0["name"] as String? }
            if !columns.contains("outcome") { try db.execute(sql: "ALTER TABLE outbox ADD COLUMN outcome TEXT") }
            if !columns.contains("finishedAt") { try db.execute(sql: "ALTER TABLE outbox ADD COLUMN finishedAt DOUBLE") }
        }
        work.setSpecific(key: Self.workKey, value: ObjectIdentifier(self))
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
                        maximumAttempts, attempts, nextAttemptAt, lastStatus, lastError) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """, arguments: [
                        record.id, record.origin, record.method.rawValue, record.url.absoluteString,
                        DiskCacheCoding.text(of: CredentialFields.removed(from: record.headers)), record.body,
                        record.idempotencyKey, record.createdAt, record.expiresAt, record.maximumAttempts,
                        record.attempts, record.nextAttemptAt, record.lastStatus, record.lastError,
                    ])
            }
        } catch {
            throw NetworkError(.outboxUnavailable, "the request could not be written to the outbox: \(error)", underlying: error)
        }
    }

    /// What ``claimHead(origin:now:ignoringSchedule:lease:)`` found.
    enum Claim {
        /// The head row, what to do with it, and the record (claimed when the decision is `.send`).
        case head(ReplayStateMachine.Head, ReplayStateMachine.HeadDecision, OutboxRecord)
        /// Nothing pending for the origin.
        case empty
        /// The database could not be read or written (busy past its timeout, disk full, damaged).
        case failed(String)
    }

    /// How long a finished row is kept, so that an operation of another process waiting for it learns
    /// its outcome (see OutboxDatabase+Watch) before it is swept away.
    static let outcomeRetention: Double = 86_400

    /// Reads the oldest pending row of an origin and, in the same transaction, claims it (lease) or
    /// dead-letters it, as ``ReplayStateMachine/decide(_:now:ignoringSchedule:)`` says. Attempts are
    /// counted when a request is really sent (``complete(id:_:status:error:sent:now:)``), not here.
    func claimHead(origin: String, now: Double, ignoringSchedule: Bool, lease: Double) -> Claim {
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
                var result = Claim.empty
                try db.inTransaction(.immediate) {
                    try db.execute(sql: "DELETE FROM outbox WHERE outcome IS NOT NULL AND finishedAt < ?",
                                   arguments: [now - Self.outcomeRetention])
                    var found: (row: Row, record: OutboxRecord)?
                    while found == nil {
                        guard let row = try Row.fetchOne(db, sql: """
                            SELECT * FROM outbox WHERE origin = ? AND deadReason IS NULL AND outcome IS NULL ORDER BY seq LIMIT 1
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
                        try db.execute(sql: "UPDATE outbox SET leaseOwner = ?, leaseExpires = ? WHERE id = ?",
                                       arguments: [owner, now + lease, record.id])
                    case .deadLetter(let reason):
                        record.deadReason = reason
                        try db.execute(sql: "UPDATE outbox SET deadReason = ?, leaseOwner = NULL WHERE id = ?",
                                       arguments: [reason.rawValue, record.id])
                    case .wait:
                        break
                    }
                    result = .head(head, decision, record)
                    return .commit
                }
                return result
            }
        } catch {
            return .failed("\(error)")
        }
    }

    /// Extends this process's lease on a row it is replaying; `false` when the lease is no longer its own.
    @discardableResult
    func renewLease(id: String, until: Double) -> Bool {
        (try? pool.write { db in
            try db.execute(sql: "UPDATE outbox SET leaseExpires = ? WHERE id = ? AND leaseOwner = ?", arguments: [until, id, owner])
            return db.changesCount > 0
        }) ?? false
    }

    /// Records what became of an attempt: the row keeps its outcome for a while (for other processes'
    /// waiting operations), or waits for a retry at a later time. `sent` says whether the request went
    /// out (an attempt that never reached the wire is not counted against ``NetworkOperation/maximumAttempts``).
    func complete(id: String, _ completion: ReplayStateMachine.Completion, status: Int?, error: String?, sent: Bool, now: Double) {
        _ = try? pool.write { db in
            switch completion {
            case .delivered, .failedPermanently:
                let outcome = completion == .delivered ? "delivered" : "failed"
                try db.execute(sql: """
                    UPDATE outbox SET outcome = ?, finishedAt = ?, lastStatus = ?, lastError = ?, attempts = attempts + ?,
                        body = NULL, leaseOwner = NULL, leaseExpires = NULL WHERE id = ?
                    """, arguments: [outcome, now, status, error, sent ? 1 : 0, id])
            case .retry(let at):
                try db.execute(sql: """
                    UPDATE outbox SET nextAttemptAt = ?, lastStatus = ?, lastError = ?, attempts = attempts + ?,
                        leaseOwner = NULL, leaseExpires = NULL WHERE id = ?
                    """, arguments: [at, status, error, sent ? 1 : 0, id])
            }
        }
    }

    /// Deletes a row for good (a drop asked for while its replay was on the wire, which got no answer).
    func delete(id: String) {
        _ = try? pool.write { db in try db.execute(sql: "DELETE FROM outbox WHERE id = ?", arguments: [id]) }
    }

    // MARK: Reading and managing

    /// Every row (of one origin, if given), oldest first; damaged rows are left out.
    func records(origin: String? = nil) -> [OutboxRecord] {
        let rows: [Row] = (try? pool.read { db in
            if let origin {
                return try Row.fetchAll(db, sql: "SELECT * FROM outbox WHERE origin = ? AND outcome IS NULL ORDER BY seq", arguments: [origin])
            }
            return try Row.fetchAll(db, sql: "SELECT * FROM outbox WHERE outcome IS NULL ORDER BY seq")
        }) ?? []
        return rows.compactMap(OutboxRecord.init(row:))
    }

    /// How many rows there are, dead letters included (finished ones kept for other processes are not counted).
    func count() -> Int {
        (try? pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM outbox WHERE outcome IS NULL") }) ?? 0
    }

    /// The origins with pending rows.
    func pendingOrigins() -> [String] {
        (try? pool.read { db in
            try String.fetchAll(db, sql: "SELECT DISTINCT origin FROM outbox WHERE deadReason IS NULL AND outcome IS NULL ORDER BY origin")
        }) ?? []
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

    /// Runs `body` on the work queue (at once when already there) and returns its value.
    func onWork<Value>(_ body: () -> Value) -> Value {
        if DispatchQueue.getSpecific(key: Self.workKey) == ObjectIdentifier(self) { return body() }
        return work.sync(execute: body)
    }

    private func dropOnWork(id: String) -> Bool {
        let replay = listeners.withLockedValue { listeners -> NetworkOperation? in
            guard listeners.replays[id] != nil else { return nil }
            listeners.replays[id]?.dropRequested = true
            return listeners.replays[id]?.operation
        }
        if let replay {
            replay.context.queue.cancelIfNotStarted(replay)
            return true
        }
        let removed = (try? pool.write { db in
            try db.execute(sql: "DELETE FROM outbox WHERE id = ? AND outcome IS NULL", arguments: [id])
            return db.changesCount > 0
        }) ?? false
        if removed {
            operationDropped(id)
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
        let inFlight = listeners.withLockedValue { Array($0.replays.keys) }
        count += (try? pool.write { db in
            try db.execute(sql: "DELETE FROM outbox WHERE outcome IS NULL AND id NOT IN (SELECT value FROM json_each(?))",
                           arguments: [String(decoding: try JSONEncoder().encode(inFlight), as: UTF8.self)])
            return db.changesCount
        }) ?? 0
        return count
    }

    func operationDropped(_ id: String) {
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
        watchIfNeeded()
    }

    /// A replay of this process is on its way for a row (a drop meanwhile waits for its outcome).
    func replayStarted(_ operation: NetworkOperation, for id: String) {
        listeners.withLockedValue { $0.replays[id] = (operation, false) }
    }

    /// The replay of a row ended; returns whether a drop was asked for meanwhile.
    func replayEnded(for id: String) -> Bool {
        // The removed entry (and its operation) is released after the lock, never under it.
        let ended = listeners.withLockedValue { $0.replays.removeValue(forKey: id) }
        return ended?.dropRequested ?? false
    }

    /// The frozen operation waiting for a row's outcome, if it is alive in this process (left in the table).
    func attachedOperation(for id: String) -> NetworkOperation? {
        listeners.withLockedValue { $0.operations[id] }
    }

    /// The frozen operation waiting for a row's outcome, removed from the table.
    func detachOperation(for id: String) -> NetworkOperation? {
        listeners.withLockedValue { $0.operations.removeValue(forKey: id) }
    }
}
