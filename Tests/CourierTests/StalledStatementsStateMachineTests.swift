import Testing
@testable import CourierPostgres

/// The PostgreSQL outbox's bounds on what it leaves waiting on a server that does not answer, without a server.
@Suite("Outbox on PostgreSQL: stalled statements and notifications (state machines)")
struct StalledStatementsStateMachineTests {
    @Test func statementsGivenUpOnAreCountedUntilTheyEndAndNewOnesAreRefusedPastTheLimit() {
        var machine = StalledStatementsStateMachine(limit: 2)
        #expect(machine.mayStart)
        machine.gaveUp()
        #expect(machine.mayStart)
        machine.gaveUp()
        #expect(!machine.mayStart, "two statements wait on the server: a third is refused")
        let refused = machine.startRepair()
        #expect(!refused, "a repair waits for a place too")
        machine.ended()
        #expect(machine.mayStart && machine.stalled == 1)
        let started = machine.startRepair()
        #expect(started, "a repair takes the place that came free")
        #expect(!machine.mayStart, "and is counted while it runs")
        machine.ended()
        machine.ended()
        machine.ended()
        #expect(machine.stalled == 0 && machine.mayStart, "never below zero")
    }

    @Test func aLimitBelowOneStillLetsOneStatementStart() {
        let machine = StalledStatementsStateMachine(limit: 0)
        #expect(machine.limit == 1 && machine.mayStart)
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
