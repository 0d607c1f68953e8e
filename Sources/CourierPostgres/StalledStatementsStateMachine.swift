/// The statements a PostgreSQL outbox has on the server: those a caller waits for, and those no caller waits
/// for any more (writes given up on after the store's timeout and left to finish, so that their late effect
/// is known; reads given up on, cancelled, whose statement may still run on the server; repairs of writes
/// reported failed). Each holds one of the app's pooled connections until the server answers: a server that
/// does not answer (a table the app keeps locked, a stalled host) would otherwise collect one per freeze,
/// read, drop or renewal, until the app's own queries found no connection left.
///
/// At most ``limit`` statements are on the server at once, whoever waits for them. A statement that finds
/// every place taken waits for one (statements that are answered free theirs in milliseconds), unless the
/// server is not answering: one of them is stalled, or a repair has run for longer than ``patience``. Then it
/// is refused at once, without taking a connection. A repair that is running normally (removing a freeze
/// that failed) is not a sign of a stalled server, and makes callers wait, never refuses them.
///
/// A statement given up on (or a repair) that has not ended after ``lostAfter`` is counted as lost and its
/// place freed: postgres-nio never ends a statement whose connection the server closed in the middle of a
/// transaction (a restart, a failover, `pg_terminate_backend`), and such statements would otherwise keep
/// their places for as long as the process runs, until the outbox refused everything. So a table locked for
/// longer than that costs at most ``limit`` more connections per ``lostAfter``. Pure: events and the time
/// in, decisions out.
struct StalledStatementsStateMachine: Sendable {
    /// How many statements may be on the server at once.
    let limit: Int
    /// How long (seconds) a repair runs before it counts as stalled: the store's timeout.
    let patience: Double
    /// How long (seconds) a statement given up on, or a repair, holds its place before it counts as lost.
    let lostAfter: Double
    /// Statements a caller waits for.
    private(set) var awaited = 0
    /// Statements no caller waits for any more, by ticket: when each was given up on.
    private var abandoned: [Int: Double] = [:]
    /// The repairs running, by ticket: when each started.
    private var repairs: [Int: Double] = [:]
    private var lastTicket = 0

    /// What a statement that asks to start does.
    enum Start: Equatable, Sendable {
        /// It has a place: start it (and tell ``answered()`` or ``gaveUp(now:)``).
        case start
        /// Every place is taken by statements being answered: ask again shortly.
        case wait
        /// Every place is taken and the server is not answering some of them: fail at once.
        case refuse
    }

    init(limit: Int, patience: Double, lostAfter: Double) {
        self.limit = max(1, limit)
        self.patience = patience
        self.lostAfter = max(patience, lostAfter)
    }

    /// Statements given up on that still hold a place.
    var stalled: Int { abandoned.count }

    /// The repairs running now.
    var repairing: Int { repairs.count }

    private var taken: Int { awaited + abandoned.count + repairs.count }

    /// Frees the places of statements and repairs that have not ended within ``lostAfter``.
    private mutating func forgetLost(now: Double) {
        abandoned = abandoned.filter { now - $0.value < lostAfter }
        repairs = repairs.filter { now - $0.value < lostAfter }
    }

    private mutating func ticket() -> Int {
        lastTicket += 1
        return lastTicket
    }

    /// A statement someone waits for asks to start at `now`.
    mutating func start(now: Double) -> Start {
        forgetLost(now: now)
        if taken < limit {
            awaited += 1
            return .start
        }
        let isStalled = !abandoned.isEmpty || repairs.values.contains { now - $0 >= patience }
        return isStalled ? .refuse : .wait
    }

    /// An awaited statement was answered (or failed) before its caller gave up.
    mutating func answered() {
        awaited = max(0, awaited - 1)
    }

    /// Its caller gave up waiting, at `now`, for a statement that still runs: it holds its place until it
    /// ends (tell ``ended(_:)`` its ticket) or is counted as lost.
    mutating func gaveUp(now: Double) -> Int {
        awaited = max(0, awaited - 1)
        let ticket = ticket()
        abandoned[ticket] = now
        return ticket
    }

    /// A statement given up on ended (answered, failed, or its connection lost); nothing when it was
    /// already counted as lost.
    mutating func ended(_ ticket: Int) {
        abandoned[ticket] = nil
    }

    /// A repair asks to run one statement at `now` (no caller waits for it). Its ticket, to hand to
    /// ``repairEnded(_:)``; `nil` while every place is taken: the repair waits and asks again.
    mutating func startRepair(now: Double) -> Int? {
        forgetLost(now: now)
        guard taken < limit else { return nil }
        let ticket = ticket()
        repairs[ticket] = now
        return ticket
    }

    /// A repair's statement ended.
    mutating func repairEnded(_ ticket: Int) {
        repairs[ticket] = nil
    }
}
