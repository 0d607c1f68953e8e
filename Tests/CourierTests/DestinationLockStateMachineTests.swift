import Testing
@testable import Courier

/// Tier 1: who may write to a download destination, first come first served.
@Suite("DestinationLockStateMachine")
struct DestinationLockStateMachineTests {
    @Test func aSecondWriterOfOneFileWaitsForTheFirst() {
        var machine = DestinationLockStateMachine()
        let first = machine.reserve(["/d/a"])
        let second = machine.reserve(["/d/a"])
        let other = machine.reserve(["/d/b"])
        #expect(first.holds && !second.holds && other.holds)
        #expect(machine.release(first.ticket) == [second.ticket])
        #expect(machine.holds(second.ticket))
        #expect(machine.release(second.ticket).isEmpty)
        #expect(machine.release(other.ticket).isEmpty)
        #expect(machine.isIdle)
    }

    @Test func ticketsSharingSeveralFilesAreOrderedTheSameOnEachSoNoneDeadlocks() {
        var machine = DestinationLockStateMachine()
        let ab = machine.reserve(["/a", "/b"])
        let ba = machine.reserve(["/b", "/a"])
        let b = machine.reserve(["/b"])
        #expect(ab.holds && !ba.holds && !b.holds)
        // /a and /b both free up: the older of the waiters takes both; the one on /b alone still waits.
        #expect(machine.release(ab.ticket) == [ba.ticket])
        #expect(!machine.holds(b.ticket))
        #expect(machine.release(ba.ticket) == [b.ticket])
    }

    @Test func aWaiterThatGivesUpLeavesTheLineWithoutBlockingOthers() {
        var machine = DestinationLockStateMachine()
        let first = machine.reserve(["/a"])
        let cancelled = machine.reserve(["/a", "/b"])
        let onB = machine.reserve(["/b"])
        #expect(!onB.holds, "behind the waiting ticket on /b")
        #expect(machine.release(cancelled.ticket) == [onB.ticket])   // the cancelled waiter leaves
        #expect(machine.isReserved(first.ticket) && !machine.isReserved(cancelled.ticket))
        #expect(machine.release(first.ticket).isEmpty)
        #expect(machine.release(cancelled.ticket).isEmpty, "releasing twice changes nothing")
    }
}
