import Testing
@testable import CourierPostgres

/// The PostgreSQL outbox's bounds on what it leaves waiting on a server that does not answer, without a server.
@Suite("Outbox on PostgreSQL: stalled statements and notifications (state machines)")
struct StalledStatementsStateMachineTests {
    @Test func atMostTheLimitIsOnTheServerWhoeverWaitsForIt() {
        var machine = StalledStatementsStateMachine(limit: 2)
        #expect(machine.start() == .start)
        #expect(machine.start() == .start)
        #expect(machine.start() == .wait, "both places taken by statements being answered: wait for one")
        machine.answered()
        #expect(machine.start() == .start, "an answered statement frees its place")
        machine.gaveUp()
        #expect(machine.start() == .refuse, "every place taken and one stalled: the server is not answering")
        let repair = machine.startRepair()
        #expect(!repair, "a repair waits for a place too")
        machine.answered()
        #expect(machine.stalled == 1 && machine.awaited == 0)
        let started = machine.startRepair()
        #expect(started, "a repair takes a free place")
        #expect(machine.start() == .refuse, "and counts as stalled while it runs")
        machine.ended()
        machine.ended()
        machine.ended()
        #expect(machine.stalled == 0 && machine.awaited == 0, "never below zero")
        #expect(machine.start() == .start)
    }

    @Test func callersArrivingTogetherCannotPassTheLimit() {
        var machine = StalledStatementsStateMachine(limit: 4)
        let decisions = (1...10).map { _ in machine.start() }
        #expect(decisions.filter { $0 == .start }.count == 4, "\(decisions)")
        for _ in 1...4 { machine.gaveUp() }
        #expect(machine.stalled == 4 && machine.start() == .refuse, "ten callers giving up together leave four statements stalled")
    }

    @Test func aLimitBelowOneStillLetsOneStatementStart() {
        var machine = StalledStatementsStateMachine(limit: 0)
        #expect(machine.limit == 1 && machine.start() == .start)
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
}
