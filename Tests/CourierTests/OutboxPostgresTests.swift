import CourierTestServer
import Foundation
import NIOConcurrencyHelpers
import PostgresNIO
import Testing
@testable import Courier
@testable import CourierPostgres

/// Issue 26: engines sharing one PostgreSQL outbox, as instances of a service do: what one froze another
/// delivers (woken by `NOTIFY`, not by polling), and the one whose operation waits learns the outcome; a
/// server that goes away makes freezes fail with a typed error (never reported frozen, then lost) and
/// pauses replay, which resumes by itself.
@Suite("Outbox on PostgreSQL: engines as instances of a service")
struct OutboxPostgresTests {
    /// An origin that records the idempotency keys it receives and answers 201.
    final class Origin: Sendable {
        let keys = Recorder<String>()
        let transport: FakeTransport

        init() {
            let keys = keys
            transport = FakeTransport { request in
                keys.append(request.headers[.idempotencyKey] ?? "none")
                return FakeTransport.reply(status: 201, body: "{}")
            }
        }
    }

    /// Runs `body` with a fresh server, then stops it.
    static func withServer(_ body: (PostgresServer) async throws -> Void) async throws {
        guard PostgresServer.isAvailable else {
            try #require(!PostgresServer.isRequired, "COURIER_REQUIRE_POSTGRES=1 but PostgreSQL is not installed")
            return
        }
        try await PostgresServer.with(body)
    }

    /// An instance: its own client (so its own store and connections), an engine on the shared outbox.
    static func instance(
        _ server: PostgresServer, _ origin: Origin, reachability: ManualReachability, replays: Bool = true,
        timeout: Duration = .seconds(15)
    ) -> (NetworkEngine, PostgresClient, Task<Void, Never>) {
        instance(server, transport: origin.transport, reachability: reachability, replays: replays, timeout: timeout)
    }

    /// An instance whose origin is `transport`, with leases of `lease`, its client at most `connections` connections.
    static func instance(
        _ server: PostgresServer, transport: FakeTransport, reachability: ManualReachability, replays: Bool = true,
        timeout: Duration = .seconds(15), lease: Duration = .seconds(5), connections: Int = 20
    ) -> (NetworkEngine, PostgresClient, Task<Void, Never>) {
        let client = server.makeClient(connections: connections)
        let running = Task { await client.run() }
        let engine = NetworkEngine.fake(transport) {
            $0.reachability = reachability
            $0.outbox = .postgres(client: client, name: "orders", timeout: timeout)
            $0.outboxName = "orders"
            $0.replaysOutbox = replays
            $0.outboxRetry = OutboxRetry(initialDelay: .milliseconds(50), maximumDelay: .milliseconds(200), lease: lease)
        }
        return (engine, client, running)
    }

    static func freeze(_ engine: NetworkEngine, _ path: String) -> NetworkOperation {
        let operation = engine.operation(path: path, method: .post, body: .json(["item": path]))
        operation.isFreezable = true
        operation.setHeader("Bearer instance-secret", forName: "Authorization")
        engine.enqueue(operation)
        return operation
    }

    @Test(.postgres(minutes: 6)) func whatOneInstanceFrozeAnotherDeliversAndTheFirstLearnsTheOutcome() async throws {
        try await Self.withServer { server in
            let origin = Origin()
            // Instance A cannot reach the origin and does not replay; instance B can, and waits idle.
            let (a, _, runningA) = Self.instance(server, origin, reachability: ManualReachability(.unreachable), replays: false)
            let (b, _, runningB) = Self.instance(server, origin, reachability: ManualReachability(.reachable(via: .wired)))
            defer { runningA.cancel(); runningB.cancel() }
            _ = await offThePool { b.outbox?.entries.count }   // B's replayer starts and listens before anything is frozen
            let operations = (1...5).map { Self.freeze(a, "orders/\($0)") }
            // Each is committed and reported frozen by A, then delivered by B without a poll (B was idle),
            // and A's waiting operation hears the outcome B recorded.
            for operation in operations {
                let response = try await operation.response()
                #expect(response.statusCode == 201)
            }
            let keys = origin.keys.all
            #expect(keys.count == 5 && Set(keys).count == 5, "each idempotency key once: \(keys)")
            let dump = try await server.psql("SELECT headers FROM \"courier_outbox_orders\"")
            #expect(!dump.contains("instance-secret"), "no credential in the table")
            let finished = await offThePool { b.outbox?.outcomes.count }
            #expect(finished == 5)
        }
    }

    /// The freeze during the outage fails after the outbox's timeout (the client's pool waits for a
    /// connection rather than failing at once); replay of what was frozen before resumes once the server is
    /// back, without anyone asking.
    @Test(.postgres(minutes: 6))
    func aServerOutageFailsFreezesWithATypedErrorAndReplayResumesByItself() async throws {
        try await Self.withServer { server in
            let origin = Origin()
            let reachability = ManualReachability(.unreachable)
            let (engine, _, running) = Self.instance(server, origin, reachability: reachability, timeout: .seconds(2))
            defer { running.cancel() }
            let kept = Self.freeze(engine, "orders/kept")
            #expect(await eventually { kept.state == .frozen })

            try await server.halt()
            let lost = Self.freeze(engine, "orders/during-outage")
            let error = await failure(of: lost)
            #expect(error?.code == .outboxUnavailable, "a typed error, not frozen: \(String(describing: error))")
            #expect(lost.state != .frozen)
            #expect(error?.message.contains("did not answer within 2 s") == true, "\(String(describing: error))")

            // The origin comes back while the server is still down: replay waits, nothing is lost.
            reachability.setStatus(.reachable(via: .wired))
            try await Task.sleep(for: .milliseconds(500))
            #expect(origin.keys.all.isEmpty)
            try await server.resume()
            let response = try await kept.response()
            #expect(response.statusCode == 201)
            #expect(origin.keys.all.count == 1)
            let again = Self.freeze(engine, "orders/after")
            #expect(try await again.response().statusCode == 201)
            // The request whose freeze failed was never written (or was removed again): never sent.
            try await Task.sleep(for: .milliseconds(300))
            #expect(origin.keys.all.count == 2, "\(origin.keys.all)")
            #expect(try await server.psql("SELECT count(*) FROM \"courier_outbox_orders\" WHERE url LIKE '%during-outage%'") == "0\n")
        }
    }

    /// An instance started while the server is down (its outbox cannot be opened yet) replays once the
    /// server is back, without freezing anything itself.
    @Test(.postgres(minutes: 6)) func anInstanceStartedDuringAnOutageReplaysOnceItIsOver() async throws {
        try await Self.withServer { server in
            let origin = Origin()
            let (a, _, runningA) = Self.instance(server, origin, reachability: ManualReachability(.unreachable), replays: false)
            defer { runningA.cancel() }
            let kept = Self.freeze(a, "orders/kept")
            #expect(await eventually { kept.state == .frozen })
            try await server.halt()
            let (b, _, runningB) = Self.instance(server, origin, reachability: ManualReachability(.reachable(via: .wired)), timeout: .seconds(1))
            defer { runningB.cancel() }
            try await Task.sleep(for: .seconds(2))
            try await server.resume()
            #expect(try await kept.response().statusCode == 201)
            #expect(origin.keys.all.count == 1)
            withExtendedLifetime(b) {}
        }
    }

    @Test(.postgres(minutes: 6)) func twoInstancesClaimingAtOnceNeverClaimOneRowTwice() async throws {
        try await Self.withServer { server in
            let clients = [server.makeClient(), server.makeClient()]
            let running = clients.map { client in Task { await client.run() } }
            defer { for task in running { task.cancel() } }
            let stores = try await offThePool { () throws -> [PostgresOutboxStore] in
                try clients.map { try PostgresOutboxStore.open(client: $0, name: "race", location: URL(string: "postgres:test")!, logger: nil) }
            }
            let pipeline = OutboxStoreContractTests.pipeline
            _ = try await offThePool {
                for index in 0..<40 {
                    _ = try stores[0].insertFrozen(
                        OutboxStoreContractTests.record("r\(index)", lane: "lane-\(index % 20)"), bytes: nil, source: nil, limit: 0)
                }
            }
            let claimed = NIOLockedValueBox<[String]>([])
            await withTaskGroup(of: Void.self) { group in
                for store in stores {
                    group.addTask {
                        await offThePool {
                            for _ in 0..<30 {
                                if case .head(_, .send, let record) = store.claimHead(
                                    pipeline, claim: ReplayStateMachine.Claim(), now: Date().timeIntervalSince1970, lease: 60)
                                {
                                    claimed.withLockedValue { $0.append(record.id) }
                                }
                            }
                        }
                    }
                }
            }
            let ids = claimed.withLockedValue { $0 }
            #expect(ids.count == 20, "one head per lane, each claimed once: \(ids.count)")
            #expect(Set(ids).count == ids.count, "no row claimed by both")
        }
    }
}
