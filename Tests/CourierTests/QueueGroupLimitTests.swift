import Testing
@testable import Courier

/// Tier 1: per-engine limits (set from reachability) in the queue's state machine.
@Suite("QueueStateMachine group limits")
struct QueueGroupLimitTests {
    typealias Machine = QueueStateMachine

    private func op(_ n: Int) -> OperationID { OperationID(rawValue: 2_000_000 + UInt64(n)) }

    private func started(_ action: Machine.Action) -> [OperationID] { action.start.flatMap(\.subscribers) }

    @Test func theNarrowestLimitOfEnginesWithWaitingWorkWins() {
        var machine = Machine(maximumConcurrent: 6)
        _ = machine.setLimit(6, for: 1)   // Wi-Fi engine
        _ = machine.setLimit(2, for: 2)   // cellular engine
        var running: [OperationID] = []
        // Only the Wi-Fi engine has work: 6 run.
        for n in 0..<8 { running += started(machine.enqueue(op(n), priority: .normal, key: nil, group: 1)) }
        #expect(running.count == 6)
        #expect(machine.effectiveLimit == 6)
        // The cellular engine's work waits: the whole queue narrows to 2 (running work is not stopped).
        #expect(started(machine.enqueue(op(100), priority: .normal, key: nil, group: 2)).isEmpty)
        #expect(machine.effectiveLimit == 2)
        var flight: UInt64 = 0
        while machine.occupiedSlots > 2 {
            let action = machine.flightFinished(.init(rawValue: flight))
            flight += 1
            #expect(action.start.isEmpty, "nothing starts while more than 2 run")
        }
        // Now one slot frees at a time and the queue keeps to 2.
        let next = machine.flightFinished(.init(rawValue: flight))
        #expect(started(next).count == 1)
        #expect(machine.occupiedSlots == 2)
    }

    @Test func aPausedEngineParksItsWorkInOrderAndOthersGoOn() {
        var machine = Machine(maximumConcurrent: 6)
        _ = machine.setLimit(0, for: 7)
        var started7: [OperationID] = []
        for n in 0..<5 { started7 += started(machine.enqueue(op(n), priority: .normal, key: nil, group: 7)) }
        #expect(started7.isEmpty, "a paused engine sends nothing")
        #expect(machine.waitingFlights(in: 7) == 5)
        // Another engine is not held back by the paused one.
        #expect(started(machine.enqueue(op(50), priority: .normal, key: nil, group: 8)) == [op(50)])
        // A higher-priority operation of the paused engine still waits.
        #expect(started(machine.enqueue(op(5), priority: .veryHigh, key: nil, group: 7)).isEmpty)
        // Opening it (say, cellular became Wi-Fi) starts its work by priority, then first come first served.
        let opened = machine.setLimit(6, for: 7)
        #expect(started(opened) == [op(5), op(0), op(1), op(2), op(3)])
        #expect(machine.occupiedSlots == 6)
        #expect(machine.waitingFlights(in: 7) == 1)
    }

    @Test func cancellingParkedWorkLeavesNoTraceAndRemovingALimitRestoresTheQueueWidth() {
        var machine = Machine(maximumConcurrent: 3)
        _ = machine.setLimit(0, for: 1)
        for n in 0..<100 { _ = machine.enqueue(op(n), priority: .normal, key: nil, group: 1) }
        for n in 0..<100 where n != 42 { _ = machine.cancel(op(n)) }
        #expect(machine.waitingFlights(in: 1) == 1)
        #expect(machine.operationCount == 1)
        #expect(started(machine.setLimit(nil, for: 1)) == [op(42)])
        #expect(machine.effectiveLimit == 3)
        #expect(machine.groupLimits.isEmpty)
    }

    @Test func aLimitAboveTheQueuesOwnNeverWidensIt() {
        var machine = Machine(maximumConcurrent: 2)
        _ = machine.setLimit(6, for: 1)
        var running: [OperationID] = []
        for n in 0..<4 { running += started(machine.enqueue(op(n), priority: .normal, key: nil, group: 1)) }
        #expect(running.count == 2)
    }
}
