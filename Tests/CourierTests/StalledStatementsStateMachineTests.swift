import Testing
@testable import CourierPostgres

/// The PostgreSQL outbox's bounds on what it leaves waiting on a server that does not answer, without a server.
@Suite("Outbox on PostgreSQL: stalled statements and notifications (state machines)")
struct StalledStatementsStateMachineTests {
    @Test func atMostTheLimitIsOnTheServerWhoeverWaitsForIt() {
        var machine = StalledStatementsStateMachine(limit: 2, patience: 5, lostAfter: 60)
        #expect(machine.start(now: 0) == .start)
        #expect(machine.start(now: 0) == .start)
        #expect(machine.start(now: 0) == .wait, "both places taken by statements being answered: wait for one")
        machine.answered()
        #expect(machine.start(now: 0) == .start, "an answered statement frees its place")
        let stalled = machine.gaveUp(now: 0)
        #expect(machine.start(now: 0) == .refuse, "every place taken and one stalled: the server is not answering")
        #expect(machine.startRepair(now: 0) == nil, "a repair waits for a place too")
        machine.answered()
        #expect(machine.stalled == 1 && machine.awaited == 0)
        let ticket = machine.startRepair(now: 0)
        #expect(ticket != nil, "a repair takes a free place")
        machine.ended(stalled)
        machine.ended(stalled)
        machine.answered()
        #expect(machine.stalled == 0 && machine.awaited == 0, "never below zero")
        if let ticket { machine.repairEnded(ticket) }
        #expect(machine.repairing == 0)
        #expect(machine.start(now: 0) == .start)
    }

    /// A statement given up on whose end never comes (postgres-nio never ends one whose connection the
    /// server closed mid-transaction) frees its place once an audit finds the server no longer runs it;
    /// statements still on the server (waiting on a lock the app holds) keep theirs however old.
    @Test func oldStatementsAreFreedOnlyWhenTheServerNoLongerRunsThem() {
        var machine = StalledStatementsStateMachine(limit: 2, patience: 5, lostAfter: 60)
        #expect(machine.start(now: 0) == .start)
        #expect(machine.start(now: 0) == .start)
        let first = machine.gaveUp(now: 5), second = machine.gaveUp(now: 30)
        let due1 = machine.auditDue(now: 64)
        #expect(!due1, "none is old yet")
        #expect(machine.start(now: 65) == .refuse, "time alone frees nothing (a table locked for long)")
        let due2 = machine.auditDue(now: 65)
        #expect(due2, "the first is old: ask the server")
        let due3 = machine.auditDue(now: 65.5)
        #expect(!due3, "one audit at a time")
        machine.auditQueryEnded()
        machine.audited(seenOnServer: 2, now: 66)
        #expect(machine.start(now: 66) == .refuse, "both still on the server: both keep their places")
        let due4 = machine.auditDue(now: 70)
        #expect(!due4, "not again within the interval")
        let due5 = machine.auditDue(now: 71)
        #expect(due5)
        machine.auditQueryEnded()
        machine.audited(seenOnServer: nil, now: 71)
        #expect(machine.stalled == 2, "no answer from the server frees nothing")
        let due6 = machine.auditDue(now: 76)
        #expect(due6)
        machine.auditQueryEnded()
        machine.audited(seenOnServer: 1, now: 76)
        #expect(machine.stalled == 1, "one is gone from the server: the oldest old one is lost")
        #expect(machine.start(now: 76) == .start, "its place is free")
        machine.ended(first)
        #expect(machine.stalled == 1, "a lost statement's late end frees nothing more")
        let due7 = machine.auditDue(now: 100)
        #expect(due7)
        machine.auditQueryEnded()
        machine.audited(seenOnServer: 0, now: 100)
        #expect(machine.stalled == 0, "the server runs none: the other old one is lost too, and only old ones")
        machine.ended(second)
        #expect(machine.awaited == 1 && machine.repairing == 0)
    }

    /// Review 8: a statement being awaited may not be on the server at the audit's instant (not sent yet,
    /// or answered and not yet told): it must not count as a place the server left, freeing an old
    /// statement's place while the server still runs it.
    @Test func anAuditComparesTheServerWithOldStatementsOnlyNotAwaitedOnes() {
        var machine = StalledStatementsStateMachine(limit: 4, patience: 1, lostAfter: 60)
        for _ in 0..<3 {
            #expect(machine.start(now: 0) == .start)
            _ = machine.gaveUp(now: 0)
        }
        #expect(machine.start(now: 100) == .start)
        #expect(machine.start(now: 100) == .refuse)
        let due = machine.auditDue(now: 100)
        #expect(due)
        machine.auditQueryEnded()
        machine.audited(seenOnServer: 3, now: 100)
        #expect(machine.stalled == 3, "the server shows three: the three old ones keep their places")
        let again = machine.auditDue(now: 105)
        #expect(again)
        machine.auditQueryEnded()
        machine.audited(seenOnServer: 2, now: 105)
        #expect(machine.stalled == 2, "one is gone from the server: one is lost")
    }

    /// An audit's question the server does not answer (a silent server) holds a connection like any
    /// statement: the next audit waits for it to end, or for it to be older than `lostAfter`.
    @Test func anUnansweredAuditKeepsTheNextFromBeingAskedUntilItEndsOrIsLost() {
        var machine = StalledStatementsStateMachine(limit: 1, patience: 1, lostAfter: 60)
        #expect(machine.start(now: 0) == .start)
        _ = machine.gaveUp(now: 0)
        let first = machine.auditDue(now: 60)
        #expect(first)
        machine.audited(seenOnServer: nil, now: 61)      // given up on; its statement still runs
        let second = machine.auditDue(now: 70)
        #expect(!second, "the first question is still on the server")
        let third = machine.auditDue(now: 120)
        #expect(third, "the first question is older than lostAfter: lost itself")
        machine.auditQueryEnded()
        machine.audited(seenOnServer: nil, now: 121)
        let fourth = machine.auditDue(now: 126)
        #expect(!fourth, "the second question is still on the server")
        machine.auditQueryEnded()
        let fifth = machine.auditDue(now: 127)
        #expect(fifth, "every question ended")
    }

    @Test func aRunningRepairMakesCallersWaitAndRefusesThemOnlyOnceItRanPastThePatience() {
        var machine = StalledStatementsStateMachine(limit: 2, patience: 5, lostAfter: 60)
        let first = machine.startRepair(now: 10), second = machine.startRepair(now: 11)
        #expect(first != nil && second != nil && first != second)
        #expect(machine.start(now: 12) == .wait, "repairs being answered are not a stalled server: wait")
        #expect(machine.start(now: 15) == .refuse, "a repair running for the whole patience is stalled")
        if let first { machine.repairEnded(first) }
        #expect(machine.start(now: 15) == .start, "its place is free once it ends")
        #expect(machine.start(now: 16) == .refuse, "the other has now run past the patience too")
        if let second { machine.repairEnded(second) }
        #expect(machine.repairing == 0 && machine.awaited == 1)
    }

    @Test func callersArrivingTogetherCannotPassTheLimit() {
        var machine = StalledStatementsStateMachine(limit: 4, patience: 5, lostAfter: 60)
        let decisions = (1...10).map { _ in machine.start(now: 0) }
        #expect(decisions.filter { $0 == .start }.count == 4, "\(decisions)")
        for _ in 1...4 { _ = machine.gaveUp(now: 0) }
        #expect(machine.stalled == 4 && machine.start(now: 0) == .refuse, "ten callers giving up together leave four statements stalled")
    }

    @Test func aLimitBelowOneStillLetsOneStatementStart() {
        var machine = StalledStatementsStateMachine(limit: 0, patience: 5, lostAfter: 60)
        #expect(machine.limit == 1 && machine.start(now: 0) == .start)
    }

    @Test func notificationsOfAKindAreSentOneAtATimeAndThoseAskedMeanwhileBecomeOne() {
        var machine = NoticeCoalescingStateMachine<String>()
        let first = machine.ask("due"), other = machine.ask("settled")
        #expect(first, "the first is sent at once")
        #expect(other, "another kind is not held back")
        let second = machine.ask("due"), third = machine.ask("due")
        #expect(!second && !third, "two more asked while one is on its way wait")
        let again = machine.sent("due")
        #expect(again, "one more is sent after it")
        let more = machine.sent("due")
        #expect(!more, "and no more: the two asked meanwhile were one")
        let idle = machine.ask("due")
        #expect(idle, "idle again: sent at once")
        let settledAgain = machine.sent("settled")
        #expect(!settledAgain)
    }

    @Test func notificationsGivenUpOnHoldBackTheNextOfTheirKindOnlyPastTheBound() {
        var machine = NoticeCoalescingStateMachine<String>()
        #expect(machine.maySend("due"))
        machine.gaveUp("due")
        #expect(machine.maySend("due"), "one left on a silent connection does not hold back the next")
        machine.gaveUp("due")
        #expect(!machine.maySend("due"), "two still on the server: the next waits")
        #expect(machine.maySend("settled"), "another kind is not held back")
        machine.endedAfterGivingUp("due")
        #expect(machine.maySend("due"), "one of them ended: the next goes")
        machine.endedAfterGivingUp("due")
        machine.endedAfterGivingUp("due")
        machine.gaveUp("due")
        machine.gaveUp("due")
        #expect(!machine.maySend("due"), "never below zero: two given up on after it still hold it back")
    }
}
