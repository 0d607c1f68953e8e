public import Foundation
public import Logging

/// The durable outbox of a data directory: requests frozen because they could not be sent, waiting
/// to be replayed by an engine for their host.
///
/// Engines manage their outbox themselves (see ``NetworkOperation/isFreezable``); this type is for
/// looking at it and tidying it: listing entries, the dead letters among them, dropping one or all.
/// ```swift
/// let outbox = try Outbox()
/// for entry in outbox.entries where entry.state != .pending { print(entry.id, entry.url) }
/// ```
/// One outbox per directory, shared by every engine and process that uses it.
public final class Outbox: Sendable {
    let database: any OutboxStore

    /// Opens (creating if needed, with owner-only permissions) the outbox in a directory.
    ///
    /// A damaged outbox does not make this fail: it is set aside (see ``damageReports``) and a fresh
    /// one is opened, so that freezing keeps working.
    /// - Parameters:
    ///   - directory: The data directory; ``defaultDirectory`` by default.
    ///   - logger: Told (at error level) when the outbox is found damaged and set aside, if this is the
    ///     first use of the directory's outbox in the process.
    /// - Throws: ``NetworkError`` with ``NetworkError/Code/outboxUnavailable`` when it cannot be opened
    ///   (busy past its timeout, no permission, disk full).
    public init(directory: URL = Outbox.defaultDirectory, logger: Logger? = nil) throws(NetworkError) {
        database = try OutboxDatabase.open(at: directory, logger: logger)
    }

    /// Opens the outbox at a location: an SQLite data directory, or a server (`CourierPostgres`).
    ///
    /// - Parameters:
    ///   - location: Where the outbox is.
    ///   - logger: Told (at error level) when an SQLite outbox is found damaged and set aside.
    /// - Throws: ``NetworkError`` with ``NetworkError/Code/outboxUnavailable`` when it cannot be opened.
    public init(_ location: OutboxLocation, logger: Logger? = nil) throws(NetworkError) {
        database = try location.open(logger)
    }

    init(database: any OutboxStore) { self.database = database }

    /// The platform's data directory for Courier: `$XDG_DATA_HOME/courier` or `~/.local/share/courier`
    /// on Linux, `Application Support/courier` on Apple platforms.
    public static var defaultDirectory: URL {
        PlatformDirectory.courier(xdgVariable: "XDG_DATA_HOME", fallback: ".local/share", apple: .applicationSupportDirectory)
    }

    /// The directory the outbox lives in.
    public var directory: URL { database.location }

    /// Every entry, oldest first: pending ones and dead letters; none when the outbox cannot be read
    /// (a PostgreSQL server that is down). ``readEntries()`` tells the two apart.
    ///
    /// This reads the outbox on the calling thread: call it off the cooperative pool, or use
    /// ``readEntries()`` from async code.
    public var entries: [OutboxEntry] { database.records().map(\.entry) }

    /// Every entry, oldest first: pending ones and dead letters, read off the cooperative pool.
    ///
    /// - Throws: ``NetworkError`` with ``NetworkError/Code/outboxUnavailable`` when the outbox cannot be
    ///   read (its server is down or does not answer within its timeout; a database that cannot be read),
    ///   where ``entries`` would be empty.
    public func readEntries() async throws(NetworkError) -> [OutboxEntry] {
        let database = database
        let result: Result<[OutboxEntry], NetworkError> = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                do throws(NetworkError) {
                    continuation.resume(returning: .success(try database.records(origin: nil).map(\.entry)))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }

    /// The entries given up (expired, out of attempts, their body copy lost, or refused for want of
    /// credentials), oldest first.
    public var deadLetters: [OutboxEntry] { entries.filter { $0.state != .pending } }

    /// What became of the requests delivered or refused for good in the last 24 hours, by any engine or
    /// process, oldest first (state ``OutboxEntry/State/delivered`` or
    /// ``OutboxEntry/State/failedPermanently``, with ``OutboxEntry/finishedAt`` and
    /// ``OutboxEntry/lastStatus``). ``NetworkEngine/outboxEvents`` tells only what happens while you listen;
    /// this is how an app learns what was sent while it was not listening (launched after a replay, or
    /// subscribed late):
    /// ```swift
    /// for entry in try Outbox().outcomes where entry.state == .delivered { markSent(entry.idempotencyKey) }
    /// ```
    public var outcomes: [OutboxEntry] { database.finishedEntries() }

    /// Puts a dead letter back in line, to be sent again by the engine whose pipeline froze it: pending,
    /// its attempts counted from zero, due at once, its time to live counted again from now. For a request
    /// refused with `401`/`403` (``OutboxEntry/DeadLetterReason/unauthorized``) once the user has signed
    /// in again, or one that ran out of attempts. The engine sends it at its next replay (when its host
    /// becomes reachable, something is frozen, or at once with ``NetworkEngine/flushOutbox()``).
    /// ```swift
    /// for entry in outbox.deadLetters where entry.state == .deadLettered(.unauthorized) { outbox.retry(entry.id) }
    /// await api.flushOutbox()
    /// ```
    /// - Parameter id: The entry's id.
    /// - Returns: Whether there was such a dead letter (not a pending, finished or damaged entry).
    @discardableResult
    public func retry(_ id: String) -> Bool { database.revive(id: id, now: Date().timeIntervalSince1970) }

    /// Removes one entry (pending or dead-lettered); it will not be sent. An operation of this process
    /// waiting for it fails with ``NetworkError/Code/cancelled``.
    /// - Parameter id: The entry's id.
    /// - Returns: Whether there was such an entry.
    @discardableResult
    public func drop(_ id: String) -> Bool { database.drop(id: id) }

    /// Removes every entry. Returns how many there were.
    @discardableResult
    public func clear() -> Int { database.clear() }

    /// What this process found damaged in the outbox and set aside, oldest first: each a
    /// ``NetworkError/Code/outboxUnavailable`` whose message names the damaged file and where it was put.
    ///
    /// A damaged database file is renamed `outbox.sqlite.damaged-<time>` (with its `-wal` and `-shm`)
    /// and a fresh outbox takes its place; a write-ahead log whose committed transactions fail their
    /// checksums is copied aside under that name, and the outbox keeps what it could read. Nothing is
    /// deleted: see ``setAsideDatabases`` for every copy in the directory.
    /// ```swift
    /// for report in outbox.damageReports { showAlert("Some offline changes may be lost: \(report.message)") }
    /// ```
    public var damageReports: [NetworkError] { database.damageReports }

    /// The damaged outboxes set aside in this directory (by any process, at any time), oldest first.
    /// They stay until you remove them.
    public var setAsideDatabases: [URL] { database.setAsideDatabases }

    /// Every event about this outbox in this process, from now on (an engine's
    /// ``NetworkEngine/outboxEvents`` has those of its host).
    public var events: AsyncStream<OutboxEvent> { database.events(origin: nil) }
}
