import Foundation
import GRDB
import Logging
import NIOConcurrencyHelpers

/// The disk tier of ``ResponseCache``: an index in SQLite (through GRDB, WAL mode) and one file per
/// body, written to a temporary name and renamed, so a reader never sees half a body.
///
/// Damage is a miss, never a crash: a row whose body file is missing, short, or whose SHA-256 does not
/// match is removed; a database that cannot be opened or read is deleted and made anew. Several
/// engines, tasks and processes may share a directory (SQLite's locking, with a busy timeout).
/// Nothing secret is written: entries selected by `Authorization`/`Cookie` through `Vary` stay in
/// memory, and `Set-Cookie` is not written.
final class DiskCacheStore: Sendable {
    let directory: URL
    let capacity: Int
    private let database: NIOLockedValueBox<DatabasePool?>
    /// Access times of disk hits not yet written: a hit costs a read, not a write transaction. They are
    /// written with the next store, before any eviction (so LRU order is right), on close, and whenever
    /// this many have gathered. Lost on a crash, which only makes eviction slightly less exact.
    private let pendingAccess = NIOLockedValueBox<[String: Double]>([:])
    static let accessBatchSize = 64
    private let logger: Logger

    init(directory: URL, capacity: Int, logger: Logger = .courierSilent) {
        self.directory = directory
        self.capacity = max(0, capacity)
        self.logger = logger
        self.database = NIOLockedValueBox(nil)
    }

    deinit {
        // Only an open database is worth the write; never open one just for this.
        guard pendingAccessCount > 0, database.withLockedValue({ $0 != nil }) else { return }
        withDatabase(()) { pool in try pool.write { db in try writePendingAccess(db) } }
    }

    private var bodies: URL { directory.appendingPathComponent("bodies", isDirectory: true) }

    /// The open database, opened (or rebuilt when damaged) on first use; `nil` when the directory
    /// cannot be used at all.
    private func pool() -> DatabasePool? {
        database.withLockedValue { database in
            if let database { return database }
            database = open(rebuildingOnFailure: true)
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
            // Removed rows (a user's partition, a response's headers) are overwritten, not left in free pages.
            configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA secure_delete = ON") }
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
                        lastAccess DOUBLE NOT NULL);
                    CREATE INDEX IF NOT EXISTS entriesByURL ON entries(urlKey);
                    CREATE INDEX IF NOT EXISTS entriesByAccess ON entries(lastAccess);
                    """)
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
    private func withDatabase<T>(_ fallback: T, _ body: (DatabasePool) throws -> T) -> T {
        guard let pool = pool() else { return fallback }
        do {
            return try body(pool)
        } catch {
            logger.debug("courier disk cache error", metadata: ["courier-error": "\(error)"])
            if let error = error as? DatabaseError, [.SQLITE_CORRUPT, .SQLITE_NOTADB].contains(error.resultCode) {
                database.withLockedValue { $0 = nil }
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

    /// The intact entries stored for a URL key; damaged ones are removed on the way.
    func entries(for urlKey: String, now: Date) -> [CachedResponseEntry] {
        let rows: [Row] = withDatabase([]) { pool in
            try pool.read { db in try Row.fetchAll(db, sql: "SELECT * FROM entries WHERE urlKey = ? ORDER BY responseTime DESC", arguments: [urlKey]) }
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
        if !damaged.isEmpty { remove(ids: damaged) }
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
    private func writePendingAccess(_ db: Database) throws {
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
    private func column<Value: DatabaseValueConvertible>(_ row: Row, _ name: String, as type: Value.Type = Value.self) -> Value? {
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
            let body = FileManager.default.contents(atPath: bodies.appendingPathComponent(id).path),
            body.count == size, Digests.sha256Hex(body) == digest
        else { return nil }
        return CachedResponseEntry(
            url: url, status: HTTPResponse.Status(code: code, reasonPhrase: reason), headers: headers, body: body,
            requestTime: Date(timeIntervalSince1970: requestTime), responseTime: Date(timeIntervalSince1970: responseTime),
            varySelectedHeaders: vary, credentialPartition: partition.isEmpty ? nil : partition)
    }

    // MARK: Writing

    /// Stores an entry (replacing the variant it supersedes), then evicts by bytes.
    func store(_ entry: CachedResponseEntry, urlKey: String, now: Date) {
        guard pool() != nil else { return }
        guard DiskCacheCoding.mayWrite(entry), entry.body.count <= capacity else {
            // The variant it supersedes must not come back from disk once memory lets it go.
            return remove(urlKey: urlKey, varyKey: DiskCacheCoding.varyKey(entry.varySelectedHeaders), partition: entry.credentialPartition ?? "")
        }
        let id = UUID().uuidString.lowercased()
        let file = bodies.appendingPathComponent(id)
        let temporary = bodies.appendingPathComponent(".\(id).tmp")
        do {
            try entry.body.write(to: temporary)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: temporary.path)
            try FileManager.default.moveItem(at: temporary, to: file)
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            return
        }
        let varyKey = DiskCacheCoding.varyKey(entry.varySelectedHeaders)
        let partition = entry.credentialPartition ?? ""
        let replaced: [String] = withDatabase([id]) { pool in
            try pool.write { db in
                try writePendingAccess(db)
                let old = try ids(db, sql: "SELECT id FROM entries WHERE urlKey = ? AND varyKey = ? AND partition = ?",
                                  arguments: [urlKey, varyKey, partition])
                try db.execute(sql: "DELETE FROM entries WHERE urlKey = ? AND varyKey = ? AND partition = ?", arguments: [urlKey, varyKey, partition])
                try db.execute(sql: """
                    INSERT INTO entries (id, urlKey, varyKey, partition, url, status, reason, headers, requestTime,
                        responseTime, bodySize, bodyDigest, lastAccess) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """, arguments: [
                        id, urlKey, varyKey, partition, entry.url.absoluteString, entry.status.code, entry.status.reasonPhrase,
                        DiskCacheCoding.text(of: DiskCacheCoding.writableHeaders(entry.headers)),
                        entry.requestTime.timeIntervalSince1970, entry.responseTime.timeIntervalSince1970,
                        entry.body.count, Digests.sha256Hex(entry.body), now.timeIntervalSince1970,
                    ])
                return old
            }
        }
        removeFiles(replaced)
        evict()
    }

    /// Removes the one variant stored under this URL key, Vary selection and partition.
    private func remove(urlKey: String, varyKey: String, partition: String) {
        let ids: [String] = withDatabase([]) { pool in
            try pool.write { db in
                let found = try self.ids(db, sql: "SELECT id FROM entries WHERE urlKey = ? AND varyKey = ? AND partition = ?",
                                         arguments: [urlKey, varyKey, partition])
                try db.execute(sql: "DELETE FROM entries WHERE urlKey = ? AND varyKey = ? AND partition = ?", arguments: [urlKey, varyKey, partition])
                return found
            }
        }
        removeFiles(ids)
    }

    /// Removes every entry under these URL keys.
    func invalidate(_ urlKeys: [String]) {
        let ids: [String] = withDatabase([]) { pool in
            try pool.write { db in
                var ids: [String] = []
                for key in urlKeys {
                    ids += try self.ids(db, sql: "SELECT id FROM entries WHERE urlKey = ?", arguments: [key])
                    try db.execute(sql: "DELETE FROM entries WHERE urlKey = ?", arguments: [key])
                }
                return ids
            }
        }
        removeFiles(ids)
    }

    func removeAll() {
        withDatabase(()) { pool in try pool.write { db in try db.execute(sql: "DELETE FROM entries") } }
        try? FileManager.default.removeItem(at: bodies)
        try? FileManager.default.createDirectory(at: bodies, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    /// Bytes of bodies on disk, as the index counts them.
    var totalBytes: Int { count("SELECT coalesce(sum(bodySize), 0) AS n FROM entries") }

    var entryCount: Int { count("SELECT count(*) AS n FROM entries") }

    private func count(_ sql: String) -> Int {
        withDatabase(0) { pool in
            try pool.read { db in try Row.fetchOne(db, sql: sql).flatMap { column($0, "n", as: Int.self) } ?? 0 }
        }
    }

    private func remove(ids: [String]) {
        withDatabase(()) { pool in
            try pool.write { db in
                for id in ids { try db.execute(sql: "DELETE FROM entries WHERE id = ?", arguments: [id]) }
            }
        }
        removeFiles(ids)
    }

    /// Deletes body files; only names of the form this store writes, so a damaged row can never name
    /// another file.
    private func removeFiles(_ ids: [String]) {
        for id in ids where DiskCacheCoding.isValidID(id) {
            try? FileManager.default.removeItem(at: bodies.appendingPathComponent(id))
        }
    }

    /// The ids a query selects, leaving out any that are not ids this store could have written.
    private func ids(_ db: Database, sql: String, arguments: StatementArguments) throws -> [String] {
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
    }

    /// Least recently used first, until the bodies fit the capacity.
    private func evict() {
        let evicted: [String] = withDatabase([]) { pool in
            try pool.write { db in
                try writePendingAccess(db)
                var total = try Row.fetchOne(db, sql: "SELECT coalesce(sum(bodySize), 0) AS n FROM entries")
                    .flatMap { column($0, "n", as: Int.self) } ?? 0
                guard total > capacity else { return [] }
                var ids: [String] = []
                let rows = try Row.fetchCursor(db, sql: "SELECT rowid, id, bodySize FROM entries ORDER BY lastAccess ASC")
                var rowids: [Int64] = []
                while total > capacity, let row = try rows.next() {
                    guard let rowid = column(row, "rowid", as: Int64.self) else { continue }
                    rowids.append(rowid)
                    if let id = column(row, "id", as: String.self), DiskCacheCoding.isValidID(id) { ids.append(id) }
                    total -= max(0, column(row, "bodySize", as: Int.self) ?? 0)
                }
                for rowid in rowids { try db.execute(sql: "DELETE FROM entries WHERE rowid = ?", arguments: [rowid]) }
                return ids
            }
        }
        removeFiles(evicted)
    }
}
