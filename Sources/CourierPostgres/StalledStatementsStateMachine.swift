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
/// that failed) is not a sign of a stalled server, and makes callers wait, never refuses them. Pure: events
/// and the time in, decisions out.
struct StalledStatementsStateMachine: Sendable {
    /// How many statements may be on the server at once.
    let limit: Int
    /// How long (seconds) a repair runs before it counts as stalled: the store's timeout.
    let patience: Double
    /// Statements a caller waits for.
    private(set) var awaited = 0
    /// Statements no caller waits for any more.
    private(set) var stalled = 0
    /// The repairs running, by ticket: when each started (seconds on the caller's clock).
    private var repairs: [Int: Double] = [:]
    private var lastTicket = 0

    /// What a statement that asks to start does.
    enum Start: Equatable, Sendable {
        /// It has a place: start it (and tell ``answered()`` or ``gaveUp()``).
        case start
        /// Every place is taken by statements being answered: ask again shortly.
        case wait
        /// Every place is taken and the server is not answering some of them: fail at once.
        case refuse
    }

    init(limit: Int, patience: Double) {
        self.limit = max(1, limit)
        self.patience = patience
    }

    /// The repairs running now.
    var repairing: Int { repairs.count }

    private var taken: Int { awaited + stalled + repairs.count }

    /// A statement someone waits for asks to start at `now`.
    mutating func start(now: Double) -> Start {
        if taken < limit {
            awaited += 1
            return .start
        }
        let isStalled = stalled > 0 || repairs.values.contains { now - $0 >= patience }
        return isStalled ? .refuse : .wait
    }

    /// An awaited statement was answered (or failed) before its caller gave up.
    mutating func answered() {
        awaited = max(0, awaited - 1)
    }

    /// Its caller gave up waiting for a statement that still runs: it is stalled until it ends.
    mutating func gaveUp() {
        awaited = max(0, awaited - 1)
        stalled += 1
    }

    /// A stalled statement ended (answered, failed, or its connection lost).
    mutating func ended() {
        stalled = max(0, stalled - 1)
    }

    /// A repair asks to run one statement at `now` (no caller waits for it). Its ticket, to hand to
    /// ``repairEnded(_:)``; `nil` while every place is taken: the repair waits and asks again.
    mutating func startRepair(now: Double) -> Int? {
        guard taken < limit else { return nil }
        lastTicket += 1
        repairs[lastTicket] = now
        return lastTicket
    }

    /// A repair's statement ended.
    mutating func repairEnded(_ ticket: Int) {
        repairs[ticket] = nil
    }
}
