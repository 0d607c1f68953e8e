/// The statements a PostgreSQL outbox has on the server: those a caller waits for, and those no caller waits
/// for any more (writes given up on after the store's timeout and left to finish, so that their late effect
/// is known; reads given up on, cancelled, whose statement may still run on the server; repairs of writes
/// reported failed). Each holds one of the app's pooled connections until the server answers: a server that
/// does not answer (a table the app keeps locked, a stalled host) would otherwise collect one per freeze,
/// read, drop or renewal, until the app's own queries found no connection left.
///
/// At most ``limit`` statements are on the server at once, whoever waits for them. A statement that finds
/// every place taken waits for one (statements that are answered free theirs in milliseconds), unless one
/// of them is stalled: then the server is not answering, and it is refused at once, without taking a
/// connection. Pure: events in, decisions out.
struct StalledStatementsStateMachine: Sendable {
    /// How many statements may be on the server at once.
    let limit: Int
    /// Statements a caller waits for.
    private(set) var awaited = 0
    /// Statements no caller waits for any more, and repairs.
    private(set) var stalled = 0

    /// What a statement that asks to start does.
    enum Start: Equatable, Sendable {
        /// It has a place: start it (and tell ``answered()`` or ``gaveUp()``).
        case start
        /// Every place is taken by statements being answered: ask again shortly.
        case wait
        /// Every place is taken and some statement is stalled: fail at once.
        case refuse
    }

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// A statement someone waits for asks to start.
    mutating func start() -> Start {
        if awaited + stalled < limit {
            awaited += 1
            return .start
        }
        return stalled > 0 ? .refuse : .wait
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

    /// A stalled statement, or a repair's, ended (answered, failed, or its connection lost).
    mutating func ended() {
        stalled = max(0, stalled - 1)
    }

    /// A repair asks to run one statement (no caller waits for it: it counts as stalled while it runs).
    /// `false` while every place is taken: the repair waits and asks again.
    mutating func startRepair() -> Bool {
        guard awaited + stalled < limit else { return false }
        stalled += 1
        return true
    }
}
