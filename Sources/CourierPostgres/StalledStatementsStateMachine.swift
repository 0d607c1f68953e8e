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
/// A statement given up on (or a repair) that has not ended after ``lostAfter`` may be lost rather than
/// waiting: postgres-nio never ends a statement whose connection the server closed in the middle of a
/// transaction (a restart, a failover, `pg_terminate_backend`), and such statements would otherwise keep
/// their places for as long as the process runs, until the outbox refused everything. So while such old
/// statements hold places and a statement is refused, the store asks the server how many statements on the
/// outbox's tables it is running or holding (``auditDue(now:)``, ``audited(seenOnServer:now:)``): when it
/// shows fewer than the store counts, that many of the old ones are lost, and their places freed. A table
/// locked for minutes shows every one of them waiting, so it still costs at most ``limit`` connections.
/// Pure: events and the time in, decisions out.
struct StalledStatementsStateMachine: Sendable {
    /// How many statements may be on the server at once.
    let limit: Int
    /// How long (seconds) a repair runs before it counts as stalled: the store's timeout.
    let patience: Double
    /// How long (seconds) a statement given up on, or a repair, holds its place before it may be lost.
    let lostAfter: Double
    /// How long (seconds) between two audits.
    static let auditInterval: Double = 5
    private var isAuditing = false
    private var lastAudit = -Double.infinity
    /// When each audit's question still on the server was asked (one given up on holds a connection until
    /// the server answers, like any statement): a new audit is asked only once the last is answered, or is
    /// older than ``lostAfter`` (lost itself), so a silent server takes at most one connection per
    /// ``lostAfter`` for audits.
    private var auditQueries: [Double] = []
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

    /// How many of the statements and repairs holding places are older than ``lostAfter``.
    func lostCandidates(now: Double) -> Int {
        abandoned.values.filter { now - $0 >= lostAfter }.count + repairs.values.filter { now - $0 >= lostAfter }.count
    }

    /// Whether to ask the server now how many statements it runs (old statements hold places, no audit is
    /// on its way, the last was at least ``auditInterval`` ago, and no earlier question is still on the
    /// server unless it is older than ``lostAfter``); `true` marks one on its way (tell
    /// ``audited(seenOnServer:now:)`` its answer, and ``auditQueryEnded()`` when its statement ends).
    mutating func auditDue(now: Double) -> Bool {
        guard !isAuditing, now - lastAudit >= Self.auditInterval, lostCandidates(now: now) > 0,
              auditQueries.allSatisfy({ now - $0 >= lostAfter }) else { return false }
        isAuditing = true
        auditQueries.append(now)
        return true
    }

    /// An audit's statement ended on the client side (answered, failed, or its connection lost), whether or
    /// not its answer came in time.
    mutating func auditQueryEnded() {
        if !auditQueries.isEmpty { auditQueries.removeFirst() }
    }

    /// The audit's answer: `seenOnServer` statements on the outbox's tables (`nil`: the server did not
    /// answer). When the server runs fewer than the statements given up on and repairs held here, that
    /// many of the old ones (oldest first) are lost and their places freed. Every statement the server shows
    /// may be one of those (statements being awaited may not be on the server at that instant, and other
    /// instances' count too): only what it cannot account for is lost.
    mutating func audited(seenOnServer: Int?, now: Double) {
        isAuditing = false
        lastAudit = now
        let held = abandoned.count + repairs.count
        guard let seen = seenOnServer, seen < held else { return }
        var lost = min(held - seen, lostCandidates(now: now))
        let old = (abandoned.map { (ticket: $0.key, since: $0.value, repair: false) } + repairs.map { (ticket: $0.key, since: $0.value, repair: true) })
            .filter { now - $0.since >= lostAfter }
            .sorted { $0.since < $1.since }
        for entry in old where lost > 0 {
            if entry.repair { repairs[entry.ticket] = nil } else { abandoned[entry.ticket] = nil }
            lost -= 1
        }
    }

    private mutating func ticket() -> Int {
        lastTicket += 1
        return lastTicket
    }

    /// A statement someone waits for asks to start at `now`.
    mutating func start(now: Double) -> Start {
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

    /// A statement given up on ended (answered, failed, or its connection lost); nothing when an audit
    /// already counted it as lost.
    mutating func ended(_ ticket: Int) {
        abandoned[ticket] = nil
    }

    /// A repair asks to run one statement at `now` (no caller waits for it). Its ticket, to hand to
    /// ``repairEnded(_:)``; `nil` while every place is taken: the repair waits and asks again.
    mutating func startRepair(now: Double) -> Int? {
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
