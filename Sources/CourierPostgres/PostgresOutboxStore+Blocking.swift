import Courier
import Foundation
import NIOConcurrencyHelpers
import PostgresNIO

extension PostgresOutboxStore {
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
    ///
    /// - Parameters:
    ///   - isStatement: Whether `body` runs statements on the server, and so takes one of the
    ///     ``statementLimit`` places (``StalledStatementsStateMachine``); `false` for file work (measuring a
    ///     body to freeze).
    ///   - progress: A counter `body` raises as the server takes its work (the chunks of a frozen body):
    ///     the wait is ``timeout`` since the last rise, so a large body is not failed while the server is
    ///     answering, only once it stops.
    ///   - ceiling: With `progress`, the longest the whole wait may last however steady the progress.
    func blockingWrite<Value: Sendable>(
        isStatement: Bool = true,
        progress: NIOLockedValueBox<Int>? = nil,
        ceiling: Duration? = nil,
        finishesWhenAbandoned: Bool = false,
        afterwards: (@Sendable (_ outcome: Result<Value, any Error>, _ reported: Bool) -> Void)? = nil,
        _ body: @escaping @Sendable (_ isAbandoned: @escaping @Sendable () -> Bool) async throws -> Value
    ) throws -> Value {
        let (seconds, attoseconds) = min(timeout, .seconds(86_400)).components
        let wait = DispatchTimeInterval.nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
        var deadline = DispatchTime.now() + wait
        if isStatement { try takePlace(before: deadline) }
        let statements = isStatement ? statements : nil
        let result = NIOLockedValueBox<BlockingCall<Value>>(.waiting)
        let done = DispatchSemaphore(value: 0)
        let isAbandoned: @Sendable () -> Bool = { result.withLockedValue { if case .abandoned = $0 { true } else { false } } }
        let task = Task(executorPreference: Self.executor) {
            let outcome: Result<Value, any Error>
            do {
                outcome = .success(try await body(isAbandoned))
            } catch {
                outcome = .failure(error)
            }
            let abandoned = result.withLockedValue { call -> Bool in
                if case .abandoned(let ticket) = call {
                    if let ticket { statements?.withLockedValue { $0.ended(ticket) } }
                    return true
                }
                call = .finished(outcome)
                statements?.withLockedValue { $0.answered() }
                return false
            }
            afterwards?(outcome, !abandoned)
            done.signal()
        }
        var seen = progress?.withLockedValue { $0 } ?? 0
        let last = ceiling.map { ceiling -> DispatchTime in
            let (seconds, attoseconds) = min(ceiling, .seconds(86_400 * 7)).components
            return DispatchTime.now() + .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
        } ?? .distantFuture
        while done.wait(timeout: deadline) == .timedOut {
            guard let now = progress?.withLockedValue({ $0 }), now != seen, DispatchTime.now() < last else { break }
            seen = now
            deadline = min(DispatchTime.now() + wait, last)
        }
        let outcome = result.withLockedValue { call -> Result<Value, any Error>? in
            guard case .finished(let outcome) = call else {
                // Counted until it ends (or is counted as lost), in the same step as its ending is told (the
                // task takes this lock too).
                call = .abandoned(ticket: statements?.withLockedValue { $0.gaveUp(now: Self.uptime()) })
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
            switch statements.withLockedValue({ $0.start(now: Self.uptime()) }) {
            case .start:
                return
            case .refuse:
                auditIfDue()
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

    /// Runs one statement from an asynchronous caller (a replay reading a frozen body's chunk): it takes one
    /// of the ``statementLimit`` places as ``blockingWrite(isStatement:progress:ceiling:finishesWhenAbandoned:afterwards:_:)``
    /// does, and is waited for at most ``timeout``. One not answered by then is left behind (postgres-nio's
    /// queries do not stop when cancelled), holding its place until it ends or counts as lost.
    /// - Throws: ``NetworkError/Code/outboxUnavailable`` when no place is free or the server does not answer
    ///   within the timeout; `CancellationError` when the calling task is cancelled; the statement's error.
    func boundedStatement<Value: Sendable>(_ what: String, _ body: @escaping @Sendable () async throws -> Value) async throws -> Value {
        let deadline = ContinuousClock.now + timeout
        placing: while true {
            switch statements.withLockedValue({ $0.start(now: Self.uptime()) }) {
            case .start:
                break placing
            case .refuse:
                auditIfDue()
                throw NetworkError(.outboxUnavailable, "could not \(what): the PostgreSQL server has not answered \(Self.statementLimit) statements of the outbox \(schema.name) on their way")
            case .wait:
                guard ContinuousClock.now < deadline else {
                    throw NetworkError(.outboxUnavailable, "could not \(what): no statement of the outbox \(schema.name) finished within \(Self.seconds(timeout))")
                }
                try await Task.sleep(for: .milliseconds(2))
            }
        }
        let call = NIOLockedValueBox(BoundedStatement.pending)
        let statements = statements
        let outcome = await BoundedWait<Result<Value, any Error>>.run(until: deadline) {
            let withdrawn = call.withLockedValue { call -> Bool in
                guard case .pending = call else { return true }
                call = .running
                return false
            }
            guard !withdrawn else { return .failure(CancellationError()) }
            let result: Result<Value, any Error>
            do { result = .success(try await body()) } catch { result = .failure(error) }
            call.withLockedValue { call in
                if case .givenUp(let ticket) = call { statements.withLockedValue { $0.ended(ticket) } } else { statements.withLockedValue { $0.answered() } }
                call = .ended
            }
            return result
        }
        if case .value(let result) = outcome { return try result.get() }
        call.withLockedValue { call in
            switch call {
            case .pending:
                // Never started (the wait was cancelled first): its place is free at once.
                call = .withdrawn
                statements.withLockedValue { $0.answered() }
            case .running:
                call = .givenUp(ticket: statements.withLockedValue { $0.gaveUp(now: Self.uptime()) })
            case .ended, .givenUp, .withdrawn:
                break
            }
        }
        if case .cancelled = outcome { throw CancellationError() }
        throw NetworkError(.outboxUnavailable, "could not \(what): the PostgreSQL server did not answer within \(Self.seconds(timeout))")
    }

    /// Asks the server how many statements on the outbox's tables it runs, when statements given up on long
    /// ago hold places (``StalledStatementsStateMachine/auditDue(now:)``): those it no longer runs are lost
    /// (their connection closed under postgres-nio, which never ends them) and their places are freed. The
    /// question takes no place and is waited for at most the timeout; one not answered keeps the next from
    /// being asked until it ends or is itself older than the time after which statements count as lost
    /// (``StalledStatementsStateMachine/auditDue(now:)``).
    func auditIfDue() {
        guard statements.withLockedValue({ $0.auditDue(now: Self.uptime()) }) else { return }
        let timeout = timeout
        Task(executorPreference: Self.executor) { [schema, client, statements] in
            let outcome = await BoundedWait<Int?>.run(until: .now + timeout) {
                defer { statements.withLockedValue { $0.auditQueryEnded() } }
                return try? await schema.statementsOnServer(client: client)
            }
            let seen: Int? = if case .value(let count) = outcome { count } else { nil }
            statements.withLockedValue { $0.audited(seenOnServer: seen, now: Self.uptime()) }
        }
    }

    /// Seconds on a monotonic clock, for ``StalledStatementsStateMachine``.
    static func uptime() -> Double {
        Double(DispatchTime.now().uptimeNanoseconds) / 1e9
    }

    /// ``blockingWrite(isStatement:progress:ceiling:finishesWhenAbandoned:afterwards:_:)`` for bodies whose late
    /// outcome needs no repair (reads, and writes that are safe to make late).
    func blocking<Value: Sendable>(_ body: @escaping @Sendable () async throws -> Value) throws -> Value {
        try blockingWrite(afterwards: nil) { _ in try await body() }
    }

    /// Runs `repair` in a task of its own (never the cancelled one of the call it repairs) until it
    /// succeeds, waiting longer between tries up to 2 s, for as long as the process runs. Each try takes
    /// one of the ``statementLimit`` places while it runs (waiting for one when all are taken), and counts
    /// as stalled once it has run for longer than the timeout.
    func repairUntilDone(_ what: String, _ repair: @escaping @Sendable () async throws -> Void) {
        let logger = logger
        Task.detached(executorPreference: Self.executor) { [self, statements] in
            var failures = 0
            while true {
                guard let ticket = statements.withLockedValue({ $0.startRepair(now: Self.uptime()) }) else {
                    self.auditIfDue()
                    try? await Task.sleep(for: .milliseconds(200))
                    continue
                }
                do {
                    defer { statements.withLockedValue { $0.repairEnded(ticket) } }
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
}

/// A statement the store did not start: every place was taken (``StalledStatementsStateMachine``).
struct StatementsRefused: Error, CustomStringConvertible {
    let description: String
}

/// Where a ``PostgresOutboxStore/boundedStatement(_:_:)`` stands, for the bookkeeping of its place.
enum BoundedStatement: Sendable {
    /// Not started yet.
    case pending
    /// On the server, its caller waiting.
    case running
    /// Ended (its place given back).
    case ended
    /// Its caller gave up; its place is held under this ticket until it ends.
    case givenUp(ticket: Int)
    /// Its caller gave up before it started: it never starts.
    case withdrawn
}

/// Where a call of ``PostgresOutboxStore/blockingWrite(isStatement:progress:ceiling:finishesWhenAbandoned:afterwards:_:)`` stands.
enum BlockingCall<Value: Sendable>: Sendable {
    case waiting
    case finished(Result<Value, any Error>)
    /// The caller stopped waiting: the outcome, when it comes, goes to the call's `afterwards` (unreported).
    /// The ticket of the statement's place (``StalledStatementsStateMachine/gaveUp(now:)``), if it has one.
    case abandoned(ticket: Int?)
}

/// Runs the store's queries off the cooperative pool (see
/// ``PostgresOutboxStore/blockingWrite(isStatement:progress:ceiling:finishesWhenAbandoned:afterwards:_:)``): each job on
/// a concurrent dispatch queue.
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
