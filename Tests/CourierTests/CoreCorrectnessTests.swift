import Foundation
import NIOConcurrencyHelpers
import Testing
@testable import Courier

/// Tier 2 (issue 18 items 1, 2, 4, 7, 8, 9, 10, C): engines that share a queue, dependencies while
/// offline, credentials and the cache, cancellation that sees every waiting operation.
@Suite("Core correctness")
struct CoreCorrectnessTests {
    // MARK: 1. Coalescing follows the engine

    @Test func aParkedEnginesFlightNeverHoldsAnotherEnginesIdenticalGet() async throws {
        let transport = FakeTransport()
        let queue = NetworkQueue()
        let cellular = ManualReachability(.reachable(via: .cellular))
        let wifiOnly = NetworkEngine.fake(transport, queue: queue) { $0.reachability = cellular; $0.wifiOnlyMode = true }
        let wifi = NetworkEngine.fake(transport, queue: queue) { $0.reachability = ManualReachability(.reachable(via: .wifi)) }
        let parked = wifiOnly.operation(path: "img/1")
        wifiOnly.enqueue(parked)
        #expect(await eventually { parked.state == .waiting })
        let other = wifi.operation(path: "img/1")
        let response = try await wifi.send(other)
        #expect(response.statusCode == 200, "answered at once, not parked behind the wifi-only engine")
        #expect(parked.state == .waiting, "still parked: nothing went out over cellular for it")
        #expect(transport.requestCount == 1)
        cellular.setStatus(.reachable(via: .wifi))
        #expect(try await parked.response().statusCode == 200)
        #expect(transport.requestCount == 2)
    }

    @Test func aParkedEnginesOperationNeverJoinsAnotherEnginesRunningFlight() async throws {
        let gate = NIOLockedValueBox(false)
        let transport = FakeTransport { _ in
            while !gate.withLockedValue({ $0 }) { try await Task.sleep(for: .milliseconds(2)) }
            return FakeTransport.reply()
        }
        let queue = NetworkQueue()
        let cellular = ManualReachability(.reachable(via: .cellular))
        let wifi = NetworkEngine.fake(transport, queue: queue) { $0.reachability = ManualReachability(.reachable(via: .wifi)) }
        let wifiOnly = NetworkEngine.fake(transport, queue: queue) { $0.reachability = cellular; $0.wifiOnlyMode = true }
        let running = wifi.operation(path: "img/1")
        wifi.enqueue(running)
        #expect(await eventually { transport.requestCount == 1 })
        let parked = wifiOnly.operation(path: "img/1")
        wifiOnly.enqueue(parked)
        gate.withLockedValue { $0 = true }
        #expect(try await running.response().statusCode == 200)
        try await Task.sleep(for: .milliseconds(50))
        #expect(parked.state == .waiting, "it did not go out over cellular with the other engine's flight")
        cellular.setStatus(.reachable(via: .wifi))
        #expect(try await parked.response().statusCode == 200)
        #expect(transport.requestCount == 2)
    }

    @Test func enginesOfOneHostShareOneSystemMonitorSoTheirGroupHasOneSource() {
        let queue = NetworkQueue()
        let a = NetworkEngine(host: "api.example.com", queue: queue)
        let b = NetworkEngine(host: "API.example.com", queue: queue)
        let c = NetworkEngine(host: "cdn.example.com", queue: queue)
        #expect(a.context.connectivity.reachability === b.context.connectivity.reachability)
        #expect(a.context.connectivity.group == b.context.connectivity.group)
        #expect(a.context.connectivity.group != c.context.connectivity.group)
        let wifiOnly = NetworkEngine(host: "api.example.com", configuration: .init { $0.wifiOnlyMode = true }, queue: queue)
        #expect(wifiOnly.context.connectivity.group != a.context.connectivity.group, "other limits: another group")
    }

    @Test func operationsOfOneEngineStillShareAFlight() async throws {
        let transport = FakeTransport { _ in
            try await Task.sleep(for: .milliseconds(50))
            return FakeTransport.reply()
        }
        let engine = NetworkEngine.fake(transport)
        let ops = (0..<5).map { _ in engine.operation(path: "img/1") }
        for op in ops { engine.enqueue(op) }
        for op in ops { #expect(try await op.response().statusCode == 200) }
        #expect(transport.requestCount == 1)
    }

    @Test func enginesWithTheirOwnTransportOrReachabilityNeverShareAFlight() async throws {
        let slow: FakeTransport.Handler = { _ in
            try await Task.sleep(for: .milliseconds(50))
            return FakeTransport.reply()
        }
        let (first, second) = (FakeTransport(slow), FakeTransport(slow))
        let queue = NetworkQueue()
        let shared = ManualReachability()
        let a = NetworkEngine.fake(first, queue: queue) { $0.reachability = shared }
        let b = NetworkEngine.fake(second, queue: queue) { $0.reachability = shared }
        let c = NetworkEngine.fake(first, queue: queue) { $0.reachability = ManualReachability() }
        let d = NetworkEngine.fake(first, queue: queue) { $0.reachability = shared; $0.credentialProvider = { _ in [.authorization: "Bearer d"] } }
        let e = NetworkEngine.fake(first, queue: queue) { $0.reachability = shared }
        let ops = [a, b, c, d, e].map { $0.operation(path: "img/1") }
        for (engine, op) in zip([a, b, c, d, e], ops) { engine.enqueue(op) }
        for op in ops { #expect(try await op.response().statusCode == 200) }
        #expect(second.requestCount == 1, "b's own transport (a proxy, a client certificate) serves b")
        // a and e share (same transport, reachability, limits, no provider); c and d each run alone.
        #expect(first.requestCount == 3)
        #expect(first.requests.filter { $0.headers[.authorization] == "Bearer d" }.count == 1)
    }

    // MARK: 2. Dependencies while waiting for connectivity

    @Test func heldOperationsComeBackWithTheirDependencies() async throws {
        let transport = FakeTransport { request in
            if request.url.path.hasSuffix("login") { try await Task.sleep(for: .milliseconds(150)) }
            return FakeTransport.reply()
        }
        let reachability = ManualReachability(.unreachable)
        let engine = NetworkEngine.fake(transport) { $0.reachability = reachability }
        let login = engine.operation(path: "login", method: .post)
        let fetch = engine.operation(path: "me")
        login.connectivityTimeout = .seconds(30)
        fetch.connectivityTimeout = .seconds(30)
        fetch.addDependency(login)
        let loginFinished = Recorder<Bool>()
        fetch.onCompletion { _ in loginFinished.append(login.isFinished) }
        engine.enqueue(fetch)
        engine.enqueue(login)
        try await Task.sleep(for: .milliseconds(20))
        reachability.setStatus(.reachable(via: .wifi))
        #expect(try await fetch.response().statusCode == 200)
        await drain(engine.configuration.callbackQueue)
        #expect(loginFinished.all == [true], "fetch ran only after login finished")
        #expect(transport.requests.map(\.url.lastPathComponent) == ["login", "me"])
    }

    @Test func anOperationBlockedOnADependencyIsNotFrozenAheadOfIt() async throws {
        let directory = OutboxKeepingTests.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let gate = NIOLockedValueBox(false)
        let transport = FakeTransport { _ in
            while !gate.withLockedValue({ $0 }) { try await Task.sleep(for: .milliseconds(2)) }
            return FakeTransport.reply()
        }
        let reachability = ManualReachability(.reachable(via: .wifi))
        let engine = NetworkEngine.fake(transport) { $0.reachability = reachability; $0.dataDirectory = directory }
        let first = engine.operation(path: "first", method: .post)
        let second = engine.operation(path: "second", method: .post)
        second.isFreezable = true
        second.connectivityTimeout = .seconds(30)
        second.addDependency(first)
        engine.enqueue(first)
        engine.enqueue(second)
        #expect(await eventually { transport.requestCount == 1 })
        reachability.setStatus(.unreachable)
        try await Task.sleep(for: .milliseconds(30))
        #expect(second.state == .waiting, "blocked on its dependency, it stays in the queue")
        #expect(try #require(engine.outbox).entries.isEmpty)
        gate.withLockedValue { $0 = true }
        _ = try? await first.response()
        // Ready now, and the host is still away: it freezes.
        #expect(await eventually { second.state == .frozen })
    }

    // MARK: 7. Cancellation sees held operations

    @Test func cancellationByPredicateFindsOperationsHeldForConnectivity() async throws {
        let transport = FakeTransport()
        let reachability = ManualReachability(.unreachable)
        let engine = NetworkEngine.fake(transport) { $0.reachability = reachability }
        let held = engine.operation(path: "thumbnails/1")
        held.connectivityTimeout = .seconds(30)
        let other = engine.operation(path: "feed")
        other.connectivityTimeout = .seconds(30)
        engine.enqueue(held)
        engine.enqueue(other)
        #expect(await eventually { held.state == .waiting && other.state == .waiting })
        engine.queue.cancelOperations(containing: "/thumbnails/")
        #expect(await failure(of: held)?.code == .cancelled)
        reachability.setStatus(.reachable(via: .wifi))
        #expect(try await other.response().statusCode == 200)
        #expect(transport.requests.map(\.url.lastPathComponent) == ["feed"], "the cancelled one was never sent")

        let late = engine.operation(path: "late")
        reachability.setStatus(.unreachable)
        late.connectivityTimeout = .seconds(30)
        engine.enqueue(late)
        engine.cancelAllOperations()
        #expect(await failure(of: late)?.code == .cancelled)
        engine.queue.cancelAll()
    }

    @Test func aCancelledHeldOperationIsNotKeptAliveByItsTimer() async throws {
        let engine = NetworkEngine.fake(FakeTransport()) { $0.reachability = ManualReachability(.unreachable) }
        weak var weakOperation: NetworkOperation?
        do {
            let op = engine.operation(path: "x")
            op.connectivityTimeout = .seconds(3600)
            engine.enqueue(op)
            #expect(await eventually { op.state == .waiting })
            op.cancel()
            _ = await failure(of: op)
            weakOperation = op
        }
        #expect(await eventually { weakOperation == nil }, "released at once, not after its hour-long timeout")
    }

    // MARK: 8. Reachability applied in order

    @Test func flappingReachabilityEndsWithTheLiveStatus() async throws {
        let transport = FakeTransport()
        let reachability = ManualReachability(.reachable(via: .wifi))
        let queue = NetworkQueue()
        let engine = NetworkEngine.fake(transport, queue: queue) { $0.reachability = reachability }
        // Status changes from one thread while enqueues apply the live status from others.
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for n in 0..<400 { reachability.setStatus(n.isMultiple(of: 2) ? .unreachable : .reachable(via: .wifi)) }
                reachability.setStatus(.reachable(via: .wifi))
            }
            for _ in 0..<4 {
                group.addTask { for _ in 0..<50 { engine.context.connectivity.apply() } }
            }
        }
        #expect(await eventually { queue.effectiveMaximumConcurrentOperations == 6 })
        let response = try await engine.send(engine.operation(path: "after"))
        #expect(response.statusCode == 200, "the width is not stuck at 0")
    }

    @Test func aStatusBufferedBeforeTheLiveOneNeverFailsWorkWhileReachable() async throws {
        for _ in 0..<10 {
            let transport = FakeTransport()
            let reachability = ManualReachability(.reachable(via: .wifi))
            let queue = NetworkQueue(isSuspended: true)   // the operation waits in the queue meanwhile
            let engine = NetworkEngine.fake(transport, queue: queue) { $0.reachability = reachability }
            await drain(engine.configuration.callbackQueue)
            // A quick flap: both values are buffered for the engine's observer; the host is reachable now.
            reachability.setStatus(.unreachable)
            reachability.setStatus(.reachable(via: .wifi))
            let op = engine.operation(path: "x")
            engine.enqueue(op)
            try await Task.sleep(for: .milliseconds(30))   // the observer catches up with the buffered values
            queue.go()
            #expect(await failure(of: op) == nil, "failed although the host was reachable throughout its life")
        }
    }

    @Test func limitsDecidedInOneOrderAndAppliedInAnotherKeepTheNewest() {
        var machine = QueueStateMachine(maximumConcurrent: 6)
        _ = machine.setLimit(6, for: 1, version: 2)
        _ = machine.setLimit(0, for: 1, version: 1)   // an older decision arriving late
        #expect(machine.groupLimits[1] == 6)
        _ = machine.setLimit(nil, for: 1, version: 3)
        #expect(machine.groupLimits[1] == nil)
    }
}
