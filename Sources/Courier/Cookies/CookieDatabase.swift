import Foundation
import GRDB
import Logging
import NIOConcurrencyHelpers
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The SQLite file (through GRDB) behind a persistent ``CookieJar``: one row per cookie, keyed by name,
/// domain and path. Used only on its jar's serial queue, never on a caller's thread nor the cooperative
/// pool: every method blocks on disk.
///
/// The file is created owner-only (0600), in a directory created owner-only (0700) when missing; what
/// SQLite frees is overwritten (`secure_delete`), so removed values do not stay in the file. A
/// damaged file (`SQLITE_CORRUPT`, `SQLITE_NOTADB`, or `PRAGMA quick_check` failing), found on opening
/// or while writing, is renamed `<name>.damaged-<seconds since 1970>` (with its journal), logged at error
/// level, and a fresh file is started; the jar's memory is then written to it again. Any other failure
/// (permissions, a full disk) is logged and the jar carries on in memory: cookies are never worth
/// failing a request for.
final class CookieDatabase: Sendable {
    /// The pending writes of a jar, coalesced: the last change of each cookie wins.
    struct Writes: Sendable {
        /// Every row goes before `changes` are applied.
        var removesAll = false
        /// The cookie to keep under a key (`nil`: the row goes).
        var changes: [CookieKey: Cookie?] = [:]

        var isEmpty: Bool { !removesAll && changes.isEmpty }

        mutating func record(_ newChanges: [CookieStorage.Change]) {
            for change in newChanges {
                switch change {
                case .stored(let cookie): changes[cookie.key] = .some(cookie)
                case .removed(let key): changes[key] = .some(nil)
                case .removedAll:
                    removesAll = true
                    changes = [:]
                }
            }
        }
    }

    let file: URL
    let keepsSessionCookies: Bool
    let logger: Logger?
    /// The open database; `nil` before ``load()`` and when it cannot be opened.
    private let database = NIOLockedValueBox<DatabaseQueue?>(nil)
    /// What went wrong with the file, oldest first (for tests; also logged).
    let problems = NIOLockedValueBox<[String]>([])

    init(file: URL, keepsSessionCookies: Bool, logger: Logger?) {
        self.file = file
        self.keepsSessionCookies = keepsSessionCookies
        self.logger = logger
    }

    /// The prefix of a set-aside file's name.
    var setAsidePrefix: String { file.lastPathComponent + ".damaged-" }

    // MARK: Opening and reading

    /// Opens (creating) the file and reads its cookies; a damaged file is set aside first. Rows that
    /// cannot be read are skipped; session cookies are dropped unless the jar keeps them.
    /// - Returns: The cookies, or none when the file cannot be opened (the jar then lives in memory).
    func load() -> [Cookie] {
        do {
            let queue = try openChecked()
            database.withLockedValue { $0 = queue }
            return try readAll(queue)
        } catch where Self.isDamage(error) {
            setAside(cause: error)
            do {
                let queue = try openChecked()
                database.withLockedValue { $0 = queue }
                return []
            } catch {
                unavailable(error)
                return []
            }
        } catch {
            unavailable(error)
            return []
        }
    }

    private func openChecked() throws -> DatabaseQueue {
        let directory = file.deletingLastPathComponent()
        if !FileManager.default.fileExists(atPath: directory.path) {
            try FileManager.default.createDirectory(
                at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        // Created owner-only before SQLite sees it; SQLite gives its journal the same mode.
        createOwnerOnly(file.path)
        var configuration = Configuration()
        Self.configure(&configuration)
        let queue = try DatabaseQueue(path: file.path, configuration: configuration)
        do {
            let check = try queue.read { db in try String.fetchAll(db, sql: "PRAGMA quick_check") }
            if check != ["ok"] { throw Damage(description: "quick_check: " + check.prefix(3).joined(separator: "; ")) }
            try queue.write { db in
                try db.execute(sql: """
                    CREATE TABLE IF NOT EXISTS cookie (
                        name TEXT NOT NULL,
                        domain TEXT NOT NULL,
                        path TEXT NOT NULL,
                        value TEXT NOT NULL,
                        hostOnly INTEGER NOT NULL,
                        expires DOUBLE,
                        secure INTEGER NOT NULL,
                        httpOnly INTEGER NOT NULL,
                        sameSite TEXT NOT NULL,
                        creation DOUBLE NOT NULL,
                        lastAccess DOUBLE NOT NULL,
                        PRIMARY KEY (name, domain, path))
                    """)
                if !keepsSessionCookies { try db.execute(sql: "DELETE FROM cookie WHERE expires IS NULL") }
            }
            // A file written before `secure_delete` may hold removed values in its free space: rewrite it
            // once (VACUUM cannot run in a transaction); user_version 1 marks it done.
            try queue.writeWithoutTransaction { db in
                guard try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0 < 1 else { return }
                try db.execute(sql: "VACUUM")
                try db.execute(sql: "PRAGMA user_version = 1")
            }
        } catch {
            try? queue.close()
            throw error
        }
        for suffix in ["", "-journal", "-wal", "-shm"] where FileManager.default.fileExists(atPath: file.path + suffix) {
            try? FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path + suffix)
        }
        return queue
    }

    /// The jar's connection settings: a busy timeout, and `secure_delete` on, so that SQLite overwrites
    /// what it frees with zeros: a removed, expired or replaced cookie's value does not linger in the
    /// file's free pages (SQLite's default is off unless it was built with `SQLITE_SECURE_DELETE`).
    static func configure(_ configuration: inout Configuration) {
        configuration.busyMode = .timeout(5)
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA secure_delete = ON") }
    }

    private func readAll(_ queue: DatabaseQueue) throws -> [Cookie] {
        try queue.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM cookie ORDER BY creation").compactMap(Self.cookie(from:))
        }
    }

    private static func cookie(from row: Row) -> Cookie? {
        guard let name = row["name"] as String?, !name.isEmpty, let domain = row["domain"] as String?,
            let path = row["path"] as String?, let value = row["value"] as String?,
            let creation = row["creation"] as Double?, let lastAccess = row["lastAccess"] as Double?
        else { return nil }
        return Cookie(
            name: name, value: value, domain: domain, isHostOnly: (row["hostOnly"] as Int?) != 0, path: path,
            expires: (row["expires"] as Double?).map(Date.init(timeIntervalSince1970:)),
            isSecure: (row["secure"] as Int?) != 0, isHTTPOnly: (row["httpOnly"] as Int?) != 0,
            sameSite: Cookie.SameSite(attributeValue: row["sameSite"] as String? ?? ""),
            creationDate: Date(timeIntervalSince1970: creation), lastAccessDate: Date(timeIntervalSince1970: lastAccess))
    }

    // MARK: Writing

    /// Applies a jar's pending writes in one transaction. When the file turns out damaged, it is set
    /// aside and `snapshot` (every cookie the jar holds now) is written to a fresh one.
    func write(_ writes: Writes, snapshot: () -> [Cookie]) {
        guard let queue = database.withLockedValue({ $0 }) else { return }
        do {
            try apply(writes, to: queue)
        } catch where Self.isDamage(error) {
            setAside(cause: error)
            do {
                let fresh = try openChecked()
                database.withLockedValue { $0 = fresh }
                var all = Writes(removesAll: true)
                all.record(snapshot().map(CookieStorage.Change.stored))
                try apply(all, to: fresh)
            } catch {
                unavailable(error)
            }
        } catch {
            problems.withLockedValue { $0.append("write failed: \(Self.describe(error))") }
            logger?.warning("courier cookie jar could not be written", metadata: [
                "courier-cookie-jar": "\(file.path)", "courier-error": "\(Self.describe(error))",
            ])
        }
    }

    private func apply(_ writes: Writes, to queue: DatabaseQueue) throws {
        try queue.write { db in
            if writes.removesAll { try db.execute(sql: "DELETE FROM cookie") }
            for (key, cookie) in writes.changes {
                guard let cookie, !cookie.isSession || keepsSessionCookies else {
                    try db.execute(
                        sql: "DELETE FROM cookie WHERE name = ? AND domain = ? AND path = ?",
                        arguments: [key.name, key.domain, key.path])
                    continue
                }
                try db.execute(sql: """
                    INSERT OR REPLACE INTO cookie
                        (name, domain, path, value, hostOnly, expires, secure, httpOnly, sameSite, creation, lastAccess)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """, arguments: [
                        cookie.name, cookie.domain, cookie.path, cookie.value, cookie.isHostOnly,
                        cookie.expires?.timeIntervalSince1970, cookie.isSecure, cookie.isHTTPOnly, cookie.sameSite.description,
                        cookie.creationDate.timeIntervalSince1970, cookie.lastAccessDate.timeIntervalSince1970,
                    ])
            }
        }
    }

    /// Closes the file (the jar is going away).
    func close() {
        let queue = database.withLockedValue { queue in
            defer { queue = nil }
            return queue
        }
        try? queue?.close()
    }

    // MARK: Damage

    /// Damage found by a check (not an SQLite error).
    struct Damage: Error, CustomStringConvertible {
        var description: String
    }

    /// Whether an error means the file itself is damaged: `SQLITE_CORRUPT`, `SQLITE_NOTADB` or a failed check.
    static func isDamage(_ error: any Error) -> Bool {
        if error is Damage { return true }
        guard let error = error as? DatabaseError else { return false }
        let code = error.resultCode.primaryResultCode
        return code == .SQLITE_CORRUPT || code == .SQLITE_NOTADB
    }

    /// An error without anything a row held: SQLite's code and message only (GRDB keeps statement
    /// arguments out of its errors unless told otherwise, and this never asks).
    static func describe(_ error: any Error) -> String {
        if let error = error as? DatabaseError {
            return "SQLite error \(error.resultCode.rawValue): \(error.message ?? "")"
        }
        if let damage = error as? Damage { return damage.description }
        return String(describing: type(of: error))
    }

    /// Closes the database and renames the file and its journal `<name>.damaged-<seconds>`.
    private func setAside(cause: any Error) {
        close()
        let directory = file.deletingLastPathComponent()
        let stamp = Int(Date().timeIntervalSince1970)
        var base = setAsidePrefix + "\(stamp)"
        var suffix = 1
        while FileManager.default.fileExists(atPath: directory.appendingPathComponent(base).path) {
            suffix += 1
            base = setAsidePrefix + "\(stamp)-\(suffix)"
        }
        for extensionName in ["", "-journal", "-wal", "-shm"] where FileManager.default.fileExists(atPath: file.path + extensionName) {
            let target = directory.appendingPathComponent(base + extensionName)
            do {
                try FileManager.default.moveItem(atPath: file.path + extensionName, toPath: target.path)
            } catch {
                // Cannot move it: remove it rather than fail forever on it (cookies are not irreplaceable).
                try? FileManager.default.removeItem(atPath: file.path + extensionName)
            }
        }
        let message = "damaged (\(Self.describe(cause))), set aside as \(base); starting empty"
        problems.withLockedValue { $0.append(message) }
        // Error level, as for a damaged outbox: the user's persisted cookies (sign-ins) are lost.
        logger?.error("courier cookie jar damaged and set aside", metadata: [
            "courier-cookie-jar": "\(file.path)", "courier-set-aside": "\(base)", "courier-error": "\(Self.describe(cause))",
        ])
    }

    private func unavailable(_ error: any Error) {
        database.withLockedValue { $0 = nil }
        problems.withLockedValue { $0.append("unavailable: \(Self.describe(error))") }
        logger?.warning("courier cookie jar cannot be opened; cookies are kept in memory only", metadata: [
            "courier-cookie-jar": "\(file.path)", "courier-error": "\(Self.describe(error))",
        ])
    }
}

/// Creates a file readable and writable by its owner only, unless it exists.
private func createOwnerOnly(_ path: String) {
    let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
    if descriptor >= 0 { close(descriptor) }
}
