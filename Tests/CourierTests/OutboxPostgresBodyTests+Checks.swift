import CourierTestServer
import Foundation
import PostgresNIO
import Testing
@testable import Courier
@testable import CourierPostgres

/// Review 13: a claimed row's chunks are checked before its request is built. The check must keep the row's
/// lease, hold back no other lane, and settle the waiting operation whatever happened to the row meanwhile.
extension OutboxPostgresBodyTests {
    static func freeze(_ engine: NetworkEngine, _ body: RequestBody, path: String = "echo", lane: String?) async -> NetworkOperation {
        let op = engine.operation(path: path, method: .post, body: body)
        op.isFreezable = true
        op.orderingKey = lane
        engine.enqueue(op)
        _ = await eventually { op.state == .frozen || op.isFinished }
        return op
    }

    static func checkWaitsOnTheLock(_ server: PostgresServer) async -> Bool {
        await Self.until(.seconds(3)) { ((try? await OutboxPostgresFaultTests.statementsWaitingOnLocks(server)) ?? 0) >= 1 }
    }

    /// A's check waits 4 s for the locked chunks' table with a lease of 1 s: the lease is renewed meanwhile,
    /// so B never claims the row, and the origin gets it once. (Renewed only once the request was submitted,
    /// the lease lapsed, B sent the row, then A did too.)
    @Test(.postgres(minutes: 2)) func aRowsLeaseIsRenewedWhileItsBodyIsCheckedSoNoOtherInstanceSendsItToo() async throws {
        try await Self.withUploads { server, origin, folder in
            let (aReach, bReach) = (ManualReachability(.unreachable), ManualReachability(.unreachable))
            let (a, runningA) = Self.instance(server, origin: origin, reachability: aReach, timeout: .seconds(8), lease: .seconds(1))
            let (b, runningB) = Self.instance(server, origin: origin, reachability: bReach, timeout: .seconds(8), lease: .seconds(1))
            defer { runningA.cancel(); runningB.cancel() }
            let file = folder.appendingPathComponent("once.bin")
            try OutboxFileBodyTests.pattern(600_000).write(to: file)
            let op = await Self.freeze(a, .file(file), lane: nil)
            #expect(op.state == .frozen)
            _ = await offThePool { b.outbox?.entries.count }
            let lock = try await OutboxPostgresFaultTests.lockTable(server, "courier_outbox_uploads$bodies", seconds: 4)
            aReach.setStatus(.reachable(via: .wired))
            #expect(await Self.checkWaitsOnTheLock(server))
            try await Task.sleep(for: .milliseconds(1500))
            bReach.setStatus(.reachable(via: .wired))
            _ = try? await lock.value
            #expect(await eventually(timeout: .seconds(15)) { op.isFinished })
            try await Task.sleep(for: .seconds(2))
            let posts = origin.recordedRequests.filter { $0.method == "POST" }.map(\.body.count)
            #expect(posts == [600_000], "the row was sent \(posts.count) times")
            withExtendedLifetime((a, b)) {}
        }
    }

    /// Lane x's chunked row is checked while its chunks' table is locked; lane y's rows, whose bodies are in
    /// their rows, go at once (the check ran on the outbox's work queue, and lane y waited the whole timeout).
    @Test(.postgres(minutes: 2)) func aStalledBodyCheckHoldsBackNoOtherLane() async throws {
        try await Self.withUploads { server, origin, folder in
            let reachability = ManualReachability(.unreachable)
            let (engine, running) = Self.instance(server, origin: origin, reachability: reachability, timeout: .seconds(3))
            defer { running.cancel() }
            let file = folder.appendingPathComponent("x.bin")
            try OutboxFileBodyTests.pattern(600_000).write(to: file)
            let x = await Self.freeze(engine, .file(file), lane: "x")
            var ys: [NetworkOperation] = []
            for index in 0..<3 { ys.append(await Self.freeze(engine, .data(Data("y\(index)".utf8)), path: "echo?y=\(index)", lane: "y")) }
            #expect(x.state == .frozen && ys.allSatisfy { $0.state == .frozen })
            let lock = try await OutboxPostgresFaultTests.lockTable(server, "courier_outbox_uploads$bodies", seconds: 8)
            let start = ContinuousClock.now
            reachability.setStatus(.reachable(via: .wired))
            let sent = await eventually(timeout: .seconds(7)) { origin.recordedRequests.contains { $0.uri.contains("y=0") } }
            let took = ContinuousClock.now - start
            #expect(sent && took < .seconds(1.5), "lane y's head waited \(took) behind lane x's body check")
            _ = try? await lock.value
            #expect(await eventually(timeout: .seconds(15)) { x.isFinished && ys.allSatisfy(\.isFinished) })
            #expect(origin.recordedRequests.filter { $0.method == "POST" && $0.body.count == 600_000 }.count == 1)
            withExtendedLifetime(engine) {}
        }
    }

    /// While A's check waits, the row is settled as another instance would (A's lease having lapsed): A sends
    /// nothing, and its operation learns that outcome.
    @Test(.postgres(minutes: 2), arguments: ["delivered", "failed"])
    func aRowSettledElsewhereWhileItsBodyIsCheckedIsReportedAndNotSent(outcome: String) async throws {
        try await Self.withUploads { server, origin, folder in
            let reachability = ManualReachability(.unreachable)
            let (engine, running) = Self.instance(server, origin: origin, reachability: reachability, timeout: .seconds(8), lease: .seconds(1))
            defer { running.cancel() }
            let file = folder.appendingPathComponent("settled.bin")
            try OutboxFileBodyTests.pattern(600_000).write(to: file)
            let op = await Self.freeze(engine, .file(file), lane: nil)
            let lock = try await OutboxPostgresFaultTests.lockTable(server, "courier_outbox_uploads$bodies", seconds: 3)
            reachability.setStatus(.reachable(via: .wired))
            #expect(await Self.checkWaitsOnTheLock(server))
            let status = outcome == "delivered" ? 201 : 409
            _ = try await server.psql(#"UPDATE "courier_outbox_uploads" SET outcome = '\#(outcome)', finished_at = extract(epoch from clock_timestamp()), last_status = \#(status), lease_owner = NULL, lease_expires = NULL"#)
            _ = try? await lock.value
            let ended = await eventually(timeout: .seconds(10)) { op.isFinished }
            #expect(ended)
            if ended {
                let error = await failure(of: op)
                if outcome == "delivered" { #expect(error == nil) } else { #expect(error?.code == .unacceptableStatus) }
            }
            #expect(origin.recordedRequests.filter { $0.method == "POST" }.isEmpty)
            withExtendedLifetime(engine) {}
        }
    }

    /// A row dropped while its body is checked is never sent, and its waiting operation is told it was cancelled.
    @Test(.postgres(minutes: 2)) func aRowDroppedWhileItsBodyIsCheckedIsNeverSent() async throws {
        try await Self.withUploads { server, origin, folder in
            let reachability = ManualReachability(.unreachable)
            let (engine, running) = Self.instance(server, origin: origin, reachability: reachability, timeout: .seconds(8))
            defer { running.cancel() }
            let file = folder.appendingPathComponent("dropped.bin")
            try OutboxFileBodyTests.pattern(600_000).write(to: file)
            let op = await Self.freeze(engine, .file(file), lane: nil)
            let outbox = try #require(engine.outbox)
            let id = try #require(op.outboxID)
            let lock = try await OutboxPostgresFaultTests.lockTable(server, "courier_outbox_uploads$bodies", seconds: 3)
            reachability.setStatus(.reachable(via: .wired))
            #expect(await Self.checkWaitsOnTheLock(server))
            let dropped = await offThePool { outbox.drop(id) }
            _ = try? await lock.value
            #expect(await eventually(timeout: .seconds(10)) { op.isFinished })
            if op.isFinished { #expect(await failure(of: op)?.code == .cancelled) }
            let rows = try await server.psql(#"SELECT count(*) FROM "courier_outbox_uploads""#)
            #expect(rows == "0\n" || !dropped, "dropped: \(dropped), rows: \(rows)")
            #expect(origin.recordedRequests.filter { $0.method == "POST" }.isEmpty)
            withExtendedLifetime(engine) {}
        }
    }

    /// Review 14: two engines of one process share one store, and so one lease owner. Engine 1's checks of
    /// two rows wait on the locked chunks' table while the app holds the outbox's table in share mode (its
    /// lease renewals wait), so both leases lapse; engine 2 then claims. A row this process is replaying is
    /// never claimed again by it: each row is sent once. (Engine 2 claimed row a, whose lease owner was its
    /// own, and both engines sent it.)
    @Test(.postgres(minutes: 2)) func twoEnginesSharingAStoreNeverBothSendARowWhoseLeaseLapsed() async throws {
        try await Self.withUploads { server, origin, folder in
            let client = server.makeClient()
            let running = Task { await client.run() }
            defer { running.cancel() }
            func engine(_ reachability: ManualReachability) -> NetworkEngine {
                NetworkEngine(baseURL: origin.baseURL, configuration: .init {
                    $0.reachability = reachability
                    $0.outbox = .postgres(client: client, name: "uploads", timeout: .seconds(8))
                    $0.outboxRetry = OutboxRetry(initialDelay: .milliseconds(50), maximumDelay: .milliseconds(200), lease: .seconds(1))
                }, queue: NetworkQueue())
            }
            let (first, second) = (ManualReachability(.unreachable), ManualReachability(.unreachable))
            let (one, two) = (engine(first), engine(second))
            var ops: [NetworkOperation] = []
            for lane in ["a", "b"] {
                let file = folder.appendingPathComponent("\(lane).bin")
                try OutboxFileBodyTests.pattern(600_000).write(to: file)
                ops.append(await Self.freeze(one, .file(file), path: "echo?lane=\(lane)", lane: lane))
            }
            #expect(ops.allSatisfy { $0.state == .frozen })
            _ = await offThePool { two.outbox?.entries.count }
            let lock = try await OutboxPostgresFaultTests.lockTable(server, "courier_outbox_uploads$bodies", seconds: 5)
            first.setStatus(.reachable(via: .wired))
            #expect(await Self.until(.seconds(3)) { ((try? await OutboxPostgresFaultTests.statementsWaitingOnLocks(server)) ?? 0) >= 2 })
            let share = Task { try await server.psql(#"BEGIN; LOCK TABLE "courier_outbox_uploads" IN SHARE MODE; SELECT pg_sleep(4); COMMIT;"#) }
            try await Task.sleep(for: .milliseconds(1800))
            second.setStatus(.reachable(via: .wired))
            _ = try? await share.value
            _ = try? await lock.value
            #expect(await eventually(timeout: .seconds(20)) { ops.allSatisfy(\.isFinished) })
            try await Task.sleep(for: .seconds(2))
            let sent = origin.recordedRequests.filter { $0.method == "POST" }.map(\.uri).sorted()
            #expect(sent == ["/echo?lane=a", "/echo?lane=b"], "sent \(sent)")
            withExtendedLifetime((one, two)) {}
        }
    }
}
