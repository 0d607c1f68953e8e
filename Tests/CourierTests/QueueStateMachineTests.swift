import Testing
import Foundation
@testable import Courier

/// Tier 1: the queue's scheduling rules, event by event, with no sockets and no clock.
@Suite("QueueStateMachine")
struct QueueStateMachineTests {
    typealias Machine = QueueStateMachine

    private func op(_ n: Int) -> OperationID { OperationID(rawValue: 1_000_000 + UInt64(n)) }

    private func key(_ path: String) -> CoalescingKey {
        CoalescingKey(
            request: PreparedRequest(
                method: .get, url: URL(string: "http://h\(path)")!, headers: [:], body: nil, options: TransportOptions(),
                redirects: .follow(), maximumBodySize: 1 << 20, totalTimeout: nil, logger: .courierSilent),
            uniqueIdentifier: path)
    }

    private func started(_ action: Machine.Action) -> [[OperationID]] { action.start.map(\.subscribers) }

    @Test func startsUpToTheLimitThenOneMorePerFinishedFlight() {
        var machine = Machine(maximumConcurrent: 2)
        #expect(started(machine.enqueue(op(1), priority: .normal, key: nil)) == [[op(1)]])
        #expect(started(machine.enqueue(op(2), priority: .normal, key: nil)) == [[op(2)]])
        let third = machine.enqueue(op(3), priority: .normal, key: nil)
        #expect(third.start.isEmpty)
        #expect(third.activity == 3)
        let fourth = machine.enqueue(op(4), priority: .normal, key: nil)
        #expect(fourth.start.isEmpty)
        #expect(machine.occupiedSlots == 2)
        // Finishing the first flight delivers to op 1 and starts op 3 (FIFO).
        let firstFlight = QueueStateMachine.FlightID(rawValue: 0)
        let done = machine.flightFinished(firstFlight)
        #expect(done.deliver == [op(1)])
        #expect(started(done) == [[op(3)]])
        #expect(done.activity == 3)
    }

    @Test func aLiveStreamGivesItsSlotBackOnceAndItsEndOrCancelFreesNoOther() {
        var machine = Machine(maximumConcurrent: 1)
        #expect(started(machine.enqueue(op(1), priority: .normal, key: nil)) == [[op(1)]])
        #expect(machine.enqueue(op(2), priority: .normal, key: nil).start.isEmpty)
        let stream = QueueStateMachine.FlightID(rawValue: 0)
        // The stream's answer streams: the waiting GET starts in its slot.
        #expect(started(machine.releaseSlot(stream)) == [[op(2)]])
        #expect(machine.occupiedSlots == 1)
        #expect(machine.releaseSlot(stream).start.isEmpty, "released once")
        #expect(machine.occupiedSlots == 1)
        #expect(machine.enqueue(op(3), priority: .normal, key: nil).start.isEmpty, "the GET holds the only slot")
        // The stream ends: no slot is freed twice, op 3 still waits for the GET.
        let ended = machine.flightFinished(stream)
        #expect(ended.deliver == [op(1)])
        #expect(ended.start.isEmpty)
        #expect(machine.occupiedSlots == 1)
        // The GET ends: op 3 starts.
        #expect(started(machine.flightFinished(.init(rawValue: 1))) == [[op(3)]])
        // A released stream that is cancelled, then stops, frees nothing either.
        #expect(started(machine.releaseSlot(.init(rawValue: 2))).isEmpty)
        #expect(machine.occupiedSlots == 0)
        #expect(machine.cancel(op(3)).cancelFlights == [.init(rawValue: 2)])
        _ = machine.flightFinished(.init(rawValue: 2))
        #expect(machine.occupiedSlots == 0)
        // A waiting flight has no slot to give.
        var full = Machine(maximumConcurrent: 0)
        _ = full.enqueue(op(9), priority: .normal, key: nil)
        #expect(full.releaseSlot(.init(rawValue: 0)).start.isEmpty)
        #expect(full.occupiedSlots == 0)
    }

    @Test func cancelIfNotStartedLeavesARunningFlightAlone() {
        var machine = Machine(maximumConcurrent: 1)
        _ = machine.enqueue(op(1), priority: .normal, key: nil)          // running
        _ = machine.enqueue(op(2), priority: .normal, key: nil)          // waiting for a slot
        _ = machine.enqueue(op(3), priority: .normal, key: nil, dependencies: [op(9)])   // blocked
        #expect(machine.cancelIfNotStarted(op(1)).cancelled.isEmpty, "its request is on the wire")
        #expect(machine.cancelIfNotStarted(op(2)).cancelled == [op(2)])
        #expect(machine.cancelIfNotStarted(op(3)).cancelled == [op(3)])
        #expect(machine.isBlocked(op(3)) == false)
        #expect(machine.operationCount == 1)
    }

    @Test func distinctRunnersNeverShareAFlight() {
        var machine = Machine(maximumConcurrent: 6)
        let request = PreparedRequest(
            method: .get, url: URL(string: "http://h/x")!, headers: [:], body: nil, options: TransportOptions(),
            redirects: .follow(), maximumBodySize: 1 << 20, totalTimeout: nil, logger: .courierSilent)
        let a = CoalescingKey(request: request, uniqueIdentifier: "x", runner: .init(group: 1))
        let b = CoalescingKey(request: request, uniqueIdentifier: "x", runner: .init(group: 2))
        let c = CoalescingKey(request: request, uniqueIdentifier: "x", runner: .init(group: 1))
        #expect(started(machine.enqueue(op(1), priority: .normal, key: a, group: 1)) == [[op(1)]])
        #expect(started(machine.enqueue(op(2), priority: .normal, key: b, group: 2)) == [[op(2)]], "another group: a flight of its own")
        #expect(machine.enqueue(op(3), priority: .normal, key: c, group: 1).joinedRunning == [op(3)])
    }

    @Test func withATotalTimeoutAnOperationJoinsOnlyAFlightNotYetStarted() {
        func timed(_ total: Duration?) -> CoalescingKey {
            CoalescingKey(
                request: PreparedRequest(
                    method: .get, url: URL(string: "http://h/x")!, headers: [:], body: nil, options: TransportOptions(),
                    redirects: .follow(), maximumBodySize: 1 << 20, totalTimeout: total, logger: .courierSilent),
                uniqueIdentifier: "x")
        }
        var machine = Machine(maximumConcurrent: 1)
        #expect(started(machine.enqueue(op(1), priority: .normal, key: timed(.seconds(3)))) == [[op(1)]])
        // The flight runs (its deadline counts): the same request with a total timeout waits for a flight of its own.
        let second = machine.enqueue(op(2), priority: .normal, key: timed(.seconds(3)))
        #expect(second.joinedRunning.isEmpty && second.start.isEmpty)
        // ... which the next one joins, since it has not started.
        let third = machine.enqueue(op(3), priority: .normal, key: timed(.seconds(3)))
        #expect(third.joinedRunning.isEmpty)
        let done = machine.flightFinished(QueueStateMachine.FlightID(rawValue: 0))
        #expect(done.deliver == [op(1)])
        #expect(started(done) == [[op(2), op(3)]])
        // Without a total timeout a running flight is joined.
        var untimed = Machine(maximumConcurrent: 1)
        _ = untimed.enqueue(op(4), priority: .normal, key: timed(nil))
        #expect(untimed.enqueue(op(5), priority: .normal, key: timed(nil)).joinedRunning == [op(5)])
    }

    @Test func higherPriorityStartsFirstAndFIFOWithinAPriority() {
        var machine = Machine(maximumConcurrent: 1, isSuspended: true)
        _ = machine.enqueue(op(1), priority: .low, key: nil)
        _ = machine.enqueue(op(2), priority: .high, key: nil)
        _ = machine.enqueue(op(3), priority: .low, key: nil)
        _ = machine.enqueue(op(4), priority: .high, key: nil)
        _ = machine.enqueue(op(5), priority: .veryHigh, key: nil)
        var order: [OperationID] = []
        var action = machine.resume()
        while let start = action.start.first {
            order += start.subscribers
            action = machine.flightFinished(start.flight)
        }
        #expect(order == [op(5), op(2), op(4), op(1), op(3)])
        #expect(machine.operationCount == 0)
    }

    @Test func suspendedQueueAcceptsButStartsNothing() {
        var machine = Machine(maximumConcurrent: 6, isSuspended: true)
        for n in 1...10 { #expect(machine.enqueue(op(n), priority: .normal, key: nil).start.isEmpty) }
        #expect(machine.operationCount == 10)
        #expect(machine.resume().start.count == 6)
    }

    @Test func priorityChangeWhileWaitingReordersAndKeepsFIFO() {
        var machine = Machine(maximumConcurrent: 1, isSuspended: true)
        _ = machine.enqueue(op(1), priority: .normal, key: nil)
        _ = machine.enqueue(op(2), priority: .normal, key: nil)
        _ = machine.enqueue(op(3), priority: .normal, key: nil)
        _ = machine.setPriority(.high, for: op(3))
        _ = machine.setPriority(.high, for: op(2))
        _ = machine.setPriority(.normal, for: op(2))   // back down: original place within normal
        var order: [OperationID] = []
        var action = machine.resume()
        while let start = action.start.first {
            order += start.subscribers
            action = machine.flightFinished(start.flight)
        }
        #expect(order == [op(3), op(1), op(2)])
    }

    @Test func loweringTheLimitKeepsRunningWorkAndRaisingStartsMore() {
        var machine = Machine(maximumConcurrent: 3)
        for n in 1...8 { _ = machine.enqueue(op(n), priority: .normal, key: nil) }
        #expect(machine.occupiedSlots == 3)
        #expect(machine.setMaximumConcurrent(1).start.isEmpty)
        #expect(machine.occupiedSlots == 3)
        // Two finishes free nothing usable: still over the new limit.
        #expect(machine.flightFinished(.init(rawValue: 0)).start.isEmpty)
        #expect(machine.flightFinished(.init(rawValue: 1)).start.isEmpty)
        #expect(started(machine.flightFinished(.init(rawValue: 2))) == [[op(4)]])
        #expect(machine.setMaximumConcurrent(4).start.count == 3)
        #expect(machine.occupiedSlots == 4)
    }

    @Test func cancellingAWaitingOperationRemovesItWithoutTouchingTheNetwork() {
        var machine = Machine(maximumConcurrent: 1)
        _ = machine.enqueue(op(1), priority: .normal, key: nil)
        _ = machine.enqueue(op(2), priority: .normal, key: nil)
        let cancel = machine.cancel(op(2))
        #expect(cancel.cancelled == [op(2)])
        #expect(cancel.cancelFlights.isEmpty)
        #expect(cancel.activity == 1)
        #expect(machine.flightFinished(.init(rawValue: 0)).start.isEmpty)
        #expect(machine.operationCount == 0)
        let again = machine.cancel(op(2))
        #expect(again == Machine.Action(), "a second cancel is a no-op")
    }

    @Test func cancellingARunningOperationCancelsItsFlightButKeepsTheSlotUntilItStops() {
        var machine = Machine(maximumConcurrent: 1)
        _ = machine.enqueue(op(1), priority: .normal, key: nil)
        _ = machine.enqueue(op(2), priority: .normal, key: nil)
        let cancel = machine.cancel(op(1))
        #expect(cancel.cancelled == [op(1)])
        #expect(cancel.cancelFlights == [.init(rawValue: 0)])
        #expect(cancel.start.isEmpty, "the cancelled flight still holds its slot")
        let stopped = machine.flightFinished(.init(rawValue: 0))
        #expect(stopped.deliver.isEmpty)
        #expect(started(stopped) == [[op(2)]])
    }

    @Test func identicalKeysShareOneFlightAndEveryoneHearsTheResult() {
        var machine = Machine(maximumConcurrent: 6)
        let first = machine.enqueue(op(1), priority: .normal, key: key("/a"))
        #expect(started(first) == [[op(1)]])
        let second = machine.enqueue(op(2), priority: .normal, key: key("/a"))
        #expect(second.start.isEmpty)
        #expect(second.joinedRunning == [op(2)])
        _ = machine.enqueue(op(3), priority: .normal, key: key("/b"))
        #expect(machine.occupiedSlots == 2)
        let done = machine.flightFinished(.init(rawValue: 0))
        #expect(done.deliver == [op(1), op(2)])
        // After it finished, the same key makes a new flight.
        #expect(started(machine.enqueue(op(4), priority: .normal, key: key("/a"))) == [[op(4)]])
    }

    @Test func aCoalescedFlightRunsAtItsHighestSubscribersPriority() {
        var machine = Machine(maximumConcurrent: 1, isSuspended: true)
        _ = machine.enqueue(op(1), priority: .normal, key: key("/other"))
        _ = machine.enqueue(op(2), priority: .low, key: key("/a"))
        _ = machine.enqueue(op(3), priority: .veryHigh, key: key("/a"))
        #expect(started(machine.resume()) == [[op(2), op(3)]])
    }

    @Test func aSubscriberLeavingLeavesTheOthersAndTheLastOneOutCancels() {
        var machine = Machine(maximumConcurrent: 6)
        _ = machine.enqueue(op(1), priority: .normal, key: key("/a"))
        _ = machine.enqueue(op(2), priority: .normal, key: key("/a"))
        _ = machine.enqueue(op(3), priority: .normal, key: key("/a"))
        #expect(machine.cancel(op(1)).cancelFlights.isEmpty)
        #expect(machine.cancel(op(3)).cancelFlights.isEmpty)
        #expect(machine.subscribers(of: .init(rawValue: 0)) == [op(2)])
        #expect(machine.cancel(op(2)).cancelFlights == [.init(rawValue: 0)])
        // A new identical operation does not join the doomed flight.
        let fresh = machine.enqueue(op(4), priority: .normal, key: key("/a"))
        #expect(started(fresh) == [[op(4)]])
        #expect(machine.flightFinished(.init(rawValue: 0)).deliver.isEmpty)
    }

    @Test func waitingCoalescedFlightDropsToItsRemainingSubscribersPriority() {
        var machine = Machine(maximumConcurrent: 1, isSuspended: true)
        _ = machine.enqueue(op(1), priority: .normal, key: key("/n"))
        _ = machine.enqueue(op(2), priority: .low, key: key("/a"))
        _ = machine.enqueue(op(3), priority: .veryHigh, key: key("/a"))
        _ = machine.cancel(op(3))
        #expect(started(machine.resume()) == [[op(1)]])
    }

    @Test func dependenciesHoldAnOperationUntilTheyFinish() {
        var machine = Machine(maximumConcurrent: 6)
        let blocked = machine.enqueue(op(2), priority: .normal, key: nil, dependencies: [op(1), op(9)])
        #expect(blocked.start.isEmpty)
        #expect(blocked.activity == 1)
        #expect(machine.dependencyFinished(op(1), for: op(2)).start.isEmpty)
        #expect(started(machine.dependencyFinished(op(9), for: op(2))) == [[op(2)]])
        let late = machine.dependencyFinished(op(9), for: op(2))
        #expect(late == Machine.Action(), "late duplicates are ignored")
    }

    @Test func cancellingABlockedOperationNeedsNoFlight() {
        var machine = Machine(maximumConcurrent: 6)
        _ = machine.enqueue(op(2), priority: .normal, key: nil, dependencies: [op(1)])
        let cancel = machine.cancel(op(2))
        #expect(cancel.cancelled == [op(2)])
        #expect(cancel.cancelFlights.isEmpty)
        #expect(machine.dependencyFinished(op(1), for: op(2)).start.isEmpty)
        #expect(machine.operationCount == 0)
    }

    @Test func zeroWidthPausesEverything() {
        var machine = Machine(maximumConcurrent: 0)
        #expect(machine.enqueue(op(1), priority: .veryHigh, key: nil).start.isEmpty)
        #expect(machine.setMaximumConcurrent(1).start.count == 1)
    }

    @Test func manyCancelledWaitingFlightsDoNotAccumulate() {
        var machine = Machine(maximumConcurrent: 1, isSuspended: true)
        for n in 1...10_000 { _ = machine.enqueue(op(n), priority: .normal, key: nil) }
        for n in 1...9_999 { _ = machine.cancel(op(n)) }
        #expect(machine.operationCount == 1)
        #expect(started(machine.resume()) == [[op(10_000)]])
    }
}
