import Foundation
import GRDB
import Logging
import NIOConcurrencyHelpers

/// The disk tier of ``ResponseCache``: an index in SQLite (through GRDB, WAL mode) holding each
/// response's row, with its body in the row up to ``inlineBodyLimit`` bytes (creating a file costs more
/// than the whole request for a small body), else in a file of its own, written whole before its row
/// is committed, so a reader never sees half a body.
///
/// Writes are queued (``enqueue(_:)``) and written in batches, one transaction per batch
/// (``drainQueuedWrites()``, on the cache's disk queue). An in-memory ``DiskCacheIndex`` of the URL keys
/// on disk lets a lookup whose key is not there answer without the disk queue (see that type for how
/// writes by other processes are noticed).
///
/// Damage is a miss, never a crash: a row whose body file is missing, short, or whose SHA-256 does not
/// match is removed; a database that cannot be opened or read is deleted and made anew. Several
/// engines, tasks and processes may share a directory (SQLite's locking, with a busy timeout).
/// Nothing secret is written: entries selected by `Authorization`/`Cookie` through `Vary` stay in
/// memory, and `Set-Cookie` is not written.
final class DiskCacheStore: Sendable {
    let directory: URL
    let capacity: Int
    /// The largest body kept in its row rather than in a file.
    static let inlineBodyLimit = 32 << 10
    private let database: NIOLockedValueBox<DatabasePool?>
    /// Access times of disk hits not yet written: a hit costs a read, not a write transaction. They are
    /// written with the next store, before any eviction (so LRU order is right), on close, and whenever
    /// this many have gathered. Lost on a crash, which only makes eviction slightly less exact.
    private let pendingAccess = NIOLockedValueBox<[String: Double]>([:])
    static let accessBatchSize = 64
    let logger: Logger
    /// The index, the queued writes and what the last transaction knew (see ``DiskCacheStore/Shared``).
    let shared: NIOLockedValueBox<Shared>
    /// Monotonic nanoseconds, for the index's trust interval.
    let uptime: @Sendable () -> UInt64

    /// What is shared between the threads that queue writes and the disk queue that runs them.
    struct Shared: Sendable {
        /// The URL keys on disk.
        var index: DiskCacheIndex
        /// Writes queued and not yet taken by a drain, in order.
        var queued: [Write] = []
        /// Whether a drain is scheduled and has not yet taken the queue.
        var drainScheduled = false
        /// `PRAGMA data_version` on the writer connection after the last check: it changes only when
        /// another connection commits.
        var dataVersion: Int?
        /// Bytes of bodies on disk as of the last transaction, or `nil` to count again.
        var totalBytes: Int?

        /// The database was closed or dropped: what was known about it is not any more.
        mutating func forgetDatabase() {
            index.forget()
            dataVersion = nil
            totalBytes = nil
        }
    }

    /// A store for `directory`, opened on first use.
    /// - Parameters:
    ///   - directory: Where the index and the bodies live.
    ///   - capacity: The most body bytes kept.
    ///   - indexTrustInterval: How long, in nanoseconds, a negative answer of the key index is trusted
    ///     after it was checked against the database (see ``DiskCacheIndex``).
    ///   - logger: Where damage and errors are logged (debug).
    init(directory: URL, capacity: Int, indexTrustInterval: UInt64 = 1_000_000_000, logger: Logger = .courierSilent) {
        self.directory = directory
        self.capacity = max(0, capacity)
        self.logger = logger
        self.database = NIOLockedValueBox(nil)
        self.shared = NIOLockedValueBox(Shared(index: DiskCacheIndex(trustInterval: indexTrustInterval)))
        self.uptime = { DispatchTime.now().uptimeNanoseconds }
    }

    deinit {
        // Only an open database is worth the write; never open one just for this.
        guard pendingAccessCount > 0, database.withLockedValue({ $0 != nil }) else { return }
        withDatabase(()) { pool in try pool.write { db in try writePendingAccess(db) } }
    }

    var bodies: URL { directory.appendingPathComponent("bodies", isDirectory: true) }

    /// The open database, opened (or rebuilt when damaged) on first use; `nil` when the directory
    /// cannot be used at all.
    func pool() -> DatabasePool? {
        database.withLockedValue { database in
            if let database { return database }
            database = open(rebuildingOnFailure: true)
            if let database { loadIndex(database) }
            return database
        }
    }

    /// Removes the entries of credentialed requests that earlier versions partitioned by a bare SHA-256
    /// of the credentials (one hash per guessed password gives it back): every partition is now keyed
    /// (``CachePartitionKey``), so those rows would never be matched again anyway.
    private func forgetUnkeyedPartitions(_ pool: DatabasePool) throws {
        let ids = try pool.write { db -> [String] in
            let condition = "partition <> '' AND partition NOT LIKE '\(CachePartitionKey.prefix)%'"
            let ids = try String.fetchAll(db, sql: "SELECT id FROM entries WHERE \(condition)")
            if !ids.isEmpty { try db.execute(sql: "DELETE FROM entries WHERE \(condition)") }
            return ids
        }
        for id in ids { try? FileManager.default.removeItem(at: bodies.appendingPathComponent(id)) }
    }

    private func open(rebuildingOnFailure: Bool) -> DatabasePool? {
        let fileManager = FileManager.default
        do {
            try fileManager.createDirectory(at: bodies, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try fileManager.setAttributes([.posixPermissions: 0o700], ofItemAtPath: directory.path)
            var configuration = Configuration()
            configuration.busyMode = .timeout(5)
            // Lookups read one row at a time: one reader and a small page cache keep SQLite's own
            // memory (malloc'd, per connection) small beside the memory tier's.
            configuration.maximumReaderCount = 1
            configuration.prepareDatabase { db in
                // Removed rows (a user's partition, a response's headers) are overwritten, not left in free pages.
                try db.execute(sql: "PRAGMA secure_delete = ON")
                try db.execute(sql: "PRAGMA cache_size = -256")
                // A cache may lose its last writes on power loss (never its consistency): no fsync per
                // commit, only at checkpoints.
                try db.execute(sql: "PRAGMA synchronous = NORMAL")
            }
            let pool = try DatabasePool(path: directory.appendingPathComponent("index.sqlite").path, configuration: configuration)
            try pool.write { db in
                try db.execute(sql: """
                    CREATE TABLE IF NOT EXISTS entries (
                        id TEXT PRIMARY KEY NOT NULL,
                        urlKey TEXT NOT NULL,
                        varyKey TEXT NOT NULL,
                        partition TEXT NOT NULL,
                        url TEXT NOT NULL,
                        status INTEGER NOT NULL,
                        reason TEXT NOT NULL,
                        headers TEXT NOT NULL,
                        requestTime DOUBLE NOT NULL,
                        responseTime DOUBLE NOT NULL,
                        bodySize INTEGER NOT NULL,
                        bodyDigest TEXT NOT NULL,
                        lastAccess DOUBLE NOT NULL,
                        body BLOB);
                    CREATE INDEX IF NOT EXISTS entriesByURL ON entries(urlKey);
                    CREATE INDEX IF NOT EXISTS entriesByAccess ON entries(lastAccess);
                    """)
                // Databases of earlier versions kept every body in a file: small ones now go in the row.
                if try !db.columns(in: "entries").contains(where: { $0.name == "body" }) {
                    try db.execute(sql: "ALTER TABLE entries ADD COLUMN body BLOB")
                }
                _ = try Row.fetchAll(db, sql: "SELECT id FROM entries LIMIT 1")
            }
            try forgetUnkeyedPartitions(pool)
            return pool
        } catch {
            logger.debug("courier disk cache unusable", metadata: ["courier-error": "\(error)"])
            guard rebuildingOnFailure else { return nil }
            for name in ["index.sqlite", "index.sqlite-wal", "index.sqlite-shm"] {
                try? fileManager.removeItem(at: directory.appendingPathComponent(name))
            }
            try? fileManager.removeItem(at: bodies)
            return open(rebuildingOnFailure: false)
        }
    }

    /// Runs `body` on the database; a database error (corruption included) drops the database so the
    /// next use rebuilds it, and the call answers `fallback`.
    func withDatabase<T>(_ fallback: T, _ body: (DatabasePool) throws -> T) -> T {
        guard let pool = pool() else { return fallback }
        do {
            return try body(pool)
        } catch {
            logger.debug("courier disk cache error", metadata: ["courier-error": "\(error)"])
            if let error = error as? DatabaseError, [.SQLITE_CORRUPT, .SQLITE_NOTADB].contains(error.resultCode) {
                database.withLockedValue { $0 = nil }
                shared.withLockedValue { $0.forgetDatabase() }
                let fileManager = FileManager.default
                for name in ["index.sqlite", "index.sqlite-wal", "index.sqlite-shm"] {
                    try? fileManager.removeItem(at: directory.appendingPathComponent(name))
                }
                try? fileManager.removeItem(at: bodies)
            }
            return fallback
        }
    }

    // MARK: Reading

    /// What the key index says about `urlKey` now (see ``DiskCacheIndex``); never touches the disk.
    func indexAnswer(for urlKey: String) -> DiskCacheIndex.Answer {
        let now = uptime()
        return shared.withLockedValue { $0.index.answer(for: urlKey, now: now) }
    }

    /// The intact entries stored for a URL key; damaged ones are removed on the way. Checks the key
    /// index against the database first when it was not checked lately.
    func entries(for urlKey: String, now: Date) -> [CachedResponseEntry] {
        drainQueuedWrites()   // a queued store or invalidation of this key comes first
        validateIndexIfNeeded()
        let rows: [Row] = withDatabase([]) { pool in
            // A cached statement: prepared (and authorised) once per connection, not on every hit.
            try pool.read { db in
                try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM entries WHERE urlKey = ? ORDER BY responseTime DESC"), arguments: [urlKey])
            }
        }
        var entries: [CachedResponseEntry] = []
        var damaged: [String] = []
        for row in rows {
            guard let id = column(row, "id", as: String.self) else { continue }
            if let entry = decode(row) {
                entries.append(entry)
            } else {
                damaged.append(id)
            }
        }
        if !damaged.isEmpty { remove(ids: damaged, of: urlKey) }
        if !entries.isEmpty {
            let shouldFlush = pendingAccess.withLockedValue { pending in
                pending[urlKey] = now.timeIntervalSince1970
                return pending.count >= Self.accessBatchSize
            }
            if shouldFlush { withDatabase(()) { pool in try pool.write { db in try writePendingAccess(db) } } }
        }
        return entries
    }

    /// Writes the gathered access times, inside the caller's write transaction.
    func writePendingAccess(_ db: Database) throws {
        let pending = pendingAccess.withLockedValue { pending in
            defer { pending = [:] }
            return pending
        }
        for (urlKey, time) in pending {
            try db.execute(sql: "UPDATE entries SET lastAccess = max(lastAccess, ?) WHERE urlKey = ?", arguments: [time, urlKey])
        }
    }

    /// Access times not yet written (for tests).
    var pendingAccessCount: Int { pendingAccess.withLockedValue { $0.count } }

    /// A column's value, or `nil` when it is missing or of the wrong type (GRDB's subscript would trap).
    func column<Value: DatabaseValueConvertible>(_ row: Row, _ name: String, as type: Value.Type = Value.self) -> Value? {
        try? row.decode(Value.self, forColumn: name)
    }

    private func decode(_ row: Row) -> CachedResponseEntry? {
        guard let id = column(row, "id", as: String.self), DiskCacheCoding.isValidID(id),
            let urlString = column(row, "url", as: String.self), let url = URL(string: urlString),
            let code = column(row, "status", as: Int.self), (100...999).contains(code), let reason = column(row, "reason", as: String.self),
            let headerText = column(row, "headers", as: String.self), let headers = DiskCacheCoding.headers(from: headerText),
            let varyKey = column(row, "varyKey", as: String.self), let vary = DiskCacheCoding.vary(from: varyKey),
            let partition = column(row, "partition", as: String.self), let size = column(row, "bodySize", as: Int.self),
            let digest = column(row, "bodyDigest", as: String.self),
            let requestTime = column(row, "requestTime", as: Double.self), let responseTime = column(row, "responseTime", as: Double.self),
            let body = column(row, "body", as: Data.self) ?? FileManager.default.contents(atPath: bodies.appendingPathComponent(id).path),
            body.count == size, Digests.sha256Hex(body) == digest
        else { return nil }
        return CachedResponseEntry(
            url: url, status: HTTPResponse.Status(code: code, reasonPhrase: reason), headers: headers, body: body,
            requestTime: Date(timeIntervalSince1970: requestTime), responseTime: Date(timeIntervalSince1970: responseTime),
            varySelectedHeaders: vary, credentialPartition: partition.isEmpty ? nil : partition)
    }

    /// Bytes of bodies on disk, as the index counts them.
    var totalBytes: Int { count("SELECT coalesce(sum(bodySize), 0) AS n FROM entries") }

    var entryCount: Int { count("SELECT count(*) AS n FROM entries") }

    private func count(_ sql: String) -> Int {
        withDatabase(0) { pool in
            try pool.read { db in try Row.fetchOne(db, sql: sql).flatMap { column($0, "n", as: Int.self) } ?? 0 }
        }
    }

    /// Removes damaged rows of `urlKey`.
    private func remove(ids: [String], of urlKey: String) {
        let isEmptied: Bool = withDatabase(false) { pool in
            try pool.write { db in
                for id in ids { try db.execute(sql: "DELETE FROM entries WHERE id = ?", arguments: [id]) }
                return try !hasRows(db, urlKey: urlKey)
            }
        }
        shared.withLockedValue { shared in
            shared.totalBytes = nil   // counted again by the next write
            if isEmptied { shared.index.lastRowRemoved(urlKey) }
        }
        removeFiles(ids)
    }

    /// Deletes body files; only names of the form this store writes, so a damaged row can never name
    /// another file.
    func removeFiles(_ ids: [String]) {
        for id in ids where DiskCacheCoding.isValidID(id) {
            try? FileManager.default.removeItem(at: bodies.appendingPathComponent(id))
        }
    }

    /// The ids a query selects, leaving out any that are not ids this store could have written.
    func ids(_ db: Database, sql: String, arguments: StatementArguments) throws -> [String] {
        try Row.fetchAll(db, sql: sql, arguments: arguments).compactMap { column($0, "id", as: String.self) }
            .filter(DiskCacheCoding.isValidID)
    }

    /// Closes the database (a clean close checkpoints the WAL and removes its files).
    func close() {
        if pendingAccessCount > 0 { withDatabase(()) { pool in try pool.write { db in try writePendingAccess(db) } } }
        database.withLockedValue { database in
            try? database?.close()
            database = nil
        }
        shared.withLockedValue { $0.forgetDatabase() }
    }
}
