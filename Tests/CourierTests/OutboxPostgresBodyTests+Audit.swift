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
    @Test(.timeLimit(.minutes(3))) func theAuditSeesCommitsTheServerHoldsAndNoOtherOutboxs() async throws {
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
    @Test(.timeLimit(.minutes(3))) func aBodyTheOutboxCannotReadBacksOffWhileTheHostAnswers() async throws {
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
}
