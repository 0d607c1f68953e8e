/// The statements of a PostgreSQL outbox that the server has not answered and that no caller waits for any
/// more: writes given up on after the store's timeout (left to finish, so that their late effect is known),
/// reads given up on (cancelled, but a statement already on the server runs on), and the repairs of
/// writes reported failed. Each holds one of the app's pooled connections until the server answers: a
/// server that does not answer (a table the app keeps locked, a stalled host) would otherwise collect one
/// per freeze, drop or renewal, until the app's own queries found no connection left.
///
/// Past ``limit`` such statements, new ones are refused at once (a freeze fails with a typed error without
/// touching the server) and repairs wait for a place. Pure: events in, decisions out.
struct StalledStatementsStateMachine: Sendable {
    /// How many statements may be stalled at once.
    let limit: Int
    /// How many are stalled now.
    private(set) var stalled = 0

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Whether a statement someone waits for may start now.
    var mayStart: Bool { stalled < limit }

    /// Its caller gave up waiting for a statement that still runs.
    mutating func gaveUp() {
        stalled += 1
    }

    /// A statement given up on, or a repair's, ended (answered, failed, or its connection lost).
    mutating func ended() {
        stalled = max(0, stalled - 1)
    }

    /// A repair asks to run one statement: counted as stalled while it runs (no caller waits for it).
    /// `false` while ``limit`` statements are stalled: the repair waits and asks again.
    mutating func startRepair() -> Bool {
        guard stalled < limit else { return false }
        stalled += 1
        return true
    }
}
