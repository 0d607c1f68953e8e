import CourierTestServer
import Foundation
import PostgresNIO
import Testing
@testable import Courier
@testable import CourierPostgres

/// The audit of lost statements, and a frozen body the outbox cannot read back, against a real server.
extension OutboxPostgresBodyTests {
    static func count(_ server: PostgresServer, _ sql: String) async -> Int {
        Int(((try? await server.psql(sql)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    /// Review 8: with commits stalled on the server (synchronous replication whose standby is away), four
    /// file freezes fail at their timeout and each leaves its COMMIT waiting, holding a connection. The
    /// audit counted sessions by statements naming the table, and a COMMIT did not: after a minute it saw
    /// none of them, freed their four places, and four more freezes took four more connections. Every
    /// statement of the outbox now names it, its transactions' BEGIN and COMMIT too; a statement of
    /// another outbox whose name starts with this one's is not counted.
    @Test(.postgres(minutes: 3)) func theAuditSeesCommitsTheServerHoldsAndNoOtherOutboxs() async throws {
        try await Self.withUploads { server, origin, folder in
            let (engine, running) = await Self.slowInstance(server, origin: origin)
            defer { running.cancel() }
            _ = try await server.psql("ALTER SYSTEM SET synchronous_standby_names = 'nosuch'")
            _ = try await server.psql("SELECT pg_reload_conf()")
            try await Task.sleep(for: .milliseconds(500))
            var operations: [NetworkOperation] = []
            for index in 0..<4 {
                let file = folder.appendingPathComponent("f\(index).bin")
                try Data(count: 1000).write(to: file)
                let op = engine.operation(path: "echo", method: .post, body: .file(file))
                op.isFreezable = true
                engine.enqueue(op)
                operations.append(op)
            }
            let failed = await eventually(timeout: .seconds(30)) { operations.allSatisfy(\.isFinished) }
            #expect(failed, "\(operations.map(\.state))")
            for op in operations where op.isFinished {
                let error = await failure(of: op)
                #expect(error?.code == .outboxUnavailable, "\(String(describing: error))")
            }
            let waiting = "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'"
            #expect(await Self.count(server, waiting) == 4, "four commits wait for the standby")
            // A statement of the outbox `uploads2` (its name starts with this one's) runs meanwhile.
            let other = Task { _ = try? await server.psql(#"SELECT pg_sleep(4) /* "courier_outbox_uploads2" */"#) }
            try await Task.sleep(for: .seconds(1))
            let auditor = server.makeClient()
            let auditing = Task { await auditor.run() }
            defer { auditing.cancel() }
            let seen = try await PostgresOutboxSchema(name: "uploads").statementsOnServer(client: auditor)
            #expect(seen == 4, "the audit sees the four commits, and not the other outbox's statement: \(seen)")
            other.cancel()
            _ = try await server.psql("ALTER SYSTEM RESET synchronous_standby_names")
            _ = try await server.psql("SELECT pg_reload_conf()")
            let released = await Self.until(.seconds(10)) { await Self.count(server, waiting) == 0 }
            #expect(released)
        }
    }

    /// Review 8: a frozen file whose chunks the outbox cannot read back in time (each read takes 1.5 s, the
    /// timeout is 1 s) while the app's live requests to the same host are answered every 200 ms. Each try
    /// is the outbox's failure: it backs off (4 s, then 8 s), and an answer from the host does not end the
    /// backoff (it took the failure for a host away and tried again on every answer: an aborted POST to the
    /// origin each time).
    @Test(.postgres(minutes: 3)) func aBodyTheOutboxCannotReadBacksOffWhileTheHostAnswers() async throws {
        try await Self.withUploads { server, origin, folder in
            let client = server.makeClient()
            let running = Task { await client.run() }
            defer { running.cancel() }
            let (engine, reachability, op) = try await Self.frozenFile(
                100_000, in: folder, origin: origin, client: client, retry: OutboxRetry(initialDelay: .seconds(4), maximumDelay: .seconds(60)))
            _ = try await server.psql(#"ALTER TABLE "courier_outbox_uploads$bodies" RENAME TO slow_bodies"#)
            _ = try await server.psql("""
                CREATE FUNCTION slow() RETURNS boolean AS $$ BEGIN PERFORM pg_sleep(1.5); RETURN true; END $$ LANGUAGE plpgsql VOLATILE;
                CREATE VIEW "courier_outbox_uploads$bodies" AS SELECT id, part, chunk FROM slow_bodies WHERE slow();
                CREATE TABLE tries (at timestamptz DEFAULT clock_timestamp());
                CREATE FUNCTION counted() RETURNS trigger AS $$ BEGIN INSERT INTO tries DEFAULT VALUES; RETURN NEW; END $$ LANGUAGE plpgsql;
                CREATE TRIGGER counted AFTER UPDATE ON "courier_outbox_uploads" FOR EACH ROW
                    WHEN (NEW.next_attempt_at IS DISTINCT FROM OLD.next_attempt_at) EXECUTE FUNCTION counted();
                """)
            let traffic = Task {
                var index = 0
                while !Task.isCancelled {
                    index += 1
                    let live = engine.operation(path: "echo", params: ["n": .int(index)])
                    engine.enqueue(live)
                    _ = try? await live.response()
                    try? await Task.sleep(for: .milliseconds(200))
                }
            }
            reachability.setStatus(.reachable(via: .wired))
            try await Task.sleep(for: .seconds(12))
            traffic.cancel()
            let tries = await Self.count(server, "SELECT count(*) FROM tries")
            let answered = origin.recordedRequests.filter { $0.method == "GET" }.count
            #expect(answered > 20, "the host answered the live requests: \(answered)")
            #expect((1...4).contains(tries), "tried at 0 s, after 2–4 s and after 4–8 s more at most: \(tries) tries")
            let attempts = await Self.count(server, #"SELECT attempts FROM "courier_outbox_uploads""#)
            #expect(attempts == 0, "none of them is one of the request's attempts")
            #expect(op.state == .frozen, "still frozen, to be sent once the outbox reads it back")
        }
    }

    /// Runs `sql` with psql in database `database` of `server`.
    static func psql(_ server: PostgresServer, database: String, _ sql: String) async throws -> String {
        try await PostgresServer.run("/usr/bin/psql", ["-h", "127.0.0.1", "-p", "\(server.port)", "-U", PostgresServer.user, "-d", database, "-At", "-c", sql],
                                     environment: ["PGPASSWORD": PostgresServer.password])
    }

    /// Review 9: `pg_stat_activity` covers the whole server. An outbox of the same name in another database
    /// (another app, staging beside production, a database per tenant), its table locked and a statement
    /// waiting on it, is not counted by this outbox's audit (it was: its old statements' places were
    /// never freed while the other was busy).
    @Test(.postgres(minutes: 2)) func theAuditDoesNotCountAnOutboxOfTheSameNameInAnotherDatabase() async throws {
        try await OutboxPostgresTests.withServer { server in
            let client = server.makeClient()
            let running = Task { await client.run() }
            defer { running.cancel() }
            let schema = try PostgresOutboxSchema(name: "uploads")
            try await schema.migrate(client)
            _ = try await server.psql("CREATE DATABASE other")
            _ = try await Self.psql(server, database: "other", #"CREATE TABLE "courier_outbox_uploads" (id text)"#)
            let locker = Task { _ = try? await Self.psql(server, database: "other", #"BEGIN; LOCK TABLE "courier_outbox_uploads"; SELECT pg_sleep(5); COMMIT"#) }
            try await Task.sleep(for: .seconds(1))
            let waiting = Task { _ = try? await Self.psql(server, database: "other", #"SELECT count(*) FROM "courier_outbox_uploads""#) }
            try await Task.sleep(for: .seconds(1))
            let there = await Self.count(server, #"SELECT count(*) FROM pg_stat_activity WHERE datname = 'other' AND query LIKE '%"courier_outbox_uploads"%'"#)
            #expect(there == 2, "the other database's outbox is busy: \(there)")
            let seen = try await schema.statementsOnServer(client: client)
            #expect(seen == 0, "statements of another database's outbox are not this one's: \(seen)")
            _ = await locker.value
            _ = await waiting.value
        }
    }

    /// Review 9: another session holds the migrations' advisory lock (an instance's migration stuck behind a
    /// lock, an operator) while an app with an 8-connection client freezes ten requests, its outbox's
    /// timeout 1 s. Each freeze opened the outbox again, and each opening's migration stayed on the server
    /// waiting for the lock, one more connection each, until the app's pool was empty. Now one opening at
    /// a time waits on the server; the freezes fail typed, the app's own query is answered, and once the
    /// lock goes the outbox opens.
    @Test(.postgres(minutes: 2)) func openingsBlockedOnTheMigrationLockHoldOneConnection() async throws {
        try await OutboxPostgresTests.withServer { server in
            let holder = Task { _ = try? await server.psql("SELECT pg_advisory_lock(hashtext('courier_outbox_migrations')), pg_sleep(60)") }
            try await Task.sleep(for: .seconds(1))
            let client = server.makeClient(connections: 8)
            let running = Task { await client.run() }
            defer { running.cancel() }
            let engine = NetworkEngine(baseURL: "http://127.0.0.1:9", configuration: .init {
                $0.reachability = ManualReachability(.unreachable)
                $0.outbox = .postgres(client: client, name: "uploads", timeout: .seconds(1))
            }, queue: NetworkQueue())
            func freeze(_ index: Int) async -> NetworkOperation {
                let op = engine.operation(path: "echo", method: .post, body: .data(Data("\(index)".utf8)))
                op.isFreezable = true
                engine.enqueue(op)
                _ = await eventually(timeout: .seconds(10)) { op.isFinished || op.state == .frozen }
                return op
            }
            for index in 0..<10 {
                let op = await freeze(index)
                #expect(op.isFinished && op.state != .frozen)
                if op.isFinished { #expect(await failure(of: op)?.code == .outboxUnavailable) }
            }
            let onTheLock = "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%pg_advisory_xact_lock%'"
            #expect(await Self.count(server, onTheLock) == 1, "one opening waits on the lock")
            let answered = await OutboxPostgresFaultTests.appQueryAnswered(client)
            #expect(answered, "the app's own query finds a connection")
            _ = try await server.psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(60)%' AND pid <> pg_backend_pid()")
            _ = await holder.value
            let opened = await Self.until(.seconds(10)) { await freeze(10).state == .frozen }
            #expect(opened, "the outbox opens once the lock goes")
        }
    }
}
