import Dispatch
import NIOConcurrencyHelpers
import Testing
@testable import CourierImages

/// Tier 1: the image pipeline's state machines, without I/O.
@Suite("Image pipeline state machines")
struct PipelineStateMachineTests {
    @Test func requestsForOneImageShareOneTaskAtTheHighestPriority() {
        var machine = ImageTaskStateMachine<String>()
        #expect(machine.subscribe(1, to: "a", priority: .veryLow) == .start(1, .veryLow), "a prefetch starts the task")
        #expect(machine.subscribe(2, to: "a", priority: .high) == .joined(1, raisedTo: .high), "a visible request raises it")
        #expect(machine.subscribe(3, to: "a", priority: .normal) == .joined(1, raisedTo: nil))
        #expect(machine.subscribe(4, to: "b", priority: .normal) == .start(2, .normal), "another key, another task")
        #expect(machine.unsubscribe(2) == .lowerPriority(1, .normal), "the high one left")
        #expect(machine.finish(1) == [1, 3], "in the order they came")
        #expect(machine.taskCount == 1)
        #expect(machine.unsubscribe(1) == .none, "already delivered")
    }

    @Test func theLastSubscriberLeavingCancelsAndANewRequestStartsAfresh() {
        var machine = ImageTaskStateMachine<String>()
        _ = machine.subscribe(1, to: "a", priority: .normal)
        _ = machine.subscribe(2, to: "a", priority: .normal)
        #expect(machine.unsubscribe(1) == .none)
        #expect(machine.unsubscribe(2) == .cancel(1))
        #expect(machine.subscribe(3, to: "a", priority: .normal) == .start(2, .normal), "never joins the cancelled task")
        #expect(machine.finish(1) == [], "the cancelled task's late finish reaches nobody")
        #expect(machine.finish(2) == [3])
    }

    @Test func decodesWaitForASlotInOrderAndCancelledWaitersLeaveTheLine() {
        var limiter = DecodeLimiterStateMachine(limit: 2)
        #expect(limiter.acquire(1) == .run)
        #expect(limiter.acquire(2) == .run)
        #expect(limiter.acquire(3) == .wait)
        #expect(limiter.acquire(4) == .wait)
        #expect(limiter.acquire(5) == .wait)
        let removed = limiter.cancel(4, hasAsked: true)
        #expect(removed)
        #expect(limiter.release() == 3)
        #expect(limiter.release() == 5)
        #expect(limiter.release() == nil)
        #expect(limiter.running == 1)
        let wasWaiting = limiter.cancel(6, hasAsked: false)
        #expect(!wasWaiting, "not waiting yet")
        #expect(limiter.acquire(6) == .cancelled, "cancelled before it asked: refused, holds no slot")
        #expect(limiter.release() == nil && limiter.running == 0)
    }

    static func image(_ side: Int) -> CourierImage {
        try! CourierImage(width: side, height: side, pixelFormat: .gray8, pixels: [UInt8](repeating: 7, count: side * side))
    }

    @Test func theMemoryCacheEvictsLeastRecentlyUsedByCountAndBytes() {
        var cache = ImageMemoryCacheState<String>(countLimit: 3, byteLimit: 1000)
        cache.insert(Self.image(10), for: "a")   // 100 bytes each
        cache.insert(Self.image(10), for: "b")
        cache.insert(Self.image(10), for: "c")
        #expect(cache.image(for: "a") != nil, "touches a")
        cache.insert(Self.image(10), for: "d")
        #expect(cache.count == 3)
        #expect(cache.image(for: "b") == nil, "b was the least recently used")
        #expect(cache.image(for: "a") != nil && cache.image(for: "c") != nil && cache.image(for: "d") != nil)
        cache.insert(Self.image(30), for: "big")   // 900 bytes: only it and one more... the rest goes
        #expect(cache.totalBytes <= 1000)
        #expect(cache.image(for: "big") != nil)
        cache.insert(Self.image(40), for: "huge")  // 1600 bytes: larger than the whole cache, not kept
        #expect(cache.image(for: "huge") == nil && cache.image(for: "big") != nil)
        cache.trim(toBytes: 0)
        #expect(cache.count == 0 && cache.totalBytes == 0)
    }
}

/// Tier 2: the decode queue over real threads: its limit, its order, cancellation while waiting.
@Suite("Image decode queue")
struct ImageDecodeQueueTests {
    @Test func atMostTheLimitRunAndWaitersGoHighestPriorityFirst() async throws {
        let queue = ImageDecodeQueue(limit: 1)
        let gate = DispatchSemaphore(value: 0)
        final class Order: Sendable { let names = NIOLockedValueBox<[String]>([]) }
        let order = Order()
        let blocker = Task { try await queue.run { () throws(NetworkError) in gate.wait() } }
        try await Task.sleep(for: .milliseconds(50))
        let low = Task { try await queue.run(priority: .veryLow) { () throws(NetworkError) in order.names.withLockedValue { $0.append("low") } } }
        try await Task.sleep(for: .milliseconds(50))
        let high = Task { try await queue.run(priority: .high) { () throws(NetworkError) in order.names.withLockedValue { $0.append("high") } } }
        let cancelled = Task { try await queue.run(priority: .veryHigh) { () throws(NetworkError) in order.names.withLockedValue { $0.append("cancelled") } } }
        try await Task.sleep(for: .milliseconds(50))
        cancelled.cancel()
        let error = await #expect(throws: NetworkError.self) { try await cancelled.value }
        #expect(error?.code == .cancelled, "a waiter cancelled leaves the line without running")
        gate.signal()
        try await blocker.value
        try await low.value
        try await high.value
        #expect(order.names.withLockedValue { $0 } == ["high", "low"])
        #expect(queue.completedWork.load(ordering: .relaxed) == 3)
    }
}
