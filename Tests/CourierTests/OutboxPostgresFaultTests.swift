import CourierTestServer
import Foundation
import NIOConcurrencyHelpers
import PostgresNIO
import Testing
@testable import Courier
@testable import CourierPostgres

/// Issue 26's adversarial review: what a fleet meets besides kills and restarts. A write the server
/// takes after its caller gave up, an outcome the server could not take, instances whose clocks disagree,
/// a drop while another instance is sending, outbox names that look like each other's indexes, and async
/// code that must never block the cooperative pool.
@Suite("Outbox on PostgreSQL: late writes, lost outcomes, clocks, drops, names")
struct OutboxPostgresFaultTests {
    typealias Origin = OutboxPostgresTests.Origin

    static func stores(_ server: PostgresServer, count: Int, name: String = "faults") async throws -> ([PostgresOutboxStore], [Task<Void, Never>]) {
        let clients = (0..<count).map { _ in server.makeClient() }
        let running = clients.map { client in Task { await client.run() } }
        let stores = try await offThePool { () throws -> [PostgresOutboxStore] in
            try clients.map { try PostgresOutboxStore.open(client: $0, name: name, location: URL(string: "postgres:test")!, logger: nil) }
        }
        return (stores, running)
    }

    /// Whether `condition` (which may ask the server) becomes true within 10 s.
    static func settles(_ condition: () async -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            if await condition() { return true }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return await condition()
    }

    static func claim(_ store: PostgresOutboxStore, now: Double = Date().timeIntervalSince1970, lease: Double = 60) async -> OutboxClaimResult {
        await offThePool { store.claimHead(OutboxStoreContractTests.pipeline, claim: ReplayStateMachine.Claim(), now: now, lease: lease) }
    }

    /// The table is locked by another session while a freeze waits for it: the freeze fails after its
    /// timeout, the server then commits the row, and the store removes it again. The origin never gets it.
    @Test(.postgres(minutes: 6)) func aFreezeTheServerCommitsAfterItsCallerGaveUpIsRemovedAndNeverSent() async throws {
        try await OutboxPostgresTests.withServer { server in
            let origin = Origin()
            let reachability = ManualReachability(.unreachable)
            let (engine, _, running) = OutboxPostgresTests.instance(server, origin, reachability: reachability, timeout: .seconds(1))
            defer { running.cancel() }
            let first = OutboxPostgresTests.freeze(engine, "orders/first")
            #expect(await eventually { first.state == .frozen })
            // Another instance replays all along: it delivers what was frozen, and must never get the late row.
            let (other, _, runningOther) = OutboxPostgresTests.instance(server, origin, reachability: ManualReachability(.reachable(via: .wired)))
            defer { runningOther.cancel() }
            #expect(try await first.response().statusCode == 201)
            let lock = Task {
                try await server.psql("BEGIN; LOCK TABLE \"courier_outbox_orders\" IN EXCLUSIVE MODE; SELECT pg_sleep(3); COMMIT;")
            }
            #expect(await Self.settles {
                (try? await server.psql("SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE c.relname = 'courier_outbox_orders' AND l.mode = 'ExclusiveLock' AND l.granted")) == "1\n"
            })
            let late = OutboxPostgresTests.freeze(engine, "orders/late")
            let error = await failure(of: late)
            #expect(error?.code == .outboxUnavailable, "\(String(describing: error))")
            _ = try await lock.value
            // Whatever the server did with the insert, the row is gone once the undo ran, and was never sent.
            #expect(await Self.settles {
                (try? await server.psql("SELECT count(*) FROM \"courier_outbox_orders\" WHERE url LIKE '%late%'")) == "0\n"
            })
            reachability.setStatus(.reachable(via: .wired))
            try await Task.sleep(for: .seconds(1))
            #expect(origin.keys.all.count == 1, "only the first: \(origin.keys.all)")
            withExtendedLifetime((engine, other)) {}
        }
    }

    /// The server goes down while the origin answers: the outcome cannot be recorded. The instance keeps
    /// the outcome and records it once the server is back, so the row is not sent again when its lease
    /// would have lapsed.
    @Test(.postgres(minutes: 6)) func anOutcomeTheServerCouldNotTakeIsRecordedOnceItIsBackNotSentAgain() async throws {
        try await OutboxPostgresTests.withServer { server in
            let received = NIOLockedValueBox(0)
            let transport = FakeTransport { _ in
                let first = received.withLockedValue { count -> Bool in
                    count += 1
                    return count == 1
                }
                if first {
                    // Down before the answer arrives; back 2 s later.
                    try await server.halt()
                    Task {
                        try await Task.sleep(for: .seconds(2))
                        try await server.resume()
                    }
                }
                return FakeTransport.reply(status: 201, body: "{}")
            }
            let reachability = ManualReachability(.unreachable)
            let (engine, _, running) = OutboxPostgresTests.instance(
                server, transport: transport, reachability: reachability, timeout: .seconds(1), lease: .seconds(3))
            defer { running.cancel() }
            let operation = OutboxPostgresTests.freeze(engine, "orders/once")
            #expect(await eventually { operation.state == .frozen })
            reachability.setStatus(.reachable(via: .wired))
            #expect(try await operation.response().statusCode == 201)
            // Past the lease: a lost outcome would have been sent again by now.
            try await Task.sleep(for: .seconds(6))
            #expect(received.withLockedValue { $0 } == 1)
            #expect(try await server.psql("SELECT outcome FROM \"courier_outbox_orders\"") == "delivered\n")
            withExtendedLifetime(engine) {}
        }
    }

    /// Instance A's clock is an hour behind, B's an hour ahead. A lease A takes still holds for B, a retry
    /// A schedules is due when the server's clock says so, and B does not see rows expire early.
    @Test(.postgres(minutes: 6)) func leasesSchedulesAndExpiriesFollowTheServersClockNotAnInstances() async throws {
        try await OutboxPostgresTests.withServer { server in
            let (stores, running) = try await Self.stores(server, count: 2)
            defer { for task in running { task.cancel() } }
            let (a, b) = (stores[0], stores[1])
            let behind = Date().timeIntervalSince1970 - 3600
            let ahead = Date().timeIntervalSince1970 + 3600
            var record = OutboxStoreContractTests.record("skewed")
            // Frozen by A (its clock behind) with a 10-minute time to live.
            record.createdAt = behind
            record.nextAttemptAt = behind
            record.expiresAt = behind + 600
            let row = record
            _ = try await offThePool { try a.insertFrozen(row, bytes: nil, source: nil, limit: 0) }

            guard case .head(_, .send, let claimed) = await Self.claim(a, now: behind, lease: 60) else {
                Issue.record("A claims the row")
                return
            }
            // B, an hour ahead, neither sends it (A's lease holds) nor finds it expired.
            let seen = await Self.claim(b, now: ahead)
            if case .head(_, let decision, _) = seen {
                #expect(decision != .send, "A's lease holds for B")
                #expect(decision != .deadLetter(.expired), "the row has 10 minutes left on the server's clock")
            }
            // A schedules a retry 30 s from its now: due in 30 s on the server's clock, not an hour ago.
            await offThePool {
                a.complete(id: claimed.id, .retry(at: behind + 30), status: 503, error: nil, counted: true, now: behind)
            }
            let due = try await server.psql(
                "SELECT round(next_attempt_at - extract(epoch from clock_timestamp())::float8) FROM \"courier_outbox_faults\"")
            let seconds = Double(due.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
            #expect((25...31).contains(seconds), "due in about 30 s: \(due)")
            if case .head(_, let decision, _) = await Self.claim(b, now: ahead) {
                #expect(decision != .send, "not due yet, whatever B's clock says")
            }
        }
    }

    /// A drop from one instance while another holds a live lease (its replay on the wire) removes nothing:
    /// that attempt decides. Once the lease is released, the drop goes through.
    @Test(.postgres(minutes: 6)) func aDropLeavesARowAnotherInstanceIsSendingToThatAttempt() async throws {
        try await OutboxPostgresTests.withServer { server in
            let (stores, running) = try await Self.stores(server, count: 2)
            defer { for task in running { task.cancel() } }
            let (a, b) = (stores[0], stores[1])
            let row = OutboxStoreContractTests.record("dropped")
            _ = try await offThePool { try a.insertFrozen(row, bytes: nil, source: nil, limit: 0) }
            guard case .head(_, .send, let claimed) = await Self.claim(a) else {
                Issue.record("A claims the row")
                return
            }
            #expect(await offThePool { b.drop(id: claimed.id) } == false, "A is sending it")
            #expect(try await server.psql("SELECT count(*) FROM \"courier_outbox_faults\"") == "1\n")
            await offThePool {
                a.complete(id: claimed.id, .retry(at: Date().timeIntervalSince1970 + 60), status: 503, error: nil, counted: true,
                           now: Date().timeIntervalSince1970)
            }
            #expect(await offThePool { b.drop(id: claimed.id) } == true, "released: dropped")
            #expect(try await server.psql("SELECT count(*) FROM \"courier_outbox_faults\"") == "0\n")
        }
    }

    /// Outbox names that spell another outbox's index, sequence or key names each get a table of their
    /// own; a name whose table would be another relation (the migrations table, an app's table) fails
    /// with a clear error instead of being used.
    @Test(.postgres(minutes: 6)) func outboxNamesNeverCollideWithAnotherOutboxsIndexesOrAnAppsTables() async throws {
        try await OutboxPostgresTests.withServer { server in
            let client = server.makeClient()
            let running = Task { await client.run() }
            defer { running.cancel() }
            let names = ["a", "a_pending", "a_lanes", "a_seq_seq", "a_pkey", "a_id_key"]
            for name in names {
                let store = try await offThePool {
                    try PostgresOutboxStore.open(client: client, name: name, location: URL(string: "postgres:\(name)")!, logger: nil)
                }
                let row = OutboxStoreContractTests.record("row-of-\(name)")
                _ = try await offThePool { try store.insertFrozen(row, bytes: nil, source: nil, limit: 0) }
            }
            for name in names {
                #expect(try await server.psql("SELECT url FROM \"courier_outbox_\(name)\"") == "https://api.example.com/row-of-\(name)\n")
            }
            _ = try await server.psql("CREATE TABLE courier_outbox_mine (x int)")
            for name in ["mine", "migrations"] {
                let error = await offThePool { () -> NetworkError? in
                    do throws(NetworkError) {
                        _ = try PostgresOutboxStore.open(client: client, name: name, location: URL(string: "postgres:\(name)")!, logger: nil)
                        return nil
                    } catch {
                        return error
                    }
                }
                #expect(error?.code == .outboxUnavailable)
                #expect(error?.message.contains("not a Courier outbox") == true, "\(String(describing: error))")
            }
        }
    }

    /// Many tasks using the async API at once on the two threads of the cooperative pool: none waits for
    /// the server on a pool thread, so the client's own pool keeps running and every call answers at once.
    @Test(.postgres(minutes: 6)) func theAsyncAPINeverBlocksTheCooperativePool() async throws {
        try await OutboxPostgresTests.withServer { server in
            let client = server.makeClient()
            let running = Task { await client.run() }
            defer { running.cancel() }
            let location = OutboxLocation.postgres(client: client, name: "pool", timeout: .seconds(5))
            let started = ContinuousClock.now
            let counts = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        try await Task.detached {
                            let outbox = try await Outbox.open(location)
                            _ = try await outbox.readEntries()
                            _ = try await outbox.readOutcomes()
                            _ = await outbox.drop("none")
                            return await outbox.clear()
                        }.value
                    }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(counts == Array(repeating: 0, count: 8))
            #expect(ContinuousClock.now - started < .seconds(5), "no call waited out the timeout")
        }
    }

    /// Subscribing to an engine's outbox events opens nothing: with the server down, the stream is there
    /// at once, and it carries the events once the outbox works.
    @Test(.postgres(minutes: 6)) func outboxEventsSubscribeWithoutOpeningTheOutbox() async throws {
        try await OutboxPostgresTests.withServer { server in
            let origin = Origin()
            try await server.halt()
            let (engine, _, running) = OutboxPostgresTests.instance(
                server, origin, reachability: ManualReachability(.unreachable), replays: false, timeout: .seconds(1))
            defer { running.cancel() }
            let started = ContinuousClock.now
            let events = engine.outboxEvents
            #expect(ContinuousClock.now - started < .milliseconds(500))
            try await server.resume()
            let operation = OutboxPostgresTests.freeze(engine, "orders/evented")
            var iterator = events.makeAsyncIterator()
            let first = await iterator.next()
            if case .frozen(let entry)? = first {
                #expect(entry.id == operation.outboxID)
            } else {
                Issue.record("expected a frozen event, got \(String(describing: first))")
            }
        }
    }

    /// Freezes into an outbox whose server is down wait on that outbox's queue only: an engine of the same
    /// process freezing into an SQLite outbox is not held up behind them.
    @Test(.postgres(minutes: 6)) func anOutboxWaitingForItsServerHoldsUpNoOtherOutbox() async throws {
        try await OutboxPostgresTests.withServer { server in
            let origin = Origin()
            let (fleet, _, running) = OutboxPostgresTests.instance(
                server, origin, reachability: ManualReachability(.unreachable), replays: false, timeout: .seconds(3))
            defer { running.cancel() }
            let first = OutboxPostgresTests.freeze(fleet, "orders/first")
            #expect(await eventually { first.state == .frozen })
            try await server.halt()
            let stuck = (1...3).map { OutboxPostgresTests.freeze(fleet, "orders/stuck-\($0)") }   // 3 s each, one after another
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-io-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: directory) }
            let local = NetworkEngine.fake(origin.transport) {
                $0.reachability = ManualReachability(.unreachable)
                $0.outbox = .sqlite(directory: directory)
            }
            let started = ContinuousClock.now
            let mine = local.operation(path: "local", method: .post, body: .text("kept"))
            mine.isFreezable = true
            local.enqueue(mine)
            #expect(await eventually(timeout: .seconds(5)) { mine.state == .frozen })
            #expect(ContinuousClock.now - started < .seconds(2), "not behind the other outbox's 9 s of waiting")
            for operation in stuck {
                #expect(await failure(of: operation)?.code == .outboxUnavailable)
            }
            try await server.resume()
            withExtendedLifetime((fleet, local)) {}
        }
    }

    /// A table of version 1 (no lanes index, no chunks) with a row in it is brought to version 3 when an
    /// instance of this version opens it, and its row is claimed as before.
    @Test(.postgres(minutes: 6)) func aVersionOneTableIsMigratedAndKeepsItsRows() async throws {
        try await OutboxPostgresTests.withServer { server in
            let (old, runningOld) = try await Self.stores(server, count: 1, name: "legacy")
            defer { for task in runningOld { task.cancel() } }
            let row = OutboxStoreContractTests.record("legacy", lane: "a")
            _ = try await offThePool { try old[0].insertFrozen(row, bytes: nil, source: nil, limit: 0) }
            _ = try await server.psql("""
                DROP INDEX "courier_outbox_legacy$lanes"; DROP TABLE "courier_outbox_legacy$bodies";
                ALTER TABLE "courier_outbox_legacy" DROP COLUMN body_length;
                UPDATE courier_outbox_migrations SET version = 1 WHERE outbox = 'legacy'
                """)
            let (new, runningNew) = try await Self.stores(server, count: 1, name: "legacy")
            defer { for task in runningNew { task.cancel() } }
            #expect(try await server.psql("SELECT version FROM courier_outbox_migrations WHERE outbox = 'legacy'") == "3\n")
            #expect(try await server.psql("SELECT count(*) FROM pg_indexes WHERE indexname = 'courier_outbox_legacy$lanes'") == "1\n")
            #expect(try await server.psql("SELECT to_regclass('\"courier_outbox_legacy$bodies\"') IS NOT NULL") == "t\n", "version 3: the chunks' table")
            #expect(OutboxStoreContractTests.sent(await Self.claim(new[0])) == "legacy")
        }
    }
}
