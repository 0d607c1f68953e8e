public import Foundation
public import Logging
import NIOConcurrencyHelpers

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
///
/// The accessors without `await` read and write on the calling thread (the disk, or a round trip to a
/// server): use them off the cooperative pool. In async code the compiler picks the `async` ones of the
/// same name, which do their work on threads of their own.
public final class Outbox: Sendable {
    /// Where the outbox is.
    let location: OutboxLocation
    private let logger: Logger?
    /// Its store, once opened.
    private let opened: NIOLockedValueBox<(any OutboxStore)?>

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
    public convenience init(directory: URL = Outbox.defaultDirectory, logger: Logger? = nil) throws(NetworkError) {
        try self.init(.sqlite(directory: directory), logger: logger)
    }

    /// Opens the outbox at a location: an SQLite data directory, or a server (`CourierPostgres`), on the
    /// calling thread (in async code, ``open(_:logger:)`` does it on a thread of its own).
    ///
    /// - Parameters:
    ///   - location: Where the outbox is.
    ///   - logger: Told (at error level) when an SQLite outbox is found damaged and set aside.
    /// - Throws: ``NetworkError`` with ``NetworkError/Code/outboxUnavailable`` when it cannot be opened.
    public init(_ location: OutboxLocation, logger: Logger? = nil) throws(NetworkError) {
        self.location = location
        self.logger = logger
        self.opened = NIOLockedValueBox(try location.open(logger))
    }

    /// Opens the outbox at a location on a thread of its own: the caller's executor never waits for the
    /// disk or a server.
    /// - Parameters:
    ///   - location: Where the outbox is.
    ///   - logger: Told (at error level) when an SQLite outbox is found damaged and set aside.
    /// - Returns: The outbox.
    /// - Throws: ``NetworkError`` with ``NetworkError/Code/outboxUnavailable`` when it cannot be opened.
    public static func open(_ location: OutboxLocation, logger: Logger? = nil) async throws(NetworkError) -> Outbox {
        let result: Result<Outbox, NetworkError> = await offThread {
            do throws(NetworkError) { return .success(try Outbox(location, logger: logger)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// An outbox opened when first used (an engine's ``NetworkEngine/outbox``).
    init(lazily location: OutboxLocation, logger: Logger?) {
        self.location = location
        self.logger = logger
        self.opened = NIOLockedValueBox(nil)
    }

    /// The store, opened now if it was not yet (on the calling thread).
    func store() throws(NetworkError) -> any OutboxStore {
        if let store = opened.withLockedValue({ $0 }) { return store }
        let store = try location.open(logger)
        opened.withLockedValue { $0 = store }
        return store
    }

    /// The store, or `nil` when it cannot be opened.
    var database: (any OutboxStore)? { try? store() }

    /// Runs `body` on a thread of its own (not the cooperative pool) and waits for it without blocking.
    private static func offThread<Value: Sendable>(_ body: @escaping @Sendable () -> Value) async -> Value {
        await onQueue(DispatchQueue.global(qos: .utility), body)
    }

    /// The platform's data directory for Courier: `$XDG_DATA_HOME/courier` or `~/.local/share/courier`
    /// on Linux, `Application Support/courier` on Apple platforms.
    public static var defaultDirectory: URL {
        PlatformDirectory.courier(xdgVariable: "XDG_DATA_HOME", fallback: ".local/share", apple: .applicationSupportDirectory)
    }

    /// The directory the outbox lives in (for an outbox on a server, a URL naming it, without credentials).
    public var directory: URL { location.url }

    /// Every entry, oldest first: pending ones and dead letters; none when the outbox cannot be read
    /// (a PostgreSQL server that is down). ``readEntries()`` tells the two apart.
    ///
    /// This reads the outbox on the calling thread: call it off the cooperative pool, or use
    /// ``readEntries()`` from async code.
    public var entries: [OutboxEntry] { database?.records().map(\.entry) ?? [] }

    /// Every entry, oldest first: pending ones and dead letters, read off the cooperative pool.
    ///
    /// - Throws: ``NetworkError`` with ``NetworkError/Code/outboxUnavailable`` when the outbox cannot be
    ///   opened or read (its server is down or does not answer within its timeout; a database that cannot
    ///   be read), where ``entries`` would be empty.
    public func readEntries() async throws(NetworkError) -> [OutboxEntry] {
        let result: Result<[OutboxEntry], NetworkError> = await Self.offThread { [self] in
            do throws(NetworkError) {
                return .success(try store().records(origin: nil).map(\.entry))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// The entries given up (expired, out of attempts, their body copy lost, or refused for want of
    /// credentials), oldest first. Read on the calling thread, like ``entries``.
    public var deadLetters: [OutboxEntry] { entries.filter { $0.state != .pending } }

    /// The entries given up, oldest first (``deadLetters``), read off the cooperative pool.
    /// - Throws: As ``readEntries()``.
    public func readDeadLetters() async throws(NetworkError) -> [OutboxEntry] {
        try await readEntries().filter { $0.state != .pending }
    }

    /// What became of the requests delivered or refused for good in the last 24 hours, by any engine or
    /// process, oldest first (state ``OutboxEntry/State/delivered`` or
    /// ``OutboxEntry/State/failedPermanently``, with ``OutboxEntry/finishedAt`` and
    /// ``OutboxEntry/lastStatus``). ``NetworkEngine/outboxEvents`` tells only what happens while you listen;
    /// this is how an app learns what was sent while it was not listening (launched after a replay, or
    /// subscribed late):
    /// ```swift
    /// for entry in try await Outbox.open(.sqlite(directory: dataDirectory)).readOutcomes() where entry.state == .delivered {
    ///     markSent(entry.idempotencyKey)
    /// }
    /// ```
    /// Read on the calling thread, like ``entries``; none when the outbox cannot be read.
    public var outcomes: [OutboxEntry] { (try? database?.finishedEntries()) ?? [] }

    /// What became of the requests delivered or refused for good (``outcomes``), read off the cooperative pool.
    /// - Throws: As ``readEntries()``.
    public func readOutcomes() async throws(NetworkError) -> [OutboxEntry] {
        let result: Result<[OutboxEntry], NetworkError> = await Self.offThread { [self] in
            do throws(NetworkError) {
                return .success(try store().finishedEntries())
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Puts a dead letter back in line, to be sent again by the engine whose pipeline froze it: pending,
    /// its attempts counted from zero, due at once, its time to live counted again from now. For a request
    /// refused with `401`/`403` (``OutboxEntry/DeadLetterReason/unauthorized``) once the user has signed
    /// in again, or one that ran out of attempts. The engine sends it at its next replay (when its host
    /// becomes reachable, something is frozen, or at once with ``NetworkEngine/flushOutbox()``).
    /// ```swift
    /// for entry in try await outbox.readDeadLetters() where entry.state == .deadLettered(.unauthorized) {
    ///     await outbox.retry(entry.id)
    /// }
    /// await api.flushOutbox()
    /// ```
    /// Written on the calling thread; the `async` one of the same name is not.
    /// - Parameter id: The entry's id.
    /// - Returns: Whether there was such a dead letter (not a pending, finished or damaged entry).
    @discardableResult
    public func retry(_ id: String) -> Bool { database?.revive(id: id, now: Date().timeIntervalSince1970) ?? false }

    /// Puts a dead letter back in line (see the synchronous one), off the cooperative pool.
    /// - Parameter id: The entry's id.
    /// - Returns: Whether there was such a dead letter.
    @discardableResult
    public func retry(_ id: String) async -> Bool { await Self.offThread { [self] in retry(id) } }

    /// Removes one entry (pending or dead-lettered); it will not be sent. An operation of this process
    /// waiting for it fails with ``NetworkError/Code/cancelled``. An entry that another process (another
    /// instance of a fleet) is sending at this moment is not removed: its attempt decides.
    /// Written on the calling thread; the `async` one of the same name is not.
    /// - Parameter id: The entry's id.
    /// - Returns: Whether there was such an entry, and it was removed (or this process's replay of it stopped).
    @discardableResult
    public func drop(_ id: String) -> Bool { database?.dropAskedByUser(id: id) ?? false }

    /// Removes one entry (see the synchronous one), off the cooperative pool.
    /// - Parameter id: The entry's id.
    /// - Returns: Whether there was such an entry, and it was removed.
    @discardableResult
    public func drop(_ id: String) async -> Bool { await Self.offThread { [self] in drop(id) } }

    /// Removes every entry (but those other processes are sending at this moment). Returns how many.
    /// Written on the calling thread; the `async` one of the same name is not.
    @discardableResult
    public func clear() -> Int { database?.clear() ?? 0 }

    /// Removes every entry (see the synchronous one), off the cooperative pool. Returns how many.
    @discardableResult
    public func clear() async -> Int { await Self.offThread { [self] in clear() } }

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
    public var damageReports: [NetworkError] { database?.damageReports ?? [] }

    /// The damaged outboxes set aside in this directory (by any process, at any time), oldest first.
    /// They stay until you remove them.
    public var setAsideDatabases: [URL] { database?.setAsideDatabases ?? [] }

    /// Every event about this outbox in this process, from now on (an engine's
    /// ``NetworkEngine/outboxEvents`` has those of its host). Subscribing opens nothing.
    public var events: AsyncStream<OutboxEvent> { OutboxListeners.shared(location.listenersKey).events(origin: nil) }
}
