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
    /// The store's statements on the server, awaited or stalled (``StalledStatementsStateMachine``).
    let stalled = NIOLockedValueBox(StalledStatementsStateMachine(limit: PostgresOutboxStore.statementLimit))
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
        do {
            try store.blocking { [schema, client] in try await schema.migrate(client) }
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

    /// The store's key in this process: its client and outbox name (its registry's, and its listeners').
    static func key(client: PostgresClient, name: String) -> String { "postgres:\(ObjectIdentifier(client).hashValue) \(name)" }

    private init(client: PostgresClient, schema: PostgresOutboxSchema, location: URL, timeout: Duration, logger: Logger?) {
        self.client = client
        self.listeners = OutboxListeners.shared(Self.key(client: client, name: schema.name))
        self.timeout = timeout
        self.schema = schema
        self.location = location
        self.logger = logger ?? Logger(label: "courier.outbox.postgres", factory: { _ in SwiftLogNoOpLogHandler() })
        let host = ProcessInfo.processInfo.hostName
        self.owner = "\(host):\(getpid()):\(UUID().uuidString.prefix(8).lowercased())"
        claimWorkQueue(work)
    }

    /// Runs `body` on the store's own executor (threads of its own, never the cooperative pool) and waits
    /// for it here, for at most ``timeout``. The caller is one of the outbox's dispatch queues, or a
    /// thread calling ``Outbox``'s synchronous accessors: were `body` to run on the cooperative pool, callers
    /// blocking its few threads would leave it nowhere to run.
    ///
    /// When the caller gives up waiting, `body` is cancelled. Once it has ended, `afterwards` (if any) is
    /// told its outcome and whether that outcome reached the caller: a write that succeeded after its caller
    /// was told it failed (or whose failure may hide a commit) is the caller of this function's to repair.
    /// `body` gets a check to make just before it writes (`isAbandoned`), so that a late body mostly writes
    /// nothing at all.
    ///
    /// With `finishesWhenAbandoned`, a body the caller gave up on is not cancelled but left to finish, so
    /// that `afterwards` learns what the server really did (a cancelled statement may still run on the
    /// server, and its client side would only say "cancelled"): for writes whose late effect must be
    /// repaired or reported (a freeze, a drop).
    func blockingWrite<Value: Sendable>(
        finishesWhenAbandoned: Bool = false,
        afterwards: (@Sendable (_ outcome: Result<Value, any Error>, _ reported: Bool) -> Void)? = nil,
        _ body: @escaping @Sendable (_ isAbandoned: @escaping @Sendable () -> Bool) async throws -> Value
    ) throws -> Value {
        let wait = min(timeout, .seconds(86_400))
        let (seconds, attoseconds) = wait.components
        let deadline = DispatchTime.now() + .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
        try takePlace(before: deadline)
        let result = NIOLockedValueBox<BlockingCall<Value>>(.waiting)
        let done = DispatchSemaphore(value: 0)
        let isAbandoned: @Sendable () -> Bool = { result.withLockedValue { if case .abandoned = $0 { true } else { false } } }
        let task = Task(executorPreference: Self.executor) { [stalled] in
            let outcome: Result<Value, any Error>
            do {
                outcome = .success(try await body(isAbandoned))
            } catch {
                outcome = .failure(error)
            }
            let abandoned = result.withLockedValue { call -> Bool in
                if case .abandoned = call {
                    stalled.withLockedValue { $0.ended() }
                    return true
                }
                call = .finished(outcome)
                stalled.withLockedValue { $0.answered() }
                return false
            }
            afterwards?(outcome, !abandoned)
            done.signal()
        }
        _ = done.wait(timeout: deadline)
        let outcome = result.withLockedValue { call -> Result<Value, any Error>? in
            guard case .finished(let outcome) = call else {
                call = .abandoned
                // Counted until it ends, in the same step as its ending is told (the task takes this lock too).
                stalled.withLockedValue { $0.gaveUp() }
                return nil
            }
            return outcome
        }
        guard let outcome else {
            if !finishesWhenAbandoned { task.cancel() }
            throw NetworkError(.outboxUnavailable, "the PostgreSQL server did not answer within \(Self.seconds(timeout)) (is it running, and are the client's host, port, user and password right?)")
        }
        return try outcome.get()
    }

    /// Takes a place among the statements on the server (``StalledStatementsStateMachine``), waiting for one
    /// until `deadline` while they are being answered.
    /// - Throws: ``StatementsRefused`` at once when every place is taken and the server is not answering some
    ///   of them, or at `deadline`; the statement was never started.
    private func takePlace(before deadline: DispatchTime) throws(StatementsRefused) {
        while true {
            switch stalled.withLockedValue({ $0.start() }) {
            case .start:
                return
            case .refuse:
                throw StatementsRefused(description:
                    "the PostgreSQL server has not answered \(Self.statementLimit) statements of the outbox \(schema.name) on their way "
                    + "(is its table locked, or the server stalled?); no more are sent until it does")
            case .wait:
                guard DispatchTime.now() < deadline else {
                    throw StatementsRefused(description:
                        "the outbox \(schema.name) already has \(Self.statementLimit) statements on their way to the PostgreSQL server, "
                        + "and none finished within \(Self.seconds(timeout))")
                }
                usleep(2_000)
            }
        }
    }

    /// ``blockingWrite(afterwards:_:)`` for bodies whose late outcome needs no repair (reads, and writes
    /// that are safe to make late).
    func blocking<Value: Sendable>(_ body: @escaping @Sendable () async throws -> Value) throws -> Value {
        try blockingWrite(afterwards: nil) { _ in try await body() }
    }

    /// Runs `repair` in a task of its own (never the cancelled one of the call it repairs) until it
    /// succeeds, waiting longer between tries up to 2 s, for as long as the process runs. Each try counts
    /// as a stalled statement while it runs, and waits for a place when ``statementLimit`` are taken.
    func repairUntilDone(_ what: String, _ repair: @escaping @Sendable () async throws -> Void) {
        let logger = logger
        Task.detached(executorPreference: Self.executor) { [stalled] in
            var failures = 0
            while true {
                guard stalled.withLockedValue({ $0.startRepair() }) else {
                    try? await Task.sleep(for: .milliseconds(200))
                    continue
                }
                do {
                    defer { stalled.withLockedValue { $0.ended() } }
                    try await repair()
                    return
                } catch {
                    failures += 1
                    logger.warning("courier outbox could not yet \(what); trying again",
                                   metadata: ["courier-error": "\(Self.describe(error))", "courier-attempt": "\(failures)"])
                    try? await Task.sleep(for: .milliseconds(min(2_000, 100 << min(failures, 5))))
                }
            }
        }
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

    /// A PostgreSQL error as a user reads it: the server's message, not the query (which `PSQLError` hides).
    static func describe(_ error: any Error) -> String {
        if let error = error as? PostgresTransactionError,
            let inner = error.closureError ?? error.beginError ?? error.commitError ?? error.rollbackError {
            return describe(inner)
        }
        if let error = error as? NetworkError { return error.message }
        if let error = error as? PSQLError {
            if let message = error.serverInfo?[.message] { return "PostgreSQL: \(message)" }
            return "PostgreSQL: \(error.code)"
        }
        return "\(error)"
    }

    // MARK: Writing

    func insertFrozen(_ record: OutboxRecord, bytes: Data?, source: RequestBodySource?, limit: Int) throws(NetworkError) -> OutboxRecord {
        var record = record
        record.headers = CredentialFields.removed(from: record.headers)
        let hold = Self.freezeHolder(owner)
        let seconds = Self.interval(min(timeout, .seconds(86_400))) + Self.freezeHoldMargin
        let write: @Sendable (OutboxRecord) async throws -> Void
        if let source, source.isFileOrForm {
            // A file or a form: measured first (a missing file, or one over the limit, is a typed error
            // with nothing written), then written in chunks with its row, in one transaction.
            let prepared = try measure(source, limit: limit)
            let length = prepared.length ?? 0
            record.body = nil
            record.chunkedBodyLength = length
            write = { [schema, client] row in
                try await schema.insert(row, chunks: prepared.makeStream(), length: length, heldBy: hold, for: seconds, client: client)
            }
        } else {
            if let source, !source.isReplayable {
                throw NetworkError(.bodyNotReplayable, "a one-shot stream body cannot be frozen; send it as .data or .file to freeze it")
            }
            let data = bytes ?? source?.bytes
            if let data, data.count > limit {
                throw NetworkError(.frozenBodyTooLarge, "the body (\(data.count) bytes) is larger than the \(limit) bytes a frozen request may keep")
            }
            record.body = data
            write = { [schema, client] row in try await schema.insert(row, heldBy: hold, for: seconds, client: client) }
        }
        let row = record
        do {
            // The row is written held for this freeze (a lease of its own, `<owner>#freeze`): no instance
            // claims it until it is given back, which must succeed before the caller is told it is frozen.
            // A freeze that fails at either step, or whose write may have happened after all, is deleted by
            // a task of its own until the server takes it (its body's chunks with it); should this process
            // die first, a hold that lapses is deleted by the next claim, never sent.
            let removeAgain: @Sendable () -> Void = { [self] in
                repairUntilDone("remove a request whose freeze was reported failed") { [self] in
                    _ = try await schema.delete(id: row.id, onlyPending: true, client: client, logger: logger)
                }
            }
            try blockingWrite(finishesWhenAbandoned: true, afterwards: { outcome, reported in
                if case .success = outcome, reported { return }
                removeAgain()
            }) { isAbandoned in
                guard !isAbandoned() else { throw CancellationError() }
                try await write(row)
            }
            do {
                try blocking { [self] in try await schema.release(id: row.id, owner: hold, client: client) }
            } catch {
                removeAgain()
                throw error
            }
        } catch {
            throw NetworkError(
                .outboxUnavailable, "the request could not be written to the PostgreSQL outbox \(schema.name): \(Self.describe(error))",
                underlying: error)
        }
        return record
    }

    /// A file or form body, measured (off the cooperative pool) and held to the frozen-body limit.
    private func measure(_ source: RequestBodySource, limit: Int) throws(NetworkError) -> RequestBodySource {
        let measured: Result<RequestBodySource, NetworkError>
        do {
            measured = try blocking {
                var source = source
                do throws(NetworkError) {
                    try await source.prepare()
                    return .success(source)
                } catch {
                    return .failure(error)
                }
            }
        } catch {
            throw NetworkError(.outboxUnavailable, "the body to freeze could not be measured: \(Self.describe(error))", underlying: error)
        }
        let source = try measured.get()
        if let length = source.length, length > Int64(limit) {
            throw NetworkError(
                .frozenBodyTooLarge,
                "the body is \(length) bytes, more than maximumFrozenBodySize (\(limit) bytes), so it cannot be frozen")
        }
        return source
    }

    func requestBody(of record: OutboxRecord) -> RequestBody? {
        if let length = record.chunkedBodyLength {
            return RequestBody.replayable(
                PostgresBodyChunks(schema: schema, client: client, id: record.id), length: length, contentType: record.headers[.contentType])
        }
        return record.body.map { RequestBody.data($0, contentType: record.headers[.contentType] ?? "application/octet-stream") }
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

/// A statement the store did not start: every place was taken (``StalledStatementsStateMachine``).
struct StatementsRefused: Error, CustomStringConvertible {
    let description: String
}

/// Where a call of ``PostgresOutboxStore/blockingWrite(afterwards:_:)`` stands.
enum BlockingCall<Value: Sendable>: Sendable {
    case waiting
    case finished(Result<Value, any Error>)
    /// The caller stopped waiting: the outcome, when it comes, goes to the call's `afterwards` (unreported).
    case abandoned
}

/// Runs the store's queries off the cooperative pool (see ``PostgresOutboxStore/blockingWrite(afterwards:_:)``): each job on a
/// concurrent dispatch queue.
final class OutboxQueryExecutor: TaskExecutor {
    private let queue = DispatchQueue(label: "courier.outbox.postgres.queries", attributes: .concurrent)

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}

extension PostgresOutboxStore {
    static let executor = OutboxQueryExecutor()
}
