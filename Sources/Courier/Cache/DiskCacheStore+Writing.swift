import Foundation
import GRDB
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// Writing the disk tier: any thread queues a write (the key index counts it at once); the disk queue
// writes what has gathered in one batch: the body files, then one transaction for the rows, the
// eviction and the access times. The byte count is kept between transactions, not summed each time.
extension DiskCacheStore {
    /// A change to the disk tier, queued in order.
    enum Write: Sendable {
        /// Store an entry, replacing the variant it supersedes; when the entry may not be written,
        /// remove that variant instead (it must not come back from disk once memory lets it go).
        case store(CachedResponseEntry, urlKey: String, now: Date)
        /// Remove every entry under these URL keys.
        case invalidate([String])
    }

    /// One stored variant's identity: URL key, Vary selection, partition.
    private struct Variant {
        var urlKey: String
        var varyKey: String
        var partition: String
    }

    /// A write made ready for the transaction (its body file already written).
    private enum Step {
        case insert(id: String, CachedResponseEntry, Variant, accessTime: Date)
        case remove(Variant)
        case invalidate([String])
    }

    /// What a committed batch changed.
    private struct Outcome {
        var removedFiles: [String] = []
        var emptiedKeys: [String] = []
        var totalBytes = 0
    }

    /// Whether `entry` goes to disk (else storing it removes the variant it supersedes).
    func isWritable(_ entry: CachedResponseEntry) -> Bool {
        DiskCacheCoding.mayWrite(entry) && entry.body.count <= capacity
    }

    /// Queues a write and counts it in the key index.
    /// - Returns: Whether the caller must run ``drainQueuedWrites()`` on the disk queue (no drain was
    ///   scheduled that has not yet taken the queue).
    func enqueue(_ write: Write) -> Bool {
        shared.withLockedValue { shared in
            switch write {
            case .store(let entry, let urlKey, _): if isWritable(entry) { shared.index.storeQueued(urlKey) }
            case .invalidate(let keys): shared.index.invalidationQueued(keys)
            }
            shared.queued.append(write)
            defer { shared.drainScheduled = true }
            return !shared.drainScheduled
        }
    }

    /// Writes everything queued so far in one batch. Runs on the disk queue.
    func drainQueuedWrites() {
        let writes = shared.withLockedValue { shared in
            defer {
                shared.queued = []
                shared.drainScheduled = false
            }
            return shared.queued
        }
        if !writes.isEmpty { write(writes) }
    }

    /// Stores an entry now, with anything queued before it.
    func store(_ entry: CachedResponseEntry, urlKey: String, now: Date) {
        _ = enqueue(.store(entry, urlKey: urlKey, now: now))
        drainQueuedWrites()
    }

    /// Removes every entry under these URL keys now, with anything queued before.
    func invalidate(_ urlKeys: [String]) {
        _ = enqueue(.invalidate(urlKeys))
        drainQueuedWrites()
    }

    func removeAll() {
        drainQueuedWrites()   // what was stored before is removed too
        let isRemoved: Bool = withDatabase(false) { pool in
            try pool.write { db in try db.execute(sql: "DELETE FROM entries") }
            return true
        }
        if isRemoved {
            shared.withLockedValue { shared in
                shared.index.removedAll()
                shared.totalBytes = 0
            }
        }
        try? FileManager.default.removeItem(at: bodies)
        try? FileManager.default.createDirectory(at: bodies, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    /// Loads the key index when the database opens (on the thread that opens it).
    func loadIndex(_ pool: DatabasePool) {
        let now = uptime()
        try? pool.write { db in try refreshIfChangedElsewhere(db, now: now) }
    }

    /// Checks the key index against the database when its negative answers are no longer trusted
    /// (see ``DiskCacheIndex``). Runs on the disk queue, before a disk read.
    func validateIndexIfNeeded() {
        let now = uptime()
        guard shared.withLockedValue({ $0.index.needsValidation(now: now) }) else { return }
        let isChecked: Bool = withDatabase(false) { pool in
            try pool.write { db in try refreshIfChangedElsewhere(db, now: now) }
            return true
        }
        if isChecked { shared.withLockedValue { $0.index.validated(at: now) } }
    }

    // MARK: The batch

    private func write(_ writes: [Write]) {
        var storedKeys: [String] = []
        var steps: [Step] = []
        var newFiles: [String] = []
        let isOpen = pool() != nil
        for write in writes {
            switch write {
            case .store(let entry, let urlKey, let now):
                let variant = Variant(
                    urlKey: urlKey, varyKey: DiskCacheCoding.varyKey(entry.varySelectedHeaders), partition: entry.credentialPartition ?? "")
                guard isWritable(entry) else {
                    steps.append(.remove(variant))
                    continue
                }
                storedKeys.append(urlKey)
                guard isOpen else { continue }
                if entry.body.count <= Self.inlineBodyLimit {
                    steps.append(.insert(id: DiskCacheCoding.newID(), entry, variant, accessTime: now))
                } else if let id = writeBody(entry.body) {
                    // A body that cannot be written leaves the stored variant as it was.
                    newFiles.append(id)
                    steps.append(.insert(id: id, entry, variant, accessTime: now))
                }
            case .invalidate(let keys):
                steps.append(.invalidate(keys))
            }
        }
        let now = uptime()
        let outcome: Outcome? = isOpen ? withDatabase(nil) { pool in try pool.write { db in try apply(steps, db, now: now) } } : nil
        shared.withLockedValue { shared in
            for key in storedKeys { shared.index.storeDone(key) }
            guard let outcome else {
                shared.totalBytes = nil
                return
            }
            shared.totalBytes = outcome.totalBytes
            for key in outcome.emptiedKeys { shared.index.lastRowRemoved(key) }
            shared.index.validated(at: now)
        }
        // A failed transaction leaves the new bodies without rows: they go.
        removeFiles(outcome?.removedFiles ?? newFiles)
    }

    /// Inside the batch's transaction.
    private func apply(_ steps: [Step], _ db: Database, now: UInt64) throws -> Outcome {
        try writePendingAccess(db)
        try refreshIfChangedElsewhere(db, now: now)
        var outcome = Outcome()
        var total = try shared.withLockedValue { $0.totalBytes } ?? countBytes(db)
        var touched = Set<String>()
        for step in steps {
            switch step {
            case .insert(let id, let entry, let variant, let accessTime):
                let old = try removeRows(db, where: "urlKey = ? AND varyKey = ? AND partition = ?",
                                         [variant.urlKey, variant.varyKey, variant.partition])
                // Cached statements: a batch runs the same few statements for every write.
                try db.cachedStatement(sql: """
                    INSERT INTO entries (id, urlKey, varyKey, partition, url, status, reason, headers, requestTime,
                        responseTime, bodySize, bodyDigest, lastAccess, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """).execute(arguments: [
                        id, variant.urlKey, variant.varyKey, variant.partition, entry.url.absoluteString, entry.status.code,
                        entry.status.reasonPhrase, DiskCacheCoding.text(of: DiskCacheCoding.writableHeaders(entry.headers)),
                        entry.requestTime.timeIntervalSince1970, entry.responseTime.timeIntervalSince1970,
                        entry.body.count, Digests.sha256Hex(entry.body), accessTime.timeIntervalSince1970,
                        entry.body.count <= Self.inlineBodyLimit ? entry.body : nil,
                    ])
                total += entry.body.count - old.bytes
                outcome.removedFiles += old.ids
            case .remove(let variant):
                let old = try removeRows(db, where: "urlKey = ? AND varyKey = ? AND partition = ?",
                                         [variant.urlKey, variant.varyKey, variant.partition])
                total -= old.bytes
                outcome.removedFiles += old.ids
                touched.insert(variant.urlKey)
            case .invalidate(let keys):
                for key in keys {
                    let old = try removeRows(db, where: "urlKey = ?", [key])
                    total -= old.bytes
                    outcome.removedFiles += old.ids
                }
            }
        }
        try evict(db, total: &total, removedFiles: &outcome.removedFiles, touched: &touched)
        outcome.emptiedKeys = try touched.filter { try !hasRows(db, urlKey: $0) }
        outcome.totalBytes = total
        return outcome
    }

    /// Deletes the rows a condition selects; returns their body files (not for bodies kept in the row)
    /// and bytes.
    private func removeRows(_ db: Database, where condition: String, _ arguments: StatementArguments) throws -> (ids: [String], bytes: Int) {
        let rows = try Row.fetchAll(
            db.cachedStatement(sql: "SELECT id, bodySize, body IS NULL AS inFile FROM entries WHERE \(condition)"), arguments: arguments)
        guard !rows.isEmpty else { return ([], 0) }
        try db.cachedStatement(sql: "DELETE FROM entries WHERE \(condition)").execute(arguments: arguments)
        return (rows.compactMap(fileID), rows.reduce(0) { $0 + max(0, column($1, "bodySize", as: Int.self) ?? 0) })
    }

    /// The body file of a row selected with `id` and `inFile`, if it has one.
    private func fileID(_ row: Row) -> String? {
        guard column(row, "inFile", as: Bool.self) != false, let id = column(row, "id", as: String.self), DiskCacheCoding.isValidID(id)
        else { return nil }
        return id
    }

    /// Least recently used first, until the bodies fit the capacity.
    private func evict(_ db: Database, total: inout Int, removedFiles: inout [String], touched: inout Set<String>) throws {
        guard total > capacity else { return }
        let rows = try Row.fetchCursor(db, sql: "SELECT rowid, id, urlKey, bodySize, body IS NULL AS inFile FROM entries ORDER BY lastAccess ASC")
        var rowids: [Int64] = []
        while total > capacity, let row = try rows.next() {
            guard let rowid = column(row, "rowid", as: Int64.self) else { continue }
            rowids.append(rowid)
            if let id = fileID(row) { removedFiles.append(id) }
            if let urlKey = column(row, "urlKey", as: String.self) { touched.insert(urlKey) }
            total -= max(0, column(row, "bodySize", as: Int.self) ?? 0)
        }
        let delete = try db.cachedStatement(sql: "DELETE FROM entries WHERE rowid = ?")
        for rowid in rowids { try delete.execute(arguments: [rowid]) }
    }

    /// Reloads the key index and the byte count when another connection (another process, another
    /// cache on this directory) committed since the last check, or when they are not loaded. Inside a
    /// write transaction on the writer connection, whose `PRAGMA data_version` changes only then.
    private func refreshIfChangedElsewhere(_ db: Database, now: UInt64) throws {
        let version = try Row.fetchOne(db, sql: "PRAGMA data_version").flatMap { column($0, "data_version", as: Int.self) }
        let isCurrent = shared.withLockedValue { $0.index.isLoaded && $0.dataVersion != nil && $0.dataVersion == version }
        guard !isCurrent else { return }
        let keys = try Row.fetchAll(db, sql: "SELECT DISTINCT urlKey FROM entries").compactMap { column($0, "urlKey", as: String.self) }
        let total = try countBytes(db)
        shared.withLockedValue { shared in
            shared.index.loaded(keys, at: now)
            shared.dataVersion = version
            shared.totalBytes = total
        }
    }

    private func countBytes(_ db: Database) throws -> Int {
        try Row.fetchOne(db, sql: "SELECT coalesce(sum(bodySize), 0) AS n FROM entries").flatMap { column($0, "n", as: Int.self) } ?? 0
    }

    /// Whether any row is stored under `urlKey`.
    func hasRows(_ db: Database, urlKey: String) throws -> Bool {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM entries WHERE urlKey = ? LIMIT 1"), arguments: [urlKey]) != nil
    }

    /// Writes a body to a new file (owner-only) and returns its id, or `nil` when it could not be written.
    private func writeBody(_ body: Data) -> String? {
        let id = DiskCacheCoding.newID()
        let path = bodies.appendingPathComponent(id).path
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return nil }
        let isWritten = body.withUnsafeBytes { raw -> Bool in
            var offset = 0
            while offset < raw.count, let base = raw.baseAddress {
                let written = systemWrite(descriptor, base + offset, raw.count - offset)
                if written < 0 {
                    guard errno == EINTR else { return false }
                    continue
                }
                offset += written
            }
            return true
        }
        guard systemClose(descriptor) == 0, isWritten else {
            unlink(path)
            return nil
        }
        return id
    }
}

/// The C library's `write` and `close`, which `DiskCacheStore`'s own methods would otherwise shadow.
private func systemWrite(_ descriptor: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int { write(descriptor, buffer, count) }
private func systemClose(_ descriptor: Int32) -> Int32 { close(descriptor) }
