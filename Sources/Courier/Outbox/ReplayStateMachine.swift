/// How one engine replays its outbox, as a pure value: which frozen request goes next, when to try
/// again, and what a server's answer means for the stored row. No I/O, no clock (times are passed
/// in, as seconds since 1970), no randomness (jitter is passed in).
///
/// Rules:
/// - one request per origin at a time, strictly in the order they were frozen: the oldest pending
///   row (the head) goes first, and a head waiting for its retry time holds the rest back;
/// - nothing is sent while the host is unreachable; reachability, a timer or a flush wakes the replay;
/// - a row goes only after a definitive answer: 2xx (delivered) or a 4xx other than 408 and 429
///   (failed permanently). 5xx, 408, 429, any other answer and connection failures keep it, with
///   exponential backoff and jitter, never sooner than the server's `Retry-After`;
/// - a row past its time to live, or out of attempts, moves to the dead-letter state.
struct ReplayStateMachine {
    /// Backoff settings.
    struct Backoff: Equatable {
        /// The first retry's delay before jitter, in seconds.
        var base: Double = 1
        /// The longest delay, in seconds.
        var cap: Double = 300
    }

    /// Facts about the head row of an origin, read in the same transaction that may claim it.
    struct Head: Equatable {
        var id: String
        var attempts: Int
        var maximumAttempts: Int?
        var expiresAt: Double?
        var nextAttemptAt: Double
        /// When another live replayer's lease on it runs out, if one holds it.
        var leasedUntil: Double?
    }

    /// What to do with a head row.
    enum HeadDecision: Equatable {
        /// Claim it and send it (attempt number `attempts + 1`).
        case send
        /// Move it to the dead-letter state.
        case deadLetter(OutboxEntry.DeadLetterReason)
        /// Nothing to do before this time.
        case wait(until: Double)
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
    }

    /// What becomes of a row after an attempt.
    enum Completion: Equatable {
        /// Delivered: remove the row.
        case delivered
        /// Refused for good (a 4xx other than 408/429): remove the row.
        case failedPermanently
        /// Keep the row; try again no sooner than this time.
        case retry(at: Double)
    }

    enum Action: Equatable {
        /// Read the head row (and claim it if the decision is `.send`).
        case claimHead(ignoringSchedule: Bool)
        /// Send the claimed row.
        case send(id: String)
        /// Come back (fire ``timerFired(now:)``) at this time.
        case wake(at: Double)
        /// Nothing to do until reachability or a flush.
        case idle
    }

    let backoff: Backoff
    private(set) var isReachable: Bool
    /// The row being sent, if any.
    private(set) var sending: String?
    /// Whether a claim is being made (its answer comes to ``headClaimed(_:decision:)``).
    private(set) var isClaiming = false
    /// Whether the claim being made ignores retry times (was made for a flush).
    private var claimIgnoresSchedule = false
    private(set) var isFlushing = false
    /// Claims that failed in a row (the database was busy or broken).
    private var claimFailures = 0
    /// Whether the head waits because its last attempt could not connect (not because the server said
    /// when, nor after a timeout: a slow server is not helped by trying it sooner).
    private(set) var waitsAfterNoConnection = false
    /// The host answered another request while a claim was out.
    private var hostAnsweredDuringClaim = false

    init(isReachable: Bool, backoff: Backoff = Backoff()) {
        self.isReachable = isReachable
        self.backoff = backoff
    }

    /// How often a row leased by another live replayer is looked at again (so a holder that dies is
    /// noticed within this many seconds, not when its lease runs out).
    static let leaseRecheck: Double = 1

    /// The decision for a head row: dead-letter rules first, then its schedule and any lease.
    static func decide(_ head: Head, now: Double, ignoringSchedule: Bool = false) -> HeadDecision {
        if let leasedUntil = head.leasedUntil, leasedUntil > now { return .wait(until: min(leasedUntil, now + leaseRecheck)) }
        if let expiresAt = head.expiresAt, now >= expiresAt { return .deadLetter(.expired) }
        if let maximum = head.maximumAttempts, head.attempts >= maximum { return .deadLetter(.tooManyAttempts) }
        if !ignoringSchedule && head.nextAttemptAt > now { return .wait(until: head.nextAttemptAt) }
        return .send
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
        guard case .answered(let status, _) = outcome else { return nil }
        if (200..<300).contains(status) { return .delivered }
        if (400..<500).contains(status) && status != 408 && status != 429 { return .failedPermanently }
        return nil
    }

    // MARK: Events

    /// The host became reachable or unreachable.
    mutating func reachabilityChanged(_ reachable: Bool) -> Action {
        isReachable = reachable
        return nextClaim()
    }

    /// A timer set by ``Action/wake(at:)`` fired.
    mutating func timerFired() -> Action { nextClaim() }

    /// Send what can be sent now, ignoring retry times (but not reachability): `courier outbox flush`.
    mutating func flush() -> Action {
        guard isReachable else { return .idle }
        isFlushing = true
        guard sending == nil, !isClaiming else { return .idle }
        return claim(ignoringSchedule: true)
    }

    /// The answer to ``Action/claimHead(ignoringSchedule:)``: the decision taken on the head, or `nil`
    /// when the origin has nothing pending. A dead-lettered head is already recorded by the caller.
    mutating func headClaimed(_ head: Head?, decision: HeadDecision?) -> Action {
        isClaiming = false
        claimFailures = 0
        guard let head, let decision else {
            isFlushing = false
            return .idle
        }
        switch decision {
        case .send:
            sending = head.id
            return .send(id: head.id)
        case .deadLetter:
            return nextClaim()
        case .wait(let until):
            defer { hostAnsweredDuringClaim = false }
            // The host answered while this claim read the retry time: a backoff after no connection ends now.
            if hostAnsweredDuringClaim && waitsAfterNoConnection && head.leasedUntil == nil && !claimIgnoresSchedule {
                waitsAfterNoConnection = false
                return claim(ignoringSchedule: true)
            }
            // A flush asked for while an ordinary claim was out: that claim saw the retry time, the flush
            // must not. (A lease held by another replayer ends the flush: that one is sending.)
            if isFlushing && !claimIgnoresSchedule && head.leasedUntil == nil {
                return claim(ignoringSchedule: true)
            }
            isFlushing = false
            return .wake(at: until)
        }
    }

    /// The claimed row's attempt ended. Returns what becomes of the row (the caller records it) and
    /// what to do next.
    /// The outbox could not be read or written (busy, disk full): try again after a backoff, instead of
    /// taking the failure for "nothing pending" and waiting for the next reachability change.
    mutating func claimFailed(now: Double, jitter: Double) -> Action {
        isClaiming = false
        isFlushing = false
        claimFailures += 1
        return .wake(at: now + delay(afterAttempts: claimFailures, jitter: jitter))
    }

    /// Another request to the same host just got an answer: the host is back, so a head waiting out a
    /// backoff after it could not connect is tried now (a wait the server asked for, Retry-After or an
    /// answered retry, and a backoff after a timeout are kept).
    mutating func hostAnswered() -> Action {
        guard isReachable, waitsAfterNoConnection, sending == nil else { return .idle }
        guard !isClaiming else {
            // The claim under way reads the retry time; its answer decides (see headClaimed).
            hostAnsweredDuringClaim = true
            return .idle
        }
        waitsAfterNoConnection = false
        return claim(ignoringSchedule: true)
    }

    mutating func attemptFinished(
        id: String, attempts: Int, outcome: Outcome, now: Double, jitter: Double
    ) -> (completion: Completion, next: Action) {
        if sending == id { sending = nil }
        waitsAfterNoConnection = outcome == .couldNotConnect
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
        let at = now + delay(afterAttempts: attempts, jitter: jitter, retryAfter: retryAfter)
        isFlushing = false
        // The head now waits for `at`; claiming again reads that and sets the timer.
        return (.retry(at: at), nextClaim())
    }

    private mutating func nextClaim() -> Action {
        guard isReachable else {
            isFlushing = false
            return .idle
        }
        guard sending == nil, !isClaiming else { return .idle }
        return claim(ignoringSchedule: isFlushing)
    }

    private mutating func claim(ignoringSchedule: Bool) -> Action {
        isClaiming = true
        claimIgnoresSchedule = ignoringSchedule
        return .claimHead(ignoringSchedule: ignoringSchedule)
    }
}
