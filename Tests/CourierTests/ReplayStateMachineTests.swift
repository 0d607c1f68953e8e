import Testing
@testable import Courier

/// Tier 1: the outbox replay rules (ordering, backoff, what an answer means), with no I/O.
@Suite("ReplayStateMachine")
struct ReplayStateMachineTests {
    typealias Machine = ReplayStateMachine

    private func head(
        _ id: String, lane: String = "", attempts: Int = 0, next: Double = 0, expires: Double? = nil, max: Int? = nil, lease: Double? = nil
    ) -> Machine.Head {
        Machine.Head(id: id, lane: lane, attempts: attempts, maximumAttempts: max, expiresAt: expires, nextAttemptAt: next, leasedUntil: lease)
    }

    @Test func nothingIsClaimedWhileUnreachableAndReachabilityStartsTheReplay() {
        var machine = Machine(isReachable: false)
        #expect(machine.timerFired() == .idle)
        #expect(machine.flush() == .idle)
        #expect(machine.reachabilityChanged(true) == .claimHead(Machine.Claim()))
        // A second wake-up while the claim is out does not claim twice.
        #expect(machine.timerFired() == .idle)
        #expect(machine.headClaimed(head("a"), decision: .send) == .send(id: "a"))
        #expect(machine.timerFired() == .claimHead(Machine.Claim(excluding: [""])), "a lane on its way is not looked at")
    }

    @Test func aHostThatAnswersEndsABackoffAfterNoConnectionButNotARetryAfterOrATimeout() {
        var machine = Machine(isReachable: true)
        _ = machine.timerFired()
        _ = machine.headClaimed(head("a"), decision: .send)
        // Could not connect: backoff, and the claim that reads the retry time is under way.
        let (completion, next) = machine.attemptFinished(id: "a", attempts: 1, outcome: .couldNotConnect, now: 100, jitter: 0.5)
        #expect(completion == .retry(at: 100 + machine.delay(afterAttempts: 1, jitter: 0.5)))
        #expect(next == .claimHead(Machine.Claim()))
        // Another request gets an answer while that claim is out: remembered, then acted on.
        #expect(machine.hostAnswered() == .idle)
        #expect(machine.headClaimed(head("a", next: 200), decision: .wait(until: 200)) == .claimHead(Machine.Claim(ignoringScheduleOf: [""])))
        #expect(machine.headClaimed(head("a", next: 200), decision: .send) == .send(id: "a"))
        // Once waiting (timer set), an answer claims at once.
        _ = machine.attemptFinished(id: "a", attempts: 2, outcome: .couldNotConnect, now: 300, jitter: 0.5)
        #expect(machine.headClaimed(head("a", next: 400), decision: .wait(until: 400)) == .wake(at: 400))
        #expect(machine.hostAnswered() == .claimHead(Machine.Claim(ignoringScheduleOf: [""])))
        _ = machine.headClaimed(head("a"), decision: .send)
        // A timeout (a slow server, not an absent one) keeps its backoff: trying sooner would not help.
        _ = machine.attemptFinished(id: "a", attempts: 3, outcome: .noAnswer, now: 450, jitter: 0.5)
        #expect(machine.headClaimed(head("a", next: 460), decision: .wait(until: 460)) == .wake(at: 460))
        #expect(machine.hostAnswered() == .idle)
        _ = machine.timerFired()
        _ = machine.headClaimed(head("a"), decision: .send)
        // A wait the server asked for (an answered 503 with Retry-After) is kept.
        _ = machine.attemptFinished(id: "a", attempts: 4, outcome: .answered(status: 503, retryAfter: 60), now: 500, jitter: 0.5)
        #expect(machine.headClaimed(head("a", next: 560), decision: .wait(until: 560)) == .wake(at: 560))
        #expect(machine.hostAnswered() == .idle)
    }

    @Test func aFailedClaimIsRetriedWithBackoff() {
        var machine = Machine(isReachable: true, backoff: .init(base: 1, cap: 8))
        #expect(machine.timerFired() == .claimHead(Machine.Claim()))
        guard case .wake(let first) = machine.claimFailed(now: 10, jitter: 1) else { Issue.record("no wake"); return }
        #expect(first == 11)
        _ = machine.timerFired()
        guard case .wake(let second) = machine.claimFailed(now: 20, jitter: 1) else { Issue.record("no wake"); return }
        #expect(second == 22, "doubles")
        _ = machine.timerFired()
        #expect(machine.headClaimed(nil, decision: nil) == .idle)
    }

    @Test func anAttemptThatWasNotSentIsNotBackedOff() {
        var machine = Machine(isReachable: true, backoff: .init(base: 1, cap: 300))
        _ = machine.timerFired()
        _ = machine.headClaimed(head("a", attempts: 5), decision: .send)
        let (completion, _) = machine.attemptFinished(id: "a", attempts: 5, outcome: .notSent, now: 100, jitter: 1)
        #expect(completion == .retry(at: 101), "the base delay, whatever the attempts so far")
    }

    @Test func answersAreSortedIntoDeliveredPermanentAndRetry() {
        let cases: [(Machine.Outcome, Machine.Completion?)] = [
            (.answered(status: 200, retryAfter: nil), .delivered),
            (.answered(status: 201, retryAfter: nil), .delivered),
            (.answered(status: 204, retryAfter: nil), .delivered),
            (.answered(status: 400, retryAfter: nil), .failedPermanently),
            (.answered(status: 404, retryAfter: nil), .failedPermanently),
            (.answered(status: 409, retryAfter: nil), .failedPermanently),
            (.answered(status: 422, retryAfter: nil), .failedPermanently),
            (.answered(status: 408, retryAfter: nil), nil),
            (.answered(status: 429, retryAfter: nil), nil),
            (.answered(status: 500, retryAfter: nil), nil),
            (.answered(status: 503, retryAfter: nil), nil),
            (.answered(status: 304, retryAfter: nil), nil),
            (.noAnswer, nil),
        ]
        for (outcome, expected) in cases { #expect(Machine.classify(outcome) == expected, "\(outcome)") }
    }

    @Test func backoffDoublesWithJitterUpToTheCapAndHonoursRetryAfter() {
        let machine = Machine(isReachable: true, backoff: .init(base: 1, cap: 60))
        #expect(machine.delay(afterAttempts: 1, jitter: 1) == 1)
        #expect(machine.delay(afterAttempts: 1, jitter: 0) == 0.5)
        #expect(machine.delay(afterAttempts: 2, jitter: 1) == 2)
        #expect(machine.delay(afterAttempts: 4, jitter: 1) == 8)
        #expect(machine.delay(afterAttempts: 30, jitter: 1) == 60)
        #expect(machine.delay(afterAttempts: 1000, jitter: 0.5) == 45)
        #expect(machine.delay(afterAttempts: 1, jitter: 1, retryAfter: 120) == 120, "never sooner than Retry-After")
        #expect(machine.delay(afterAttempts: 6, jitter: 1, retryAfter: 3) == 32, "Retry-After is a floor, not a ceiling")
    }

    @Test func aFailedAttemptIsRetriedLaterAndHoldsBackTheRest() {
        var machine = Machine(isReachable: true, backoff: .init(base: 2, cap: 60))
        _ = machine.timerFired()
        #expect(machine.headClaimed(head("a"), decision: .send) == .send(id: "a"))
        let (completion, next) = machine.attemptFinished(id: "a", attempts: 1, outcome: .answered(status: 503, retryAfter: nil), now: 100, jitter: 1)
        #expect(completion == .retry(at: 102))
        #expect(next == .claimHead(Machine.Claim()))
        // The head ("a", due at 102) is read again: the machine waits for it rather than sending "b".
        let decision = Machine.decide(head("a", attempts: 1, next: 102), now: 100)
        #expect(decision == .wait(until: 102))
        #expect(machine.headClaimed(head("a", attempts: 1, next: 102), decision: decision) == .wake(at: 102))
        #expect(machine.timerFired() == .claimHead(Machine.Claim()))
    }

    @Test func deliveredRowsLeadToTheNextInOrder() {
        var machine = Machine(isReachable: true)
        _ = machine.reachabilityChanged(true)
        var sent: [String] = []
        for id in ["a", "b", "c"] {
            let action = machine.headClaimed(head(id), decision: .send)
            guard case .send(let sending) = action else { Issue.record("expected a send, got \(action)"); return }
            sent.append(sending)
            let (completion, next) = machine.attemptFinished(id: id, attempts: 1, outcome: .answered(status: 200, retryAfter: nil), now: 0, jitter: 0)
            #expect(completion == .delivered)
            #expect(next == .claimHead(Machine.Claim()))
        }
        #expect(sent == ["a", "b", "c"])
        #expect(machine.headClaimed(nil, decision: nil) == .idle)
    }

    @Test func expiryAndAttemptLimitsDeadLetterBeforeAnythingIsSent() {
        #expect(Machine.decide(head("a", expires: 50), now: 50) == .deadLetter(.expired))
        #expect(Machine.decide(head("a", expires: 50), now: 49) == .send)
        #expect(Machine.decide(head("a", attempts: 3, max: 3), now: 0) == .deadLetter(.tooManyAttempts))
        #expect(Machine.decide(head("a", attempts: 2, max: 3), now: 0) == .send)
        // A dead letter does not stop the replay: the next head is read.
        var machine = Machine(isReachable: true)
        _ = machine.timerFired()
        #expect(machine.headClaimed(head("a", expires: 1), decision: .deadLetter(.expired)) == .claimHead(Machine.Claim()))
    }

    @Test func anotherLiveReplayersLeaseIsWaitedForAndAFlushIgnoresOnlyTheSchedule() {
        #expect(Machine.decide(head("a", lease: 130), now: 100) == .wait(until: 101), "looked at again every second")
        #expect(Machine.decide(head("a", lease: 100.5), now: 100) == .wait(until: 100.5))
        #expect(Machine.decide(head("a", lease: 90), now: 100) == .send, "an expired lease is taken over")
        #expect(Machine.decide(head("a", next: 500), now: 100, ignoringSchedule: true) == .send)
        #expect(Machine.decide(head("a", next: 500, lease: 130), now: 100, ignoringSchedule: true) == .wait(until: 101))
        var machine = Machine(isReachable: true)
        #expect(machine.flush() == .claimHead(Machine.Claim(ignoringSchedule: true)))
        #expect(machine.headClaimed(head("a"), decision: .send) == .send(id: "a"))
        let (_, next) = machine.attemptFinished(id: "a", attempts: 1, outcome: .answered(status: 200, retryAfter: nil), now: 0, jitter: 0)
        #expect(next == .claimHead(Machine.Claim(ignoringSchedule: true)), "a flush goes on until the outbox is empty")
        let (_, afterFailure) = { () -> (Machine.Completion, Machine.Action) in
            _ = machine.headClaimed(head("b"), decision: .send)
            return machine.attemptFinished(id: "b", attempts: 1, outcome: .noAnswer, now: 0, jitter: 0)
        }()
        #expect(afterFailure == .claimHead(Machine.Claim()), "a failure ends the flush")
        #expect(!machine.isFlushing)
    }

    @Test func goingUnreachableStopsClaimingButLetsTheAttemptInFlightFinish() {
        var machine = Machine(isReachable: true)
        _ = machine.timerFired()
        _ = machine.headClaimed(head("a"), decision: .send)
        #expect(machine.reachabilityChanged(false) == .idle)
        let (completion, next) = machine.attemptFinished(id: "a", attempts: 1, outcome: .noAnswer, now: 10, jitter: 1)
        #expect(completion == .retry(at: 11))
        #expect(next == .idle)
        #expect(machine.reachabilityChanged(true) == .claimHead(Machine.Claim()))
    }

    @Test func aFlushAskedForWhileAnOrdinaryClaimIsOutStillIgnoresTheRetryTime() {
        var machine = Machine(isReachable: true)
        #expect(machine.timerFired() == .claimHead(Machine.Claim()))
        #expect(machine.flush() == .idle, "the claim under way answers first")
        let waiting = head("a", attempts: 1, next: 500)
        #expect(machine.headClaimed(waiting, decision: Machine.decide(waiting, now: 100)) == .claimHead(Machine.Claim(ignoringSchedule: true)))
        #expect(machine.headClaimed(waiting, decision: Machine.decide(waiting, now: 100, ignoringSchedule: true)) == .send(id: "a"))
        // But a row another replayer holds ends the flush.
        var other = Machine(isReachable: true)
        _ = other.timerFired()
        _ = other.flush()
        let leased = head("b", lease: 130)
        #expect(other.headClaimed(leased, decision: Machine.decide(leased, now: 100)) == .wake(at: 101))
        #expect(!other.isFlushing)
    }

    // MARK: Ordering keys (lanes)

    @Test func aClaimPicksTheFirstDeadLetterElseTheFirstSendElseTheSoonestWait() {
        let now = 100.0
        let heads = [
            head("a", lane: "x", attempts: 1, next: 300),
            head("b", lane: "", next: 0),
            head("c", lane: "y", next: 200),
            head("d", lane: "z", expires: 50),
        ]
        #expect(Machine.choose(heads, now: now, claim: .init())?.head.id == "d", "dead letters first, so their lane moves on")
        #expect(Machine.choose(Array(heads.prefix(3)), now: now, claim: .init())?.head.id == "b", "then the oldest head that can go")
        let waits = Machine.choose([heads[0], heads[2]], now: now, claim: .init())
        #expect(waits?.head.id == "c" && waits?.decision == .wait(until: 200), "else the head due soonest")
        #expect(Machine.choose(heads, now: now, claim: .init(excluding: ["", "z"]))?.decision == .wait(until: 200), "lanes on their way are not looked at")
        #expect(Machine.choose([heads[0], heads[2]], now: now, claim: .init(ignoringScheduleOf: ["x"]))?.head.id == "a")
        #expect(Machine.choose([], now: now, claim: .init()) == nil)
    }

    /// Issue 26: a replayer claims no more lanes than it may send at once, so instances sharing an outbox
    /// share its lanes (one holding every lane's lease would make the others wait for its queue).
    @Test func noMoreLanesAreClaimedThanMayBeSentAtOnce() {
        var machine = Machine(isReachable: true, parallelLanes: 2)
        #expect(machine.timerFired() == .claimHead(.init()))
        #expect(machine.headClaimed(head("a", lane: "x"), decision: .send) == .send(id: "a"))
        #expect(machine.sendStarted() == .claimHead(.init(excluding: ["x"])))
        #expect(machine.headClaimed(head("b", lane: "y"), decision: .send) == .send(id: "b"))
        #expect(machine.sendStarted() == .idle, "two lanes on their way: no third claim")
        #expect(machine.timerFired() == .idle)
        #expect(machine.reachabilityChanged(true) == .idle)
        let (completion, next) = machine.attemptFinished(id: "a", attempts: 1, outcome: .answered(status: 200, retryAfter: nil), now: 100, jitter: 1)
        #expect(completion == .delivered)
        #expect(next == .claimHead(.init(excluding: ["y"])), "a lane freed: the next claim")
    }

    @Test func aStuckHeadHoldsBackOnlyItsOwnLane() {
        var machine = Machine(isReachable: true, backoff: .init(base: 2, cap: 60))
        #expect(machine.timerFired() == .claimHead(.init()))
        #expect(machine.headClaimed(head("a", lane: "x"), decision: .send) == .send(id: "a"))
        // While "a" is on its way, the other lanes are looked at.
        #expect(machine.sendStarted() == .claimHead(.init(excluding: ["x"])))
        #expect(machine.headClaimed(head("b", lane: "y"), decision: .send) == .send(id: "b"))
        #expect(machine.sendStarted() == .claimHead(.init(excluding: ["x", "y"])))
        #expect(machine.headClaimed(nil, decision: nil) == .idle)
        #expect(machine.isSending)
        // "a" gets a 500: its lane waits; "b" is still on its way and its lane is not looked at.
        let (completion, next) = machine.attemptFinished(id: "a", attempts: 1, outcome: .answered(status: 500, retryAfter: nil), now: 100, jitter: 1)
        #expect(completion == .retry(at: 102))
        #expect(next == .claimHead(.init(excluding: ["y"])))
        #expect(machine.headClaimed(head("a", lane: "x", attempts: 1, next: 102), decision: .wait(until: 102)) == .wake(at: 102))
        // "b" is delivered: its lane's next row goes although "a" still waits.
        let (delivered, afterB) = machine.attemptFinished(id: "b", attempts: 1, outcome: .answered(status: 200, retryAfter: nil), now: 101, jitter: 1)
        #expect(delivered == .delivered)
        #expect(afterB == .claimHead(.init()))
        let heads = [head("a", lane: "x", attempts: 1, next: 102), head("c", lane: "y")]
        let choice = Machine.choose(heads, now: 101, claim: .init())
        #expect(choice?.head.id == "c")
        #expect(machine.headClaimed(choice?.head, decision: choice?.decision) == .send(id: "c"))
    }

    @Test func aLaneFreedWhileAClaimIsOutIsLookedAtAfterIt() {
        var machine = Machine(isReachable: true)
        _ = machine.timerFired()
        _ = machine.headClaimed(head("a", lane: "x"), decision: .send)
        #expect(machine.sendStarted() == .claimHead(.init(excluding: ["x"])))
        // "a" finishes while the claim for the other lanes is out: that claim could not see lane "x".
        let (_, next) = machine.attemptFinished(id: "a", attempts: 1, outcome: .answered(status: 200, retryAfter: nil), now: 0, jitter: 0)
        #expect(next == .idle)
        #expect(machine.headClaimed(nil, decision: nil) == .claimHead(.init()), "claimed again, lane x included")
        #expect(machine.headClaimed(nil, decision: nil) == .idle)
    }

    @Test func connectionFailuresAreNotAttemptsButStillBackOff() {
        #expect(!Machine.countsAsAttempt(.couldNotConnect))
        #expect(!Machine.countsAsAttempt(.notSent))
        #expect(Machine.countsAsAttempt(.noAnswer))
        #expect(Machine.countsAsAttempt(.answered(status: 500, retryAfter: nil)))
        var machine = Machine(isReachable: true, backoff: .init(base: 1, cap: 60))
        let delays = failThrice(&machine, .couldNotConnect) { _ in }
        #expect(delays == [1, 2, 4], "the host that stays away is tried less and less often")
    }

    /// Three attempts of head "a" ending with `outcome`, 100 s apart (jitter 1): the delays they were given.
    /// `afterEach` looks at the machine once the head waits out its delay.
    private func failThrice(_ machine: inout Machine, _ outcome: Machine.Outcome, afterEach: (inout Machine) -> Void) -> [Double] {
        var delays: [Double] = []
        for round in 0..<3 {
            _ = machine.timerFired()
            _ = machine.headClaimed(head("a"), decision: .send)
            let now = Double(round * 100)
            let (completion, _) = machine.attemptFinished(id: "a", attempts: 0, outcome: outcome, now: now, jitter: 1)
            guard case .retry(let at) = completion else { Issue.record("no retry"); return delays }
            delays.append(at - now)
            #expect(machine.headClaimed(head("a", next: at), decision: .wait(until: at)) == .wake(at: at))
            afterEach(&machine)
        }
        return delays
    }

    /// Review 8: a frozen body the outbox could not read back (its PostgreSQL server stalled) is not an
    /// attempt, backs off more each time, and is not tried again at once when the host answers another
    /// request (it was tried on every live answer: an aborted POST to the origin each time).
    @Test func aBodyTheOutboxCannotReadBacksOffAndAHostAnswerDoesNotEndIt() {
        #expect(!Machine.countsAsAttempt(.bodyUnavailable))
        var machine = Machine(isReachable: true, backoff: .init(base: 1, cap: 60))
        let delays = failThrice(&machine, .bodyUnavailable) { machine in
            #expect(!machine.waitsAfterNoConnection)
            #expect(machine.hostAnswered() == .idle, "an answer from the host does not end the outbox's backoff")
        }
        #expect(delays == [1, 2, 4])
        // The body read back at last and answered: the next failure starts the backoff over.
        _ = machine.timerFired()
        _ = machine.headClaimed(head("a"), decision: .send)
        _ = machine.attemptFinished(id: "a", attempts: 1, outcome: .answered(status: 503, retryAfter: nil), now: 400, jitter: 1)
        _ = machine.headClaimed(head("a", next: 401), decision: .send)
        let (completion, _) = machine.attemptFinished(id: "a", attempts: 1, outcome: .bodyUnavailable, now: 500, jitter: 1)
        #expect(completion == .retry(at: 501))
    }

    /// Review 9: failures before the server belong to the row that had them. Row a of a lane failed five
    /// times (its body unreadable) and was dropped; row b of the same lane, failing once, waits the base
    /// delay, not a's long backoff.
    @Test func failuresBeforeTheServerDoNotPassToTheNextRowOfTheLane() {
        var machine = Machine(isReachable: true, backoff: .init(base: 1, cap: 600))
        for round in 0..<5 {
            _ = machine.timerFired()
            _ = machine.headClaimed(head("a"), decision: .send)
            _ = machine.attemptFinished(id: "a", attempts: 0, outcome: .bodyUnavailable, now: Double(round * 1000), jitter: 1)
            _ = machine.headClaimed(head("a", next: Double(round * 1000 + 500)), decision: .wait(until: Double(round * 1000 + 500)))
        }
        _ = machine.timerFired()
        _ = machine.headClaimed(head("b"), decision: .send)
        let (completion, _) = machine.attemptFinished(id: "b", attempts: 0, outcome: .couldNotConnect, now: 10_000, jitter: 1)
        #expect(completion == .retry(at: 10_001), "a new row's first failure waits the base delay")
    }

    /// Review 11: a copy found damaged as it was read (a PostgreSQL outbox's chunks that do not add up to
    /// the frozen length) is dead-lettered as `bodyUnavailable` at once, not counted as an attempt, and the
    /// lane goes on with its next row without a backoff.
    @Test func aBodyFoundDamagedAsItIsReadIsDeadLetteredAndItsLaneGoesOn() {
        #expect(!Machine.countsAsAttempt(.bodyDamaged))
        var machine = Machine(isReachable: true, backoff: .init(base: 1, cap: 60))
        _ = machine.timerFired()
        _ = machine.headClaimed(head("a"), decision: .send)
        let (completion, next) = machine.attemptFinished(id: "a", attempts: 0, outcome: .bodyDamaged, now: 100, jitter: 1)
        #expect(completion == .deadLettered(.bodyUnavailable))
        #expect(next != .idle, "the lane's next row is claimed at once")
        _ = machine.headClaimed(head("b"), decision: .send)
        let (after, _) = machine.attemptFinished(id: "b", attempts: 0, outcome: .couldNotConnect, now: 200, jitter: 1)
        #expect(after == .retry(at: 201), "the next row starts with the base delay")
    }
}
