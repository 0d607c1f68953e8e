import Courier
import Foundation
import Logging
import NIOConcurrencyHelpers
import PostgresNIO

/// An outbox on PostgreSQL: one table per outbox name (``PostgresOutboxSchema``), shared by every
/// instance of a service, each claiming rows with `FOR UPDATE SKIP LOCKED` and a lease it renews while
/// the replay runs. New rows and outcomes are announced with `NOTIFY`, so idle instances wake at once
/// (``PostgresOutboxStore+Notifications``).
///
/// The store's requirements are synchronous (``OutboxStore``): each runs its queries on the cooperative
/// pool and waits for them on the calling thread, which is always one of the outbox's dispatch queues.
/// A lost connection is a typed error for a freeze (``NetworkError/Code/outboxUnavailable``: the request
/// is not reported frozen) and a failed claim for a replay (it pauses and tries again), never a crash.
final class PostgresOutboxStore: OutboxStore {
    let client: PostgresClient
    let schema: PostgresOutboxSchema
    let listeners: OutboxListeners
    let work = DispatchQueue(label: "courier.outbox.postgres.work")
    let leases = DispatchQueue(label: "courier.outbox.postgres.leases")
    let location: URL
    var damageReports: [NetworkError] { [] }
    var setAsideDatabases: [URL] { [] }
    /// This instance's name on leases: host, process and a random part (a lease outlives a killed
    /// instance only until it expires; nothing here can tell whether another machine's process is alive).
    let owner: String
    let logger: Logger
    /// How long one store operation may take before it fails (a stalled or stopped server never holds a
    /// queue forever, and a freeze fails with a typed error rather than waiting for the server to return).
    let timeout: Duration
    /// The notification task and whether the store is closed.
    let notifications = NIOLockedValueBox<(task: Task<Void, Never>?, isListening: Bool)>((nil, false))
    /// The rows whose lease renewal is on its way (one at a time per row).
    let renewing = NIOLockedValueBox<Set<String>>([])
    /// When the last claim removed finished rows past their retention (seconds since 1970).
    let lastPurge = NIOLockedValueBox<Double>(0)
    /// The store's statements on the server, awaited, stalled or repairing (``StalledStatementsStateMachine``).
    let statements: NIOLockedValueBox<StalledStatementsStateMachine>
    /// Whether a look at settled rows that could not be read is scheduled again (one at a time).
    let settleAgain = NIOLockedValueBox(false)
    /// The notifications on their way (``NoticeCoalescingStateMachine``).
    let notices = NIOLockedValueBox(NoticeCoalescingStateMachine<Notice>())

    /// How many of the store's statements may be on the server at once, awaited or stalled: so many of the
    /// app's pooled connections at most, however long the server does not answer. (Outcome writes are not
    /// counted: one per row at a time, each waited for until the server takes it, as is the listening
    /// connection.)
    static let statementLimit = 4

    private static let registry = NIOLockedValueBox<[String: PostgresOutboxStore]>([:])

    /// The openings under way, by key: when each one's migration was sent. A migration waits on an advisory
    /// lock (another instance migrating, an operator) holding a connection until the server answers, even
    /// once its caller gave up: one at a time per outbox, so failed openings cannot take the app's pool.
    private static let openings = NIOLockedValueBox<[String: Double]>([:])

    /// The store of an outbox name on a client, opened (and its table created or migrated) once per process.
    /// (The first opening's `timeout` is the store's.)
    static func open(
        client: PostgresClient, name: String, location: URL, timeout: Duration = .seconds(15), logger: Logger?
    ) throws(NetworkError) -> PostgresOutboxStore {
        let key = key(client: client, name: name)
        if let store = registry.withLockedValue({ $0[key] }) { return store }
        let schema: PostgresOutboxSchema
        do {
            schema = try PostgresOutboxSchema(name: name)
        } catch {
            throw NetworkError(.outboxUnavailable, "\(error)")
        }
        let store = PostgresOutboxStore(client: client, schema: schema, location: location, timeout: timeout, logger: logger)
        let began: Double
        switch try waitForOpening(key: key, name: name, store: store) {
        case .opened(let opened): return opened
        case .began(let at): began = at
        }
        let openings = openings
        do {
            // Left to finish when its caller gives up (cancelling does not stop a statement waiting on the
            // server): the next opening waits for it to end, or for it to count as lost.
            try store.blockingWrite(finishesWhenAbandoned: true, afterwards: { _, _ in
                openings.withLockedValue { if $0[key] == began { $0[key] = nil } }
            }) { [schema, client] _ in try await schema.migrate(client) }
        } catch {
            throw NetworkError(.outboxUnavailable, "the PostgreSQL outbox \(name) at \(location.absoluteString) cannot be opened: \(Self.describe(error))",
                               underlying: error)
        }
        let opened = registry.withLockedValue { registry -> (PostgresOutboxStore, Bool) in
            if let existing = registry[key] { return (existing, false) }
            registry[key] = store
            return (store, true)
        }
        if opened.1 { store.startListening() }
        return opened.0
    }

    /// Waits (at most the store's timeout) while another opening of `key` is migrating; then marks this one
    /// under way (`.began`, when). The store another opening registered meanwhile, if any (`.opened`).
    /// - Throws: ``NetworkError/Code/outboxUnavailable`` when the other opening has not ended within the
    ///   timeout (one older than the time after which statements count as lost no longer holds this one back).
    private static func waitForOpening(key: String, name: String, store: PostgresOutboxStore) throws(NetworkError) -> Opening {
        let deadline = uptime() + interval(store.timeout)
        let lostAfter = max(60, 4 * interval(store.timeout))
        while true {
            if let opened = registry.withLockedValue({ $0[key] }) { return .opened(opened) }
            let now = uptime()
            let began = openings.withLockedValue { openings -> Bool in
                if let since = openings[key], now - since < lostAfter { return false }
                openings[key] = now
                return true
            }
            if began { return .began(at: now) }
            guard now < deadline else {
                throw NetworkError(.outboxUnavailable, "the PostgreSQL outbox \(name) cannot be opened yet: an earlier opening's migration "
                    + "has not ended within \(seconds(store.timeout)) (does another session hold the migration lock, or is the server stalled?)")
            }
            usleep(2_000)
        }
    }

    private enum Opening {
        case opened(PostgresOutboxStore)
        case began(at: Double)
    }

    /// The store's key in this process: its client and outbox name (its registry's, and its listeners').
    static func key(client: PostgresClient, name: String) -> String { "postgres:\(ObjectIdentifier(client).hashValue) \(name)" }

    private init(client: PostgresClient, schema: PostgresOutboxSchema, location: URL, timeout: Duration, logger: Logger?) {
        self.client = client
        self.listeners = OutboxListeners.shared(Self.key(client: client, name: schema.name))
        self.timeout = timeout
        self.statements = NIOLockedValueBox(StalledStatementsStateMachine(
            limit: Self.statementLimit, patience: Self.interval(timeout), lostAfter: max(60, 4 * Self.interval(timeout))))
        self.schema = schema
        self.location = location
        self.logger = logger ?? Logger(label: "courier.outbox.postgres", factory: { _ in SwiftLogNoOpLogHandler() })
        let host = ProcessInfo.processInfo.hostName
        self.owner = "\(host):\(getpid()):\(UUID().uuidString.prefix(8).lowercased())"
        claimWorkQueue(work)
    }

    /// How much longer than the timeout a row being frozen stays leased to its instance: the time its
    /// removal has, should its freeze be reported failed, before another instance could claim it.
    static let freezeHoldMargin: Double = 60

    /// The lease owner a freeze holds its row with, until its caller is told it is frozen: never a
    /// replay's (`owner`), so that giving it back can never clear a replay's lease.
    static func freezeHolder(_ owner: String) -> String { owner + "#freeze" }

    static func interval(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    static func seconds(_ duration: Duration) -> String {
        let milliseconds = duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
        return milliseconds % 1000 == 0 ? "\(milliseconds / 1000) s" : "\(milliseconds) ms"
    }

    /// The error a transaction failed with (its closure's, else its begin's, commit's or rollback's).
    static func innermost(_ error: any Error) -> any Error {
        if let error = error as? PostgresTransactionError,
            let inner = error.closureError ?? error.beginError ?? error.commitError ?? error.rollbackError {
            return innermost(inner)
        }
        return error
    }

    /// A PostgreSQL error as a user reads it: the server's message, not the query (which `PSQLError` hides).
    static func describe(_ error: any Error) -> String {
        let error = innermost(error)
        if let error = error as? NetworkError { return error.message }
        if let error = error as? PSQLError {
            if let message = error.serverInfo?[.message] { return "PostgreSQL: \(message)" }
            return "PostgreSQL: \(error.code)"
        }
        return "\(error)"
    }

    // MARK: Reading and managing

    func records(origin: String?) throws(NetworkError) -> [OutboxRecord] {
        do {
            return try blocking { [self] in try await schema.pending(origin: origin, client: client, logger: logger) }
        } catch {
            throw NetworkError(
                .outboxUnavailable, "the PostgreSQL outbox \(schema.name) cannot be read: \(Self.describe(error))", underlying: error)
        }
    }

    func count() -> Int {
        (try? blocking { [self] in try await schema.count(client: client, logger: logger) }) ?? 0
    }

    func finishedEntries() throws(NetworkError) -> [OutboxEntry] {
        do {
            return try blocking { [self] in try await schema.finished(client: client, logger: logger) }
        } catch {
            throw NetworkError(
                .outboxUnavailable, "the PostgreSQL outbox \(schema.name) cannot be read: \(Self.describe(error))", underlying: error)
        }
    }

    func revive(id: String, now: Double) -> Bool {
        onWork(startingWithin: Self.interval(timeout)) { [self] in
            let revived = (try? blocking { [self] in try await schema.revive(id: id, client: client, logger: logger) }) ?? false
            if revived { notify(.due) }
            return revived
        } ?? false
    }

    func drop(id: String) -> Bool {
        onWork { dropOnWork(id: id) }
    }

    func dropAskedByUser(id: String) -> Bool {
        // Not behind an outcome the server has not taken for longer than the timeout.
        onWork(startingWithin: Self.interval(timeout)) { [self] in dropOnWork(id: id) } ?? false
    }

    private func dropOnWork(id: String) -> Bool {
        if dropReplayInFlight(id) { return true }
        // Not a row another instance is sending now (its lease is live): its attempt decides. A delete
        // the server makes after this gave up is reported then (the waiting operation ends).
        let owner = owner
        let removed = (try? blockingWrite(finishesWhenAbandoned: true, afterwards: { [self] outcome, reported in
            if !reported, case .success(true) = outcome { dropped(id) }
        }) { [self] _ in
            try await schema.delete(id: id, onlyPending: true, owner: owner, client: client, logger: logger)
        }) ?? false
        if removed {
            dropped(id)
        } else {
            settle([id])
        }
        return removed
    }

    private func dropped(_ id: String) {
        listeners.operationDropped(id)
        notify(.settled)
    }

    func clear() -> Int {
        onWork(startingWithin: Self.interval(timeout)) { [self] in
            var count = 0
            for record in records() where dropOnWork(id: record.id) { count += 1 }
            return count
        } ?? 0
    }
}
