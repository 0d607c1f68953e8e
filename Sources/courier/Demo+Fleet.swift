import Courier
import CourierPostgres
import CourierTestServer
import Foundation
import Logging
import PostgresNIO

extension Demo {
    /// Scene 8: a fleet. Two instances of a service share one outbox on PostgreSQL. Instance A cannot reach
    /// the partner and freezes its webhooks; instance B, which never saw them, delivers them when the
    /// partner is back, each Idempotency-Key once; A's waiting operations learn the outcomes B recorded.
    nonisolated func fleet() async throws {
        say("8. A fleet: two instances of a service, one outbox on PostgreSQL")
        guard PostgresServer.isAvailable else {
            say("   skipped: PostgreSQL's server programs (initdb, pg_ctl) are not installed (scripts/test installs them)\n")
            return
        }
        let database = try await PostgresServer.start()
        do {
            try await fleet(on: database)
        } catch {
            await database.stop()
            throw error
        }
        await database.stop()
    }

    private nonisolated func fleet(on database: PostgresServer) async throws {
        say("   a throwaway PostgreSQL server on port \(database.port)")
        let port = try await TestServer.vacantPort()
        // Each instance has its own client (its own connections), as two processes would.
        func instance(reachability: ManualReachability) -> (NetworkEngine, PostgresClient) {
            var options = PostgresClient.Configuration(
                host: "127.0.0.1", port: database.port, username: PostgresServer.user, password: PostgresServer.password,
                database: "postgres", tls: .disable)
            options.options.maximumConnections = 8
            let client = PostgresClient(configuration: options)
            let engine = NetworkEngine(host: "127.0.0.1", port: port, isSecure: false, configuration: .init {
                $0.outbox = .postgres(client: client, name: "webhooks")
                $0.reachability = reachability
                $0.outboxRetry = OutboxRetry(initialDelay: .milliseconds(100), maximumDelay: .milliseconds(300))
                $0.credentialProvider = { _ in [.authorization: "Bearer partner-token"] }   // never written to the table
            }, queue: NetworkQueue())
            return (engine, client)
        }
        let partnerForA = ManualReachability(.unreachable)
        let partnerForB = ManualReachability(.unreachable)
        let (a, clientA) = instance(reachability: partnerForA)
        let (b, clientB) = instance(reachability: partnerForB)
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await clientA.run() }
            group.addTask { await clientB.run() }
            defer { group.cancelAll() }
            let webhooks = (1...3).map { n in
                let op = a.operation(path: "/anything/webhooks", method: .post, body: .json(["order": "\(n)"]))
                op.isFreezable = true
                a.enqueue(op)
                return op
            }
            for op in webhooks {
                while op.state != .frozen, !op.isFinished { try await Task.sleep(for: .milliseconds(20)) }
            }
            let rows = try await Outbox.open(.postgres(client: clientB, name: "webhooks")).readEntries()
            say("   instance A cannot reach the partner: \(webhooks.count) webhooks frozen; instance B reads \(rows.count) rows in the shared table")
            let partner = try await TestServer.start(port: port)
            partnerForB.setStatus(.reachable(via: .wired))
            say("   the partner is back; only instance B can reach it, and it delivers")
            var statuses: [Int] = []
            for op in webhooks { statuses.append(try await op.response().statusCode) }
            say("   instance A's waiting operations learn the outcomes B recorded: \(statuses.map(String.init).joined(separator: ", "))")
            var counts: [String: Int] = [:]
            for request in partner.recordedRequests { counts[request.header("idempotency-key") ?? "none", default: 0] += 1 }
            let once = counts.count == webhooks.count && counts.values.allSatisfy { $0 == 1 }
            let signed = partner.recordedRequests.allSatisfy { $0.header("authorization") == "Bearer partner-token" }
            let dump = try await database.dump()
            say("   the partner saw \(counts.count) Idempotency-Keys, \(once ? "each exactly once" : "NOT each once: \(counts)"), "
                + "\(signed ? "each with B's token" : "SOME WITHOUT THE TOKEN"); the token is \(dump.contains("partner-token") ? "IN" : "not in") the table\n")
            try await partner.shutdown()
            withExtendedLifetime(b) {}   // B's engine replays: alive until the end of the scene
        }
    }
}
