import CourierTestServer
import Foundation
import Logging
import PostgresNIO
import Testing
@testable import Courier
@testable import CourierPostgres

/// The fourth review of issue 26: the bound on the statements a PostgreSQL outbox leaves on a server that
/// does not answer, met by callers arriving together and by the lease renewals of a replay on its way.
extension OutboxPostgresFaultTests {
    /// Instance A is sending row R to a slow origin (15 s), renewing its 4 s lease every second. The app
    /// locks the table for 2 s, and six reads of A's outbox give up meanwhile, so that a renewal of R is
    /// refused. Once the lock goes, R's renewals go on: instance B, started then, never sends R.
    @Test(.postgres(minutes: 4)) func aRenewalRefusedDuringAStallDoesNotStopTheRowsRenewals() async throws {
        try await OutboxPostgresTests.withServer { server in
            let seen = Recorder<String>()
            let slow = FakeTransport { request in
                seen.append("A:" + (request.headers[.idempotencyKey] ?? "none"))
                try await Task.sleep(for: .seconds(15))
                return FakeTransport.reply(status: 201, body: "{}")
            }
            let reachA = ManualReachability(.unreachable)
            let (a, _, runningA) = OutboxPostgresTests.instance(
                server, transport: slow, reachability: reachA, timeout: .milliseconds(500), lease: .seconds(4))
            defer { runningA.cancel() }
            let op = OutboxPostgresTests.freeze(a, "orders/r")
            #expect(await eventually { op.state == .frozen })
            reachA.setStatus(.reachable(via: .wired))
            #expect(await eventually { seen.all.count == 1 })
            try await Task.sleep(for: .milliseconds(300))
            let lock = try await Self.lockTable(server, seconds: 2)
            await withTaskGroup(of: Int.self) { group in
                for _ in 0..<6 { group.addTask { await offThePool { a.outbox?.entries.count ?? -1 } } }
            }
            _ = try await lock.value
            let other = FakeTransport { request in
                seen.append("B:" + (request.headers[.idempotencyKey] ?? "none"))
                return FakeTransport.reply(status: 201, body: "{}")
            }
            let (b, _, runningB) = OutboxPostgresTests.instance(
                server, transport: other, reachability: ManualReachability(.reachable(via: .wired)), lease: .seconds(4))
            defer { runningB.cancel() }
            _ = await offThePool { b.outbox?.entries.count }
            try await Task.sleep(for: .seconds(8))   // two leases' length: a lease left to lapse would have let B in
            #expect(seen.all.count == 1, "sent once, by A, whose replay is still on its way: \(seen.all)")
            withExtendedLifetime((a, b)) {}
        }
    }

    /// Ten reads arrive together while the app keeps the table locked: at most the limit of statements is
    /// left waiting on the server once they have all given up, and the app's own query on the same client
    /// (8 connections) is answered.
    @Test(.postgres(minutes: 4)) func readsArrivingTogetherDuringALockLeaveNoMoreThanTheLimitOnTheServer() async throws {
        try await OutboxPostgresTests.withServer { server in
            let (engine, client, running) = OutboxPostgresTests.instance(
                server, transport: OutboxPostgresTests.Origin().transport, reachability: ManualReachability(.unreachable), replays: false,
                timeout: .seconds(1), connections: 8)
            defer { running.cancel() }
            _ = await offThePool { engine.outbox?.entries.count }
            let lock = try await Self.lockTable(server, seconds: 10)
            let started = ContinuousClock.now
            await withTaskGroup(of: Int.self) { group in
                for _ in 0..<10 { group.addTask { await offThePool { engine.outbox?.entries.count ?? -1 } } }
            }
            #expect(ContinuousClock.now - started < .seconds(5), "every read gave up within its timeout, or at once")
            let waiting = try await Self.statementsWaitingOnLocks(server)
            #expect((0...PostgresOutboxStore.statementLimit).contains(waiting), "statements left waiting on the lock: \(waiting)")
            #expect(await Self.appQueryAnswered(client), "the app's own query found a connection")
            _ = try await lock.value
        }
    }
}
