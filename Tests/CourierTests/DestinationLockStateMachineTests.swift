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

    /// An explicit cancel's removal of the resume data: right behind the operation's own writer, never
    /// behind (or before) another download's.
    @Test func aRemovalQueuesBehindItsOwnWriterOnly() {
        var machine = DestinationLockStateMachine()
        let own = machine.reserve(["/a", "/b"])
        let removal = machine.reserveIfFree(["/a", "/b"], after: own.ticket)
        #expect(removal != nil && !machine.holds(removal!), "waits for its own writer to close the files")
        #expect(machine.reserveIfFree(["/a"], after: nil) == nil, "taken")
        #expect(machine.release(own.ticket) == [removal!])
        #expect(machine.release(removal!).isEmpty)

        let first = machine.reserve(["/a"])
        let second = machine.reserve(["/a"])
        #expect(machine.reserveIfFree(["/a"], after: second.ticket) == nil, "another download holds the file: its outcome decides")
        #expect(machine.reserveIfFree(["/a"], after: first.ticket) == nil, "another download waits for it: removing would run before or after it")
        _ = machine.release(first.ticket)
        _ = machine.release(second.ticket)
        #expect(machine.reserveIfFree(["/a"], after: 999) != nil, "free: a writer that already let go is no obstacle")
    }
}
