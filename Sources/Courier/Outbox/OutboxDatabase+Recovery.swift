import Foundation
import GRDB
import Logging
import NIOConcurrencyHelpers
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// A damaged outbox must never turn freezing into a lie (a request reported kept that is gone, or an
// error that blames the network). When opening, and whenever SQLite reports corruption, the outbox is
// checked; damage is reported (``OutboxDatabase/damageReports``, the logger, ``Outbox/damageReports``)
// and the damaged files are set aside, never deleted:
// - a damaged database file (`SQLITE_CORRUPT`, `SQLITE_NOTADB`, or `PRAGMA quick_check` failing) is
//   renamed `outbox.sqlite.damaged-<time>` with its `-wal` and `-shm`, and a fresh outbox is created;
// - a write-ahead log whose committed frames fail their checksums (SQLite would silently drop them and
//   every frame after) is copied aside under that name, and the outbox keeps what it can read. The log
//   is only judged when no other process has the database open (their frames may be mid-write).
// Only real corruption sets anything aside: a busy or locked database is an ordinary failure.
// Processes sharing the directory take an exclusive `flock` on it while they open or set aside, and
// follow a set-aside made by another (the file's identity changed) before their next write or claim.
extension OutboxDatabase {
    /// The pool and the identity (device, inode) of the file it opened.
    struct Store {
        var pool: DatabasePool
        var file: FileIdentity?
    }

    /// A file's device and inode.
    struct FileIdentity: Equatable {
        var device: UInt64
        var inode: UInt64

        init?(path: String) {
            var info = stat()
            guard stat(path, &info) == 0 else { return nil }
            device = UInt64(info.st_dev)
            inode = UInt64(info.st_ino)
        }
    }

    /// Damage found by a check (not an SQLite error).
    struct Damage: Error, CustomStringConvertible {
        var description: String
    }

    static let fileName = "outbox.sqlite"
    /// The prefix of a set-aside database's name.
    static let setAsidePrefix = "outbox.sqlite.damaged-"
    private static let recovery = NIOLock()

    static func mainPath(in directory: URL) -> String { directory.appendingPathComponent(fileName).path }

    /// Whether an error means the database itself is damaged (never busy, locked, full or unreadable).
    static func isDamage(_ error: any Error) -> Bool {
        if error is Damage { return true }
        guard let error = error as? DatabaseError else { return false }
        return isDamage(resultCode: error.resultCode.primaryResultCode.rawValue)
    }

    /// Whether an SQLite (primary) result code means damage: `SQLITE_CORRUPT` (11) or `SQLITE_NOTADB` (26).
    /// `SQLITE_BUSY` and `SQLITE_LOCKED` (another process at work) never do.
    static func isDamage(resultCode: Int32) -> Bool {
        resultCode == ResultCode.SQLITE_CORRUPT.rawValue || resultCode == ResultCode.SQLITE_NOTADB.rawValue
    }

    /// The set-aside databases in a directory, oldest first.
    static func setAsideFiles(in directory: URL) -> [URL] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.filter { $0.hasPrefix(setAsidePrefix) && !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm") && !$0.hasSuffix("-bodies") }
            .sorted().map { directory.appendingPathComponent($0) }
    }

    // MARK: Opening

    /// Opens the outbox of a directory, checking it first; damage found is set aside and returned as
    /// reports. `damaged`: the identity of a file found damaged while in use, set aside first (unless
    /// another process already did).
    static func openStore(in directory: URL, damaged: FileIdentity? = nil, cause: String? = nil) throws -> (Store, [NetworkError]) {
        let fileManager = FileManager.default
        try fileManager.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let lock = DirectoryLock(directory)
        defer { lock.unlock() }
        let path = mainPath(in: directory)
        var reports: [NetworkError] = []
        if let damaged, FileIdentity(path: path) == damaged {
            let aside = try setAside(in: directory, moving: true)
            reports.append(NetworkError(
                .outboxUnavailable, "the outbox \(path) is damaged (\(cause ?? "corrupt")) and was set aside as \(aside.path); "
                    + "a fresh outbox was created: what the damaged one held will not be sent", url: nil))
        }
        let wal = URL(fileURLWithPath: path + "-wal")
        if !isOpenElsewhere(path), let lost = OutboxWAL.damage(at: wal) {
            let aside = try setAside(in: directory, moving: false)
            reports.append(NetworkError(
                .outboxUnavailable, "the outbox's write-ahead log \(wal.path) is damaged: \(lost); requests frozen in it may be "
                    + "lost. A copy was set aside as \(aside.path); the outbox keeps what it could read", url: nil))
        }
        do {
            return (try openChecked(directory), reports)
        } catch where isDamage(error) {
            let aside = try setAside(in: directory, moving: true)
            reports.append(NetworkError(
                .outboxUnavailable, "the outbox \(path) is damaged (\(error)) and was set aside as \(aside.path); "
                    + "a fresh outbox was created: what the damaged one held will not be sent", url: nil, underlying: error))
            return (try openChecked(directory), reports)
        }
    }

    private static func openChecked(_ directory: URL) throws -> Store {
        let path = mainPath(in: directory)
        var configuration = Configuration()
        configuration.busyMode = .timeout(busyTimeouts.withLockedValue { $0[directory.path] } ?? 10)
        // A frozen request is reported only once it would survive a power cut, not just a crash:
        // every commit is synced (WAL's default, NORMAL, survives only a crash of the process).
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        let pool = try DatabasePool(path: path, configuration: configuration)
        do {
            let check = try pool.read { db in try String.fetchAll(db, sql: "PRAGMA quick_check") }
            if check != ["ok"] { throw Damage(description: "quick_check: " + check.prefix(3).joined(separator: "; ")) }
            try createSchema(pool)
        } catch {
            try? pool.close()
            throw error
        }
        for name in [fileName, fileName + "-wal", fileName + "-shm"] {
            let file = directory.appendingPathComponent(name).path
            if FileManager.default.fileExists(atPath: file) { try? FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file) }
        }
        return Store(pool: pool, file: FileIdentity(path: path))
    }

    /// Moves (or copies) the database and its `-wal` and `-shm` to `outbox.sqlite.damaged-<time>`;
    /// returns the new name of the database. The copies of its frozen bodies are kept with it, in
    /// `outbox.sqlite.damaged-<time>-bodies` (they may be all there is of those requests), without taking
    /// from the live outbox a copy it needs: a database moved away takes its rows' copies along, but not
    /// one still being made or committed by a live process; a database copied aside gets links to every
    /// row's copies, so those of rows the live one lost are not swept (see OutboxBodyStore+SetAside).
    static func setAside(in directory: URL, moving: Bool) throws -> URL {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        var base = setAsidePrefix + formatter.string(from: Date())
        var suffix = 1
        while FileManager.default.fileExists(atPath: directory.appendingPathComponent(base).path) {
            suffix += 1
            base = setAsidePrefix + formatter.string(from: Date()) + "-\(suffix)"
        }
        for extensionName in ["", "-wal", "-shm"] {
            let source = directory.appendingPathComponent(fileName + extensionName)
            guard FileManager.default.fileExists(atPath: source.path) else { continue }
            let target = directory.appendingPathComponent(base + extensionName)
            if moving {
                try FileManager.default.moveItem(at: source, to: target)
            } else {
                try FileManager.default.copyItem(at: source, to: target)
            }
        }
        let aside = directory.appendingPathComponent(base)
        OutboxBodyStore.setAside(copiesIn: directory, with: aside, moving: moving)
        return aside
    }

    /// Whether another process has the database open: SQLite holds a shared lock on it (and on its
    /// `-shm`) for as long as a connection is open in WAL mode. Only asked before this process opens it.
    static func isOpenElsewhere(_ path: String) -> Bool {
        func locked(_ file: String, start: Int, length: Int) -> Bool {
            let fd = openReadOnly(file)
            guard fd >= 0 else { return false }
            defer { close(fd) }
            var probe = flock()
            probe.l_type = Int16(F_WRLCK)
            probe.l_whence = Int16(SEEK_SET)
            probe.l_start = off_t(start)
            probe.l_len = off_t(length)
            guard fcntl(fd, F_GETLK, &probe) == 0 else { return true }   // cannot tell: assume it is
            return probe.l_type != Int16(F_UNLCK)
        }
        return locked(path, start: 0x4000_0002, length: 510) || locked(path + "-shm", start: 128, length: 1)
    }

    // MARK: In use

    /// Reports damage: kept for ``damageReports``, and logged.
    func reportDamage(_ report: NetworkError) {
        damageLog.withLockedValue { $0.append(report) }
        // An error-level message, unlike the library's others: requests a user asked to keep may be lost.
        logger?.error("courier outbox damaged and set aside", metadata: [
            "courier-outbox": "\(directory.path)", "courier-error": "\(report.message)",
        ])
    }

    /// Runs `body` on the current pool; when it meets damage, the database is set aside, a fresh one
    /// opened, and `body` runs again there.
    func withRecovery<Value>(_ body: (DatabasePool) throws -> Value) throws -> Value {
        followIfSetAside()
        let pool = self.pool
        do {
            return try body(pool)
        } catch where Self.isDamage(error) {
            try replace(pool, cause: "\(error)")
            return try body(self.pool)
        }
    }

    /// Notes damage met outside ``withRecovery(_:)``: the database is set aside for the next use.
    func noteIfDamaged(_ error: any Error) {
        guard Self.isDamage(error) else { return }
        try? replace(pool, cause: "\(error)")
    }

    /// Another process set the database aside (another file now has its name): open the new one. (A
    /// file that is simply gone, its directory removed, is left alone: nothing is recreated behind the
    /// user's back.)
    func followIfSetAside() {
        guard let current = FileIdentity(path: Self.mainPath(in: directory)) else { return }
        let (pool, known) = store.withLockedValue { ($0.pool, $0.file) }
        guard current != known else { return }
        try? replace(pool, cause: nil)
    }

    /// Replaces a damaged (or set-aside) pool by a fresh one, once however many callers noticed.
    private func replace(_ damagedPool: DatabasePool, cause: String?) throws {
        let reports = try Self.recovery.withLock { () throws -> [NetworkError]? in
            let known = store.withLockedValue { $0.pool === damagedPool ? $0.file : nil }
            guard let known else { return nil }   // already replaced
            let (fresh, reports) = try Self.openStore(in: directory, damaged: cause == nil ? nil : known, cause: cause)
            store.withLockedValue { $0 = fresh }
            return reports
        }
        guard let reports else { return }
        for report in reports { reportDamage(report) }
        // Operations of this process waiting for rows of the old database hear that they are lost.
        let waiting = listeners.state.withLockedValue { state in
            state.operations.keys.filter { state.replays[$0] == nil }
        }
        let present = Set(records().map(\.id))
        for id in waiting where !present.contains(id) {
            listeners.operationLost(id, because: "its outbox was damaged and set aside; it will not be sent")
        }
    }
}

/// An exclusive `flock` on a directory, held while an outbox in it is opened or set aside.
private struct DirectoryLock {
    private let fd: Int32

    init(_ directory: URL) {
        fd = open(directory.path, O_RDONLY)
        if fd >= 0 { _ = flock(fd, LOCK_EX) }
    }

    func unlock() {
        guard fd >= 0 else { return }
        _ = flock(fd, LOCK_UN)
        close(fd)
    }
}

private func openReadOnly(_ path: String) -> Int32 { open(path, O_RDONLY) }
