import CourierTestServer
import Foundation
import Logging
import PostgresNIO
import Testing
@testable import Courier
@testable import CourierPostgres

/// The second review of issue 26: rows the app holds locked (a slow transaction) while the outbox writes
/// an outcome or a drop.
extension OutboxPostgresFaultTests {
    /// Holds a row's lock in another session (as a slow transaction of the app would) for `seconds`;
    /// returns once the lock is held.
    static func lockRow(_ server: PostgresServer, table: String, urlEnding path: String, seconds: Int) async throws -> Task<String, any Error> {
        try await hold(server, "SELECT 1 FROM \"\(table)\" WHERE url LIKE '%\(path)' FOR UPDATE", seconds: seconds)
    }

    /// Holds the whole table locked in another session (a migration of the app's, a stuck transaction) for
    /// `seconds`; returns once the lock is held.
    static func lockTable(_ server: PostgresServer, _ table: String = "courier_outbox_orders", seconds: Int) async throws -> Task<String, any Error> {
        try await hold(server, "LOCK TABLE \"\(table)\" IN ACCESS EXCLUSIVE MODE", seconds: seconds)
    }

    /// Runs `lock` in a transaction of another session that then sleeps `seconds`; returns once it sleeps.
    private static func hold(_ server: PostgresServer, _ lock: String, seconds: Int) async throws -> Task<String, any Error> {
        let task = Task { try await server.psql("BEGIN; \(lock); SELECT pg_sleep(\(seconds)); COMMIT;") }
        #expect(await Self.settles {
            (try? await server.psql("SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(\(seconds))%' AND state = 'active' AND pid <> pg_backend_pid()")) == "1\n"
        })
        return task
    }

    /// How many statements wait for a lock on the server, the app's own aside.
    static func statementsWaitingOnLocks(_ server: PostgresServer) async throws -> Int {
        Int(try await server.psql("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()")
            .trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    /// Whether the app's own query on `client` is answered within 3 s (a connection was free for it).
    static func appQueryAnswered(_ client: PostgresClient) async -> Bool {
        await answers(within: .seconds(3)) {
            for try await _ in try await client.query("SELECT 1", logger: Logger(label: "test")) {}
        }
    }

    /// Row x's outcome waits for a lock the app holds for 6 s; row y's answer arrives meanwhile. y's lease
    /// is renewed while its outcome waits its turn, so another instance never sends it again; x's outcome is
    /// written once (its attempts counted once); a drop meanwhile answers within its timeout.
    @Test(.postgres(minutes: 6)) func anOutcomeWaitingForTheServerHoldsNoOtherRowsLeaseAndCountsOnce() async throws {
        try await OutboxPostgresTests.withServer { server in
            let received = Recorder<String>()
            let transport = FakeTransport { request in
                let path = request.url.path
                received.append(path)
                if path.hasSuffix("/x"), received.all.filter({ $0.hasSuffix("/x") }).count == 1 {
                    _ = try await Self.lockRow(server, table: "courier_outbox_orders", urlEnding: "/x", seconds: 6)
                    return FakeTransport.reply(status: 503, body: "{}")
                }
                if path.hasSuffix("/y") { try await Task.sleep(for: .milliseconds(1500)) }
                return FakeTransport.reply(status: 201, body: "{}")
            }
            let reachability = ManualReachability(.unreachable)
            let (engine, _, running) = OutboxPostgresTests.instance(
                server, transport: transport, reachability: reachability, timeout: .seconds(1), lease: .seconds(2))
            defer { running.cancel() }
            let operations = ["x", "y", "z"].map { path in
                let operation = engine.operation(path: "orders/\(path)", method: .post, body: .json(["item": path]))
                operation.isFreezable = true
                operation.orderingKey = path
                engine.enqueue(operation)
                return operation
            }
            #expect(await eventually { operations.allSatisfy { $0.state == .frozen } })
            reachability.setStatus(.reachable(via: .wired))
            #expect(await eventually { received.all.contains { $0.hasSuffix("/y") } })
            // Another instance, on the same outbox, looks for work while y's outcome waits behind x's.
            // (It may send x's retry, once x's 503 is recorded: any instance may. It must not send y or z.)
            let otherPaths = Recorder<String>()
            let otherTransport = FakeTransport { request in
                otherPaths.append(request.url.path)
                return FakeTransport.reply(status: 201, body: "{}")
            }
            let (other, _, runningOther) = OutboxPostgresTests.instance(
                server, transport: otherTransport, reachability: ManualReachability(.reachable(via: .wired)))
            defer { runningOther.cancel() }
            let started = ContinuousClock.now
            let dropped = await engine.outbox?.drop("no-such-row")
            #expect(dropped == false)
            #expect(ContinuousClock.now - started < .seconds(4), "a drop waits for the work queue at most its timeout")
            for operation in operations {
                let status = try await operation.response().statusCode
                #expect(status == 201)
            }
            #expect(received.all.filter { $0.hasSuffix("/y") }.count == 1, "y sent once: \(received.all)")
            #expect(!otherPaths.all.contains { $0.hasSuffix("/y") || $0.hasSuffix("/z") }, "nothing sent again: \(otherPaths.all)")
            #expect((received.all + otherPaths.all).filter { $0.hasSuffix("/x") }.count == 2, "x: its 503, then its retry")
            let attempts = try await server.psql("SELECT attempts FROM \"courier_outbox_orders\" WHERE url LIKE '%/x'")
            #expect(attempts == "2\n", "x: one 503, one 201")
            withExtendedLifetime((engine, other)) {}
        }
    }

    /// A drop that gives up waiting for a row the app holds locked says so; when the server deletes the row
    /// afterwards, the operation waiting for it ends (cancelled) rather than waiting forever. (On a loaded
    /// machine the delete may not reach the server before the drop gives up: then the row stays and the
    /// operation stays frozen. Either way the row and the operation agree.)
    @Test(.postgres(minutes: 6)) func aDropTheServerMakesLateEndsTheWaitingOperation() async throws {
        try await OutboxPostgresTests.withServer { server in
            let origin = Origin()
            let (engine, _, running) = OutboxPostgresTests.instance(
                server, origin, reachability: ManualReachability(.unreachable), replays: false, timeout: .seconds(2))
            defer { running.cancel() }
            let operation = OutboxPostgresTests.freeze(engine, "orders/held")
            #expect(await eventually { operation.state == .frozen })
            let lock = try await Self.lockRow(server, table: "courier_outbox_orders", urlEnding: "/held", seconds: 5)
            let outbox = try #require(engine.outbox)
            #expect(await outbox.drop(try #require(operation.outboxID)) == false, "not known within the timeout")
            _ = try await lock.value
            let ended = await Self.ends(operation, within: .seconds(40))
            let left = try await server.psql("SELECT count(*) FROM \"courier_outbox_orders\"")
            if left == "0\n" {
                #expect(ended, "the row went: its operation ended (state \(operation.state))")
                if ended { #expect(await failure(of: operation)?.code == .cancelled) }
            } else {
                #expect(!ended && operation.state == .frozen, "the row stayed: its operation waits for it")
            }
        }
    }

    /// The app keeps the outbox's table locked (a long migration, a stuck transaction): freezes fail with a
    /// typed error, and no more than a few of the store's statements wait on the server meanwhile, so the
    /// app's own queries on the same client (8 connections) still find one. Once the lock goes, what the
    /// stalled freezes wrote is removed, never sent, and freezing works again.
    @Test(.postgres(minutes: 6)) func aTableLockedForLongTakesOnlyAFewOfTheAppsConnections() async throws {
        try await OutboxPostgresTests.withServer { server in
            let (engine, client, running) = OutboxPostgresTests.instance(
                server, transport: Origin().transport, reachability: ManualReachability(.unreachable), replays: false,
                timeout: .seconds(1), connections: 8)
            defer { running.cancel() }
            _ = await offThePool { engine.outbox?.entries.count }   // opened: its table exists
            let lock = try await Self.lockTable(server, seconds: 12)
            let operations = (1...12).map { OutboxPostgresTests.freeze(engine, "orders/\($0)") }
            for operation in operations {
                let code = await failure(of: operation)?.code
                #expect(code == .outboxUnavailable, "not frozen: \(operation.state)")
            }
            let waiting = try await Self.statementsWaitingOnLocks(server)
            #expect((0...PostgresOutboxStore.statementLimit).contains(waiting), "statements waiting on the lock: \(waiting)")
            // The lock is still held: the app's own query on the same client is answered.
            #expect(await Self.appQueryAnswered(client), "the app's query found a connection while the table was locked")
            _ = try await lock.value
            #expect(await Self.settles { (try? await server.psql("SELECT count(*) FROM \"courier_outbox_orders\"")) == "0\n" },
                    "what the stalled freezes wrote was removed")
            let later = OutboxPostgresTests.freeze(engine, "orders/later")
            #expect(await eventually { later.state == .frozen }, "freezing works again: \(later.state)")
        }
    }

    /// Whether `body` returns (without throwing) within `timeout`.
    static func answers(within timeout: Duration, _ body: @escaping @Sendable () async throws -> Void) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { (try? await body()) != nil }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    /// Whether `operation` ends within `timeout`. (A function of its own: written inline in the test's
    /// closure, the same wait was seen returning `false` after its whole timeout without once calling its
    /// condition, although the operation had ended 40 s before.)
    static func ends(_ operation: NetworkOperation, within timeout: Duration) async -> Bool {
        await eventually(timeout: timeout) { operation.isFinished }
    }

    /// A row still held by its freeze (its caller not yet told it is frozen) is claimed by no one; once the
    /// hold lapses (the freezing process died before giving it back) it is deleted, never sent.
    @Test(.postgres(minutes: 6)) func aRowHeldByAFreezeIsNeverClaimedAndALapsedHoldIsDeleted() async throws {
        try await OutboxPostgresTests.withServer { server in
            let (stores, running) = try await Self.stores(server, count: 1)
            defer { for task in running { task.cancel() } }
            let store = stores[0]
            let held = OutboxStoreContractTests.record("held", lane: "a")
            let lapsed = OutboxStoreContractTests.record("lapsed", lane: "b")
            try await store.schema.insert(held, heldBy: "elsewhere:1:x#freeze", for: 60, client: store.client)
            try await store.schema.insert(lapsed, heldBy: "elsewhere:2:y#freeze", for: -1, client: store.client)
            let result = await Self.claim(store)
            #expect(OutboxStoreContractTests.sent(result) == nil, "neither is sent: \(result)")
            #expect(try await server.psql("SELECT url FROM \"courier_outbox_faults\" ORDER BY seq") == "https://api.example.com/held\n",
                    "the lapsed hold was deleted, the live one kept")
        }
    }
}
