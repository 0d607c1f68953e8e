/// How one engine replays its outbox, as a pure value: which frozen request goes next, when to try
/// again, and what a server's answer means for the stored row. No I/O, no clock (times are passed
/// in, as seconds since 1970), no randomness (jitter is passed in).
///
/// Rules:
/// - the rows of an origin form **lanes**, one per ordering key (``NetworkOperation/orderingKey``; the
///   rows without one share the host's lane). Within a lane, one request at a time, strictly in the
///   order they were frozen: the oldest pending row (the lane's head) goes first, and a head waiting
///   for its retry time holds the rest of its lane back. Lanes do not wait for each other: a stuck
///   head blocks only its own lane;
/// - nothing is sent while the host is unreachable; reachability, a timer or a flush wakes the replay;
/// - a row goes only after a definitive answer: 2xx (delivered) or a 4xx other than 408 and 429
///   (failed permanently). 5xx, 408, 429, any other answer and connection failures keep it, with
///   exponential backoff and jitter, never sooner than the server's `Retry-After`;
/// - a row past its time to live, or out of attempts, or whose copied body (a frozen file or form) is
///   missing or damaged, moves to the dead-letter state (and its lane goes on). Only attempts that reached the server count: one that could not connect, or never
///   went out, does not.
package struct ReplayStateMachine {
    /// Backoff settings.
    struct Backoff: Equatable {
        /// The first retry's delay before jitter, in seconds.
        var base: Double = 1
        /// The longest delay, in seconds.
        var cap: Double = 300
    }

    /// Facts about the head row of a lane, read in the same transaction that may claim it.
    package struct Head: Equatable, Sendable {
        package var id: String
        /// The row's lane: its ordering key, `""` for the host's lane.
        package var lane: String = ""
        package var attempts: Int
        package var maximumAttempts: Int?
        package var expiresAt: Double?
        package var nextAttemptAt: Double
        /// When another live replayer's lease on it runs out, if one holds it.
        package var leasedUntil: Double?
        /// Whether the outbox's copy of its body (a frozen file or form) is whole; always for a body kept
        /// in the row.
        package var isBodyIntact = true

        package init(
            id: String, lane: String = "", attempts: Int, maximumAttempts: Int?, expiresAt: Double?, nextAttemptAt: Double,
            leasedUntil: Double? = nil, isBodyIntact: Bool = true
        ) {
            self.id = id
            self.lane = lane
            self.attempts = attempts
            self.maximumAttempts = maximumAttempts
            self.expiresAt = expiresAt
            self.nextAttemptAt = nextAttemptAt
            self.leasedUntil = leasedUntil
            self.isBodyIntact = isBodyIntact
        }
    }

    /// What to do with a head row.
    package enum HeadDecision: Equatable, Sendable {
        /// Claim it and send it (attempt number `attempts + 1`).
        case send
        /// Move it to the dead-letter state.
        case deadLetter(OutboxEntry.DeadLetterReason)
        /// Nothing to do before this time.
        case wait(until: Double)
    }

    /// Which heads a claim looks at, and whether their retry times count.
    package struct Claim: Equatable, Sendable {
        /// Lanes with a request of this replayer on its way: not looked at.
        var excluding: Set<String> = []
        /// Whether every lane's retry time is ignored (a flush).
        var ignoringSchedule = false
        /// Lanes whose retry time is ignored: their wait was a backoff after no connection, and the host
        /// has answered since.
        var ignoringScheduleOf: Set<String> = []

        /// Whether a lane's retry time is ignored by this claim.
        package func ignoresSchedule(of lane: String) -> Bool { ignoringSchedule || ignoringScheduleOf.contains(lane) }
    }

    /// What a finished attempt means.
    enum Outcome: Equatable {
        /// The server answered with this status (after redirects); `retryAfter` is its `Retry-After`
        /// in seconds from now, if it gave one.
        case answered(status: Int, retryAfter: Double?)
        /// No answer: the connection failed or timed out after it was made.
        case noAnswer
        /// No connection could be made (refused, no route): the host was not there.
        case couldNotConnect
        /// The request never went out (the host went away while it waited in the queue): not an attempt.
        case notSent
        /// The outbox could not read the frozen body back (its server stalled or went away): the outbox's
        /// failure, not the origin's, which got at most part of the body (a request it cannot act on). Not
        /// an attempt, so only the time to live ends a body that stays unreadable; the backoff grows with
        /// each one in a row, as for a host that cannot be reached, but an answer from the host does not
        /// end it (the host is not what failed).
        case bodyUnavailable
        /// The outbox's copy of the frozen body turned out damaged as it was read (``FrozenBodyDamaged``):
        /// the request it would send is not the one frozen, so the row is dead-lettered as
        /// ``OutboxEntry/DeadLetterReason/bodyUnavailable``. Not an attempt: the origin got at most the head.
        case bodyDamaged
    }

    /// What becomes of a row after an attempt.
    package enum Completion: Equatable, Sendable {
        /// Delivered: remove the row.
        case delivered
        /// Refused for good (a 4xx other than 401/403/408/429): remove the row.
        case failedPermanently
        /// Refused for want of credentials (401, 403): keep the row as a dead letter, for the app to retry
        /// once it has signed in again, or to drop.
        case deadLettered(OutboxEntry.DeadLetterReason)
        /// Keep the row; try again no sooner than this time.
        case retry(at: Double)
    }

    enum Action: Equatable {
        /// Choose a head among the lanes (see ``choose(_:now:claim:)``) and claim it if the decision is `.send`.
        case claimHead(Claim)
        /// Send the claimed row; then report ``sendStarted()``.
        case send(id: String)
        /// Come back (fire ``timerFired()``) at this time.
        case wake(at: Double)
        /// Nothing to do until reachability, a flush, or an attempt's end.
        case idle
    }

    let backoff: Backoff
    /// How many lanes may have a request on its way at once: no claim beyond (the next comes when one ends).
    let parallelLanes: Int
    private(set) var isReachable: Bool
    /// The rows being sent, by lane.
    private(set) var sending: [String: String] = [:]
    /// The claim being made, if any (its answer comes to ``headClaimed(_:decision:)``).
    private var claimInFlight: Claim?
    private(set) var isFlushing = false
    /// Claims that failed in a row (the database was busy or broken).
    private var claimFailures = 0
    /// Lanes whose head waits because its last attempt could not connect (not because the server said
    /// when, nor after a timeout: a slow server is not helped by trying it sooner).
    private(set) var lanesAfterNoConnection: Set<String> = []
    /// Failures in a row before the server (no connection, a body the outbox could not read), by lane, of
    /// the row that had them: they are not attempts, but the backoff grows with them. Another row of the
    /// lane (its head was delivered, dropped or given up meanwhile) starts from none.
    private var failuresBeforeServer: [String: (id: String, count: Int)] = [:]
    /// The host answered another request while a claim was out.
    private var hostAnsweredDuringClaim = false
    /// A lane was freed (or a row frozen) while a claim was out: claim again after it.
    private var needsClaim = false

    init(isReachable: Bool, backoff: Backoff = Backoff(), parallelLanes: Int = .max) {
        self.isReachable = isReachable
        self.backoff = backoff
        self.parallelLanes = max(1, parallelLanes)
    }

    /// Whether a claim is being made.
    var isClaiming: Bool { claimInFlight != nil }
    /// Whether a request of this replayer is on its way.
    var isSending: Bool { !sending.isEmpty }
    /// Whether some lane waits out a backoff after its last attempt could not connect.
    var waitsAfterNoConnection: Bool { !lanesAfterNoConnection.isEmpty }

    /// How often a row leased by another live replayer is looked at again (so a holder that dies is
    /// noticed within this many seconds, not when its lease runs out).
    static let leaseRecheck: Double = 1

    /// The decision for a head row: a lease held by another first, then the dead-letter rules (a body
    /// whose copy is missing or damaged is never sent, and waits for nothing), then its schedule.
    package static func decide(_ head: Head, now: Double, ignoringSchedule: Bool = false) -> HeadDecision {
        if let leasedUntil = head.leasedUntil, leasedUntil > now { return .wait(until: min(leasedUntil, now + leaseRecheck)) }
        if !head.isBodyIntact { return .deadLetter(.bodyUnavailable) }
        if let expiresAt = head.expiresAt, now >= expiresAt { return .deadLetter(.expired) }
        if let maximum = head.maximumAttempts, head.attempts >= maximum { return .deadLetter(.tooManyAttempts) }
        if !ignoringSchedule && head.nextAttemptAt > now { return .wait(until: head.nextAttemptAt) }
        return .send
    }

    /// Which of the lanes' heads (oldest first) a claim acts on: the first to dead-letter, else the first
    /// to send, else the one due soonest; `nil` when no lane the claim looks at has a head.
    package static func choose(_ heads: [Head], now: Double, claim: Claim) -> (head: Head, decision: HeadDecision)? {
        let decided = heads.filter { !claim.excluding.contains($0.lane) }.map { head in
            (head: head, decision: decide(head, now: now, ignoringSchedule: claim.ignoresSchedule(of: head.lane)))
        }
        if let dead = decided.first(where: { if case .deadLetter = $0.decision { true } else { false } }) { return dead }
        if let send = decided.first(where: { $0.decision == .send }) { return send }
        return decided.min { lhs, rhs in
            guard case .wait(let left) = lhs.decision, case .wait(let right) = rhs.decision else { return false }
            return left < right
        }
    }

    /// Whether an attempt with this outcome counts against ``NetworkOperation/maximumAttempts``: only
    /// one that reached the server (answered, or sent and unanswered).
    static func countsAsAttempt(_ outcome: Outcome) -> Bool {
        outcome != .notSent && outcome != .couldNotConnect && outcome != .bodyUnavailable && outcome != .bodyDamaged
    }

    /// The delay before attempt `attempts + 1` after `attempts` failed ones: `base * 2^(attempts-1)`,
    /// capped, scaled by `0.5 + jitter / 2` (jitter in 0..<1), never less than `retryAfter`.
    func delay(afterAttempts attempts: Int, jitter: Double, retryAfter: Double? = nil) -> Double {
        let exponent = Double(max(0, min(attempts - 1, 30)))
        let raw = min(backoff.cap, backoff.base * Double(1 << Int(exponent)))
        let jittered = raw * (0.5 + min(max(jitter, 0), 1) / 2)
        return max(jittered, retryAfter ?? 0)
    }

    /// What an answer means for a row.
    static func classify(_ outcome: Outcome) -> Completion? {
        if outcome == .bodyDamaged { return .deadLettered(.bodyUnavailable) }
        guard case .answered(let status, _) = outcome else { return nil }
        if (200..<300).contains(status) { return .delivered }
        if status == 401 || status == 403 { return .deadLettered(.unauthorized) }
        if (400..<500).contains(status) && status != 408 && status != 429 { return .failedPermanently }
        return nil
    }

    // MARK: Events

    /// The host became reachable or unreachable.
    mutating func reachabilityChanged(_ reachable: Bool) -> Action {
        isReachable = reachable
        return nextClaim()
    }

    /// A timer set by ``Action/wake(at:)`` fired, or a row was frozen.
    mutating func timerFired() -> Action { nextClaim() }

    /// Send what can be sent now, ignoring retry times (but not reachability): `courier outbox flush`.
    mutating func flush() -> Action {
        guard isReachable else { return .idle }
        isFlushing = true
        // A claim under way answers first (see headClaimed); lanes on their way go on after their attempt.
        guard !isClaiming else { return .idle }
        return claim(Claim(excluding: Set(sending.keys), ignoringSchedule: true))
    }

    /// The answer to ``Action/claimHead(_:)``: the head chosen and the decision taken on it, or `nil`
    /// when no lane looked at has anything pending. A dead-lettered head is already recorded by the caller.
    mutating func headClaimed(_ head: Head?, decision: HeadDecision?) -> Action {
        let claimed = claimInFlight ?? Claim()
        claimInFlight = nil
        claimFailures = 0
        guard let head, let decision else {
            if needsClaim { return nextClaim() }
            if sending.isEmpty { isFlushing = false }
            hostAnsweredDuringClaim = false
            return .idle
        }
        switch decision {
        case .send:
            precondition(sending[head.lane] == nil, "a second request of lane \(head.lane) claimed while one is on its way")
            sending[head.lane] = head.id
            lanesAfterNoConnection.remove(head.lane)
            return .send(id: head.id)
        case .deadLetter:
            // The lane's next row is its head now.
            return claim(Claim(excluding: Set(sending.keys), ignoringSchedule: claimed.ignoringSchedule,
                               ignoringScheduleOf: claimed.ignoringScheduleOf))
        case .wait(let until):
            defer { hostAnsweredDuringClaim = false }
            // The host answered while this claim read the retry times: backoffs after no connection end now.
            if hostAnsweredDuringClaim && waitsAfterNoConnection && !claimed.ignoringSchedule {
                let lanes = lanesAfterNoConnection
                lanesAfterNoConnection = []
                return claim(Claim(excluding: Set(sending.keys), ignoringScheduleOf: lanes))
            }
            // A flush asked for while an ordinary claim was out: that claim saw the retry times, the flush
            // must not. (A lease held by another replayer ends the flush: that one is sending.)
            if isFlushing && !claimed.ignoringSchedule && head.leasedUntil == nil {
                return claim(Claim(excluding: Set(sending.keys), ignoringSchedule: true))
            }
            // A lane was freed meanwhile: look again (that claim sets the timer).
            if needsClaim { return nextClaim() }
            isFlushing = false
            return .wake(at: until)
        }
    }

    /// The row of ``Action/send(id:)`` was handed to the engine: the other lanes are looked at.
    mutating func sendStarted() -> Action { nextClaim() }

    /// The outbox could not be read or written (busy, disk full): try again after a backoff, instead of
    /// taking the failure for "nothing pending" and waiting for the next reachability change.
    mutating func claimFailed(now: Double, jitter: Double) -> Action {
        claimInFlight = nil
        needsClaim = false
        isFlushing = false
        claimFailures += 1
        return .wake(at: now + delay(afterAttempts: claimFailures, jitter: jitter))
    }

    /// Another request to the same host just got an answer: the host is back, so heads waiting out a
    /// backoff after they could not connect are tried now (a wait the server asked for, Retry-After or
    /// an answered retry, and a backoff after a timeout are kept).
    mutating func hostAnswered() -> Action {
        guard isReachable, waitsAfterNoConnection else { return .idle }
        guard !isClaiming else {
            // The claim under way reads the retry times; its answer decides (see headClaimed).
            hostAnsweredDuringClaim = true
            return .idle
        }
        let lanes = lanesAfterNoConnection
        lanesAfterNoConnection = []
        return claim(Claim(excluding: Set(sending.keys), ignoringSchedule: isFlushing, ignoringScheduleOf: lanes))
    }

    /// The claimed row's attempt ended. Returns what becomes of the row (the caller records it) and
    /// what to do next. `attempts` counts the attempts that reached the server, this one included if
    /// it did (see ``countsAsAttempt(_:)``).
    mutating func attemptFinished(
        id: String, attempts: Int, outcome: Outcome, now: Double, jitter: Double
    ) -> (completion: Completion, next: Action) {
        let lane = sending.first { $0.value == id }?.key ?? ""
        if sending[lane] == id { sending[lane] = nil }
        let earlier = failuresBeforeServer[lane].flatMap { $0.id == id ? $0.count : nil } ?? 0
        switch outcome {
        case .couldNotConnect:
            lanesAfterNoConnection.insert(lane)
            failuresBeforeServer[lane] = (id, earlier + 1)
        case .bodyUnavailable:
            lanesAfterNoConnection.remove(lane)
            failuresBeforeServer[lane] = (id, earlier + 1)
        case .notSent:
            lanesAfterNoConnection.remove(lane)
        case .answered, .noAnswer, .bodyDamaged:
            lanesAfterNoConnection.remove(lane)
            failuresBeforeServer[lane] = nil
        }
        if let completion = Self.classify(outcome) {
            return (completion, nextClaim())
        }
        if outcome == .notSent {
            // Not an attempt: no backoff growth, but not at once either (the host is likely going away).
            isFlushing = false
            return (.retry(at: now + backoff.base), nextClaim())
        }
        var retryAfter: Double?
        if case .answered(_, let after) = outcome { retryAfter = after }
        // Failures before the server are not attempts, yet a host (or an outbox) that stays away is tried
        // less and less often.
        let failures = outcome == .couldNotConnect || outcome == .bodyUnavailable ? max(attempts, failuresBeforeServer[lane]?.count ?? 0) : attempts
        let at = now + delay(afterAttempts: failures, jitter: jitter, retryAfter: retryAfter)
        isFlushing = false
        // The head now waits for `at`; claiming again reads that and sets the timer.
        return (.retry(at: at), nextClaim())
    }

    private mutating func nextClaim() -> Action {
        guard isReachable else {
            isFlushing = false
            needsClaim = false
            return .idle
        }
        guard !isClaiming else {
            needsClaim = true
            return .idle
        }
        // Full: the next claim comes when an attempt ends (rows of other lanes are left to other replayers).
        guard sending.count < parallelLanes else { return .idle }
        return claim(Claim(excluding: Set(sending.keys), ignoringSchedule: isFlushing))
    }

    private mutating func claim(_ claim: Claim) -> Action {
        claimInFlight = claim
        needsClaim = false
        return .claimHead(claim)
    }
}
