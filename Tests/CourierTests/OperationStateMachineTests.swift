import Foundation
import Testing
@testable import Courier

/// Tier 1: the operation lifecycle of the brief's tutorial, event by event.
@Suite("OperationStateMachine")
struct OperationStateMachineTests {
    private let response = NetworkResponse(status: .ok, url: URL(string: "http://a/")!)

    @Test func happyPath() {
        var machine = OperationStateMachine()
        #expect(machine.state == .ready)
        #expect(!machine.acceptsProgress)
        #expect(machine.enqueue(failingWith: nil) == .submit)
        #expect(machine.state == .waiting)
        #expect(!machine.acceptsProgress)
        let started = machine.start()
        let startedAgain = machine.start()
        #expect(started)
        #expect(!startedAgain, "starting twice changes nothing")
        #expect(machine.acceptsProgress)
        let finished = machine.finish(.success(response))
        #expect(finished)
        #expect(machine.state == .finished)
        let finishedAgain = machine.finish(.failure(NetworkError(.timeout)))
        #expect(!finishedAgain, "exactly one outcome")
        #expect((try? machine.outcome?.get())?.statusCode == 200)
    }

    @Test func cancelledBeforeEnqueueFinishesWithoutWork() {
        var machine = OperationStateMachine()
        #expect(machine.cancel(url: "u") == .finished)
        #expect(machine.state == .finished)
        #expect(machine.isCancellationRequested)
        #expect(machine.enqueue(failingWith: nil) == .none, "a finished operation never reaches the queue")
        if case .failure(let error)? = machine.outcome { #expect(error.code == .cancelled) } else { Issue.record("no cancellation outcome") }
    }

    @Test func cancellingAQueuedOperationWaitsForTheQueue() {
        for started in [false, true] {
            var machine = OperationStateMachine()
            _ = machine.enqueue(failingWith: nil)
            if started { _ = machine.start() }
            #expect(machine.cancel(url: nil) == .removeFromQueue)
            #expect(machine.state != .finished, "never marked finished early while in a queue")
            #expect(machine.isCancellationRequested)
            let finished = machine.finish(.failure(.cancelled(url: nil)))
            #expect(finished)
            #expect(machine.cancel(url: nil) == .none)
        }
    }

    @Test func badInputFailsAtEnqueue() {
        var machine = OperationStateMachine()
        #expect(machine.enqueue(failingWith: NetworkError(.invalidURL)) == .finished)
        if case .failure(let error)? = machine.outcome { #expect(error.code == .invalidURL) } else { Issue.record("no failure") }
    }

    @Test func enqueueingTwiceIsANoOp() {
        var machine = OperationStateMachine()
        #expect(machine.enqueue(failingWith: nil) == .submit)
        #expect(machine.enqueue(failingWith: nil) == .none)
    }
}
