import Foundation
import NIOConcurrencyHelpers
import Testing
@testable import Courier

/// Tier 2: reachability, freezing and replay through engine and queue over a fake transport.
@Suite("Reachability and freezing")
struct FreezingTests {
    /// A server that can be down (connections refused) or up, and answers each path with a status.
    final class Origin: Sendable {
        let isUp = NIOLockedValueBox(false)
        let statuses = NIOLockedValueBox<[Int]>([])   // statuses to answer with first, then 201
        let received = Recorder<(key: String, path: String, authorization: String?)>()
        let transport: FakeTransport

        init() {
            let (isUp, statuses, received) = (isUp, statuses, received)
            transport = FakeTransport { request in
                guard isUp.withLockedValue({ $0 }) else { throw NetworkError(.cannotConnect, "refused") }
                received.append((request.headers[.idempotencyKey] ?? "", request.url.path, request.headers[.authorization]))
                let status = statuses.withLockedValue { $0.isEmpty ? 201 : $0.removeFirst() }
                return FakeTransport.reply(status: status, headers: [.retryAfter: "0"], body: "{}")
            }
        }
    }

    func temporaryDirectory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("courier-outbox-test-\(UUID().uuidString)")
    }

    func engine(_ origin: Origin, _ directory: URL, reachability: ManualReachability, _ configure: (inout NetworkEngine.Configuration) -> Void = { _ in }) -> NetworkEngine {
        NetworkEngine.fake(origin.transport) {
            $0.reachability = reachability
            $0.dataDirectory = directory
            $0.outboxRetry = OutboxRetry(initialDelay: .milliseconds(20), maximumDelay: .milliseconds(200))
            configure(&$0)
        }
    }

    @Test func unreachableHostFailsAtOnceUnlessTheOperationWaitsForConnectivity() async throws {
        let reachability = ManualReachability(.unreachable)
        let origin = Origin()
        origin.isUp.withLockedValue { $0 = true }
        let engine = NetworkEngine.fake(origin.transport) { $0.reachability = reachability }
        await #expect(throws: NetworkError.self) { try await engine.send(engine.operation(path: "now")) }
        do {
            try await engine.send(engine.operation(path: "now"))
        } catch {
            #expect(error.code == .notConnected)
        }
        let patient = engine.operation(path: "patient")
        patient.connectivityTimeout = .seconds(30)
        let impatient = engine.operation(path: "impatient")
        impatient.connectivityTimeout = .milliseconds(50)
        engine.enqueue(patient)
        engine.enqueue(impatient)
        do {
            _ = try await impatient.response()
            Issue.record("answered while unreachable")
        } catch {
            #expect(error.code == .notConnected)
        }
        #expect(patient.state == .waiting)
        #expect(origin.transport.requestCount == 0)
        reachability.setStatus(.reachable(via: .wifi))
        let response = try await patient.response()
        #expect(response.statusCode == 201)
        #expect(origin.transport.requestCount == 1)
    }

    @Test func aFreezableOperationIsCommittedBeforeFrozenIsReportedThenDeliveredInOrder() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let reachability = ManualReachability(.unreachable)
        let origin = Origin()
        let engine = engine(origin, directory, reachability: reachability)
        let committed = Recorder<Bool>()
        var operations: [NetworkOperation] = []
        for n in 0..<5 {
            let op = engine.operation(path: "posts/\(n)", method: .post, body: .text("post \(n)"))
            op.isFreezable = true
            op.onFrozen { entry in
                // The row is durable before anyone hears about it: a fresh reader sees it.
                committed.append((try? Outbox(directory: directory))?.entries.contains { $0.id == entry.id } == true)
            }
            engine.enqueue(op)
            operations.append(op)
        }
        #expect(await eventually { committed.all.count == 5 })
        #expect(committed.all.allSatisfy { $0 })
        #expect(operations.allSatisfy { $0.state == .frozen })
        let keys = try #require(engine.outbox).entries.map(\.idempotencyKey)
        #expect(Set(keys).count == 5)

        origin.isUp.withLockedValue { $0 = true }
        reachability.setStatus(.reachable(via: .wired))
        for op in operations { #expect(try await op.response().statusCode == 201) }
        #expect(origin.received.all.map(\.path) == (0..<5).map { "/v1/posts/\($0)" }, "replayed in the order frozen")
        #expect(origin.received.all.map(\.key) == keys, "each with the key made when it was frozen")
        #expect(try #require(engine.outbox).entries.isEmpty)
    }

    @Test func aConnectionFailureFreezesAndTheFirstAttemptAlreadyCarriesTheKey() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let reachability = ManualReachability(.reachable(via: .wifi))
        let origin = Origin()   // down: refuses connections
        let engine = engine(origin, directory, reachability: reachability)
        let events = engine.outboxEvents
        let op = engine.operation(path: "orders", method: .put, body: .json(["item": 1]))
        op.isFreezable = true
        op.setHeader("client-chosen-key", forName: "Idempotency-Key")
        engine.enqueue(op)
        var iterator = events.makeAsyncIterator()
        guard case .frozen(let entry)? = await iterator.next() else { Issue.record("not frozen"); return }
        #expect(entry.idempotencyKey == "client-chosen-key")
        #expect(op.state == .frozen)
        // Retries go on with backoff while the server refuses; then it comes up.
        guard case .retryScheduled(let retry)? = await iterator.next() else { Issue.record("no retry"); return }
        #expect(retry.id == entry.id)
        origin.isUp.withLockedValue { $0 = true }
        var delivered: OutboxEntry?
        while let event = await iterator.next() {
            if case .delivered(let done, let response) = event {
                delivered = done
                #expect(response.statusCode == 201)
                break
            }
        }
        #expect(delivered?.id == entry.id)
        #expect(origin.received.all.map(\.key) == ["client-chosen-key"])
        #expect(try await op.response().statusCode == 201)
    }

    @Test func fiveHundredsAreRetriedFourHundredsEndItAndRetryAfterIsHonoured() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let reachability = ManualReachability(.unreachable)
        let origin = Origin()
        origin.isUp.withLockedValue { $0 = true }
        origin.statuses.withLockedValue { $0 = [503, 429, 408, 500, 422] }
        let engine = engine(origin, directory, reachability: reachability)
        let op = engine.operation(path: "a", method: .post)
        op.isFreezable = true
        engine.enqueue(op)
        let second = engine.operation(path: "b", method: .post)
        second.isFreezable = true
        engine.enqueue(second)
        reachability.setStatus(.reachable(via: .wifi))
        do {
            _ = try await op.response()
            Issue.record("a 422 is not a success")
        } catch {
            #expect(error.code == .unacceptableStatus)
            #expect(error.response?.statusCode == 422)
        }
        #expect(try await second.response().statusCode == 201)
        #expect(origin.received.all.map(\.path) == Array(repeating: "/v1/a", count: 5) + ["/v1/b"])
        #expect(Set(origin.received.all.prefix(5).map(\.key)).count == 1, "every retry carries the same key")
    }

    @Test func secretsNeverReachTheOutboxAndTheCredentialProviderPutsThemBack() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let reachability = ManualReachability(.unreachable)
        let origin = Origin()
        let engine = engine(origin, directory, reachability: reachability) {
            $0.credentialProvider = { _ in [.authorization: "Bearer provider-secret-111"] }
        }
        let op = engine.operation(path: "me", method: .patch, body: .text("password=hunter2-secret-222"))
        op.isFreezable = true
        op.setHeader("Bearer op-secret-333", forName: "Authorization")
        op.setHeader("session=cookie-secret-444", forName: "Cookie")
        op.setHeader("Basic proxy-secret-555", forName: "Proxy-Authorization")
        engine.enqueue(op)
        #expect(await eventually { op.state == .frozen })
        #expect(!allBytes(under: directory).isEmpty)
        #expect(secretsFound(["provider-secret-111", "op-secret-333", "cookie-secret-444", "proxy-secret-555"], under: directory) == [])
        let attributes = try FileManager.default.attributesOfItem(atPath: directory.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o700)
        origin.isUp.withLockedValue { $0 = true }
        reachability.setStatus(.reachable(via: .wifi))
        _ = try await op.response()
        #expect(origin.received.all.first?.authorization == "Bearer provider-secret-111")
    }

    @Test func anotherEngineAfterARestartReplaysAndReportsOnOutboxEvents() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = Origin()
        do {
            let first = engine(origin, directory, reachability: ManualReachability(.unreachable))
            for n in 0..<3 {
                let op = first.operation(path: "notes/\(n)", method: .post)
                op.isFreezable = true
                first.enqueue(op)
                #expect(await eventually { op.state == .frozen })
            }
        }
        origin.isUp.withLockedValue { $0 = true }
        let reachability = ManualReachability(.unreachable)
        let second = engine(origin, directory, reachability: reachability)
        let events = second.outboxEvents
        reachability.setStatus(.reachable(via: .wifi))
        var delivered: [String] = []
        for await event in events {
            if case .delivered(let entry, _) = event { delivered.append(entry.url.path) }
            if delivered.count == 3 { break }
        }
        #expect(delivered == ["/v1/notes/0", "/v1/notes/1", "/v1/notes/2"])
        #expect(origin.received.all.count == 3)
    }

    @Test func timeToLiveAndAttemptLimitsDeadLetterVisibly() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let reachability = ManualReachability(.unreachable)
        let origin = Origin()
        origin.isUp.withLockedValue { $0 = true }
        origin.statuses.withLockedValue { $0 = [500, 500, 500, 500] }
        let engine = engine(origin, directory, reachability: reachability)
        let limited = engine.operation(path: "limited", method: .post)
        limited.isFreezable = true
        limited.maximumAttempts = 2
        engine.enqueue(limited)
        let expiring = engine.operation(path: "expiring", method: .post)
        expiring.isFreezable = true
        expiring.timeToLive = .milliseconds(1)
        engine.enqueue(expiring)
        try await Task.sleep(for: .milliseconds(20))
        reachability.setStatus(.reachable(via: .wifi))
        for op in [limited, expiring] {
            do {
                _ = try await op.response()
                Issue.record("\(op) should have been given up")
            } catch {
                #expect(error.code == .deadLettered)
            }
        }
        let outbox = try #require(engine.outbox)
        #expect(outbox.deadLetters.map(\.state) == [.deadLettered(.tooManyAttempts), .deadLettered(.expired)])
        #expect(origin.received.all.map(\.path) == ["/v1/limited", "/v1/limited"])
        #expect(outbox.drop(outbox.deadLetters[0].id))
        #expect(await outbox.clear() == 1)
    }

    @Test func cancellingAFrozenOperationRemovesItForGood() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let reachability = ManualReachability(.unreachable)
        let origin = Origin()
        let engine = engine(origin, directory, reachability: reachability)
        let op = engine.operation(path: "doomed", method: .delete)
        op.isFreezable = true
        engine.enqueue(op)
        #expect(await eventually { op.state == .frozen })
        op.cancel()
        #expect(await failure(of: op)?.code == .cancelled)
        #expect(try #require(engine.outbox).entries.isEmpty)
        origin.isUp.withLockedValue { $0 = true }
        reachability.setStatus(.reachable(via: .wifi))
        try await Task.sleep(for: .milliseconds(100))
        #expect(origin.received.all.isEmpty, "a cancelled frozen request is never sent")
    }

    @Test func wifiOnlyModeSendsNothingOverCellularAndEverythingOnWifi() async throws {
        let reachability = ManualReachability(.reachable(via: .cellular))
        let origin = Origin()
        origin.isUp.withLockedValue { $0 = true }
        let engine = NetworkEngine.fake(origin.transport) {
            $0.reachability = reachability
            $0.wifiOnlyMode = true
        }
        let operations = (0..<20).map { engine.operation(path: "photos/\($0)", method: .put) }
        for op in operations { engine.enqueue(op) }
        try await Task.sleep(for: .milliseconds(100))
        #expect(origin.transport.requestCount == 0, "nothing is sent over cellular")
        #expect(operations.allSatisfy { $0.state == .waiting })
        let changes = Recorder<ReachabilityStatus>()
        engine.reachabilityChanged = { changes.append($0) }
        reachability.setStatus(.reachable(via: .wifi))
        for op in operations { #expect(try await op.response().statusCode == 201) }
        #expect(origin.transport.requestCount == 20)
        #expect(origin.transport.maxConcurrent <= 6)
        await drain(engine.configuration.callbackQueue)
        #expect(changes.all == [.reachable(via: .wifi)])
    }

    @Test func cellularNarrowsTheSharedQueueForEveryEngineWithWaitingWork() async throws {
        let queue = NetworkQueue(maximumConcurrentOperations: 6)
        let gate = NIOLockedValueBox(false)
        let slow = FakeTransport { _ in
            while !gate.withLockedValue({ $0 }) { try await Task.sleep(for: .milliseconds(2)) }
            return FakeTransport.reply()
        }
        let wifi = NetworkEngine.fake(slow, queue: queue) { $0.reachability = ManualReachability(.reachable(via: .wifi)) }
        let cellular = NetworkEngine.fake(slow, queue: queue, baseURL: "https://cdn.example.com") {
            $0.reachability = ManualReachability(.reachable(via: .cellular))
        }
        let ops = (0..<10).map { wifi.operation(path: "w/\($0)") } + (0..<4).map { cellular.operation(path: "c/\($0)") }
        for op in ops { op.allowsCoalescing = false; op.isFreezable = false }
        for op in ops.prefix(10) { wifi.enqueue(op) }
        #expect(await eventually { slow.requestCount == 6 })
        for op in ops.suffix(4) { cellular.enqueue(op) }
        #expect(queue.effectiveMaximumConcurrentOperations == 2)
        gate.withLockedValue { $0 = true }
        for op in ops { _ = try await op.response() }
        #expect(slow.requestCount == 14)
        #expect(queue.effectiveMaximumConcurrentOperations == 6)
    }

    @Test(.timeLimit(.minutes(1))) func aDamagedRowIsSetAsideAndDoesNotHoldBackTheRest() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let reachability = ManualReachability(.unreachable)
        let origin = Origin()
        origin.isUp.withLockedValue { $0 = true }
        let engine = engine(origin, directory, reachability: reachability)
        let ops = (0..<3).map { engine.operation(path: "items/\($0)", method: .post) }
        for op in ops {
            op.isFreezable = true
            engine.enqueue(op)
        }
        #expect(await eventually { ops.allSatisfy { $0.state == .frozen } })
        // Damage the middle row as a broken disk or a careless tool would: a method that is not a token.
        let script = "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute(\"UPDATE outbox SET method='' WHERE id=?\", (sys.argv[2],)); c.commit()"
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        python.arguments = ["python3", "-c", script, directory.appendingPathComponent("outbox.sqlite").path, try #require(ops[1].outboxID)]
        try python.run()
        await python.exited()
        try #require(python.terminationStatus == 0)

        reachability.setStatus(.reachable(via: .wifi))
        #expect(try await ops[0].response().statusCode == 201)
        #expect(try await ops[2].response().statusCode == 201)
        #expect(origin.received.all.map(\.path) == ["/v1/items/0", "/v1/items/2"])
        #expect(await failure(of: ops[1])?.code == .outboxUnavailable, "its operation is told, not left frozen")
        #expect(try #require(engine.outbox).entries.map(\.id) == [], "the damaged row is kept aside, out of the listing")
    }
}
