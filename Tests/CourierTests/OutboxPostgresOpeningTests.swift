import CourierTestServer
import Foundation
import PostgresNIO
import Testing
@testable import Courier
@testable import CourierPostgres

/// Opening one PostgreSQL outbox from several engines of a process at once.
@Suite("Outbox on PostgreSQL: opening")
struct OutboxPostgresOpeningTests {
    /// Two engines on one client and outbox name, started together, each freezing at once: the second
    /// opening waits for the first's migration instead of failing (one opening at a time per outbox), and
    /// both requests are frozen.
    @Test(.postgres(minutes: 2)) func enginesOpeningOneOutboxTogetherBothFreeze() async throws {
        try await OutboxPostgresTests.withServer { server in
            let client = server.makeClient()
            let running = Task { await client.run() }
            defer { running.cancel() }
            let engines = (0..<2).map { _ in
                NetworkEngine(baseURL: "http://127.0.0.1:9", configuration: .init {
                    $0.reachability = ManualReachability(.unreachable)
                    $0.outbox = .postgres(client: client, name: "together", timeout: .seconds(5))
                }, queue: NetworkQueue())
            }
            let operations = engines.enumerated().map { index, engine in
                let op = engine.operation(path: "orders", method: .post, body: .data(Data("\(index)".utf8)))
                op.isFreezable = true
                return op
            }
            for (engine, op) in zip(engines, operations) { engine.enqueue(op) }
            let settled = await eventually(timeout: .seconds(20)) { operations.allSatisfy { $0.state == .frozen || $0.isFinished } }
            #expect(settled)
            for op in operations where op.isFinished {
                Issue.record("not frozen: \(String(describing: await failure(of: op)))")
            }
            let rows = try await server.psql(#"SELECT count(*) FROM "courier_outbox_together""#)
            #expect(rows == "2\n")
        }
    }
}
