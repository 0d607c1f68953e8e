import ArgumentParser
import Courier
import CourierPostgres
import CourierTestServer
import Foundation
import PostgresNIO

/// Issue 26: the outbox on PostgreSQL. How fast requests are frozen into it (against the SQLite outbox of a
/// data directory), and how fast 1, 2 and 4 instance processes drain it together. The cluster is a
/// throwaway one (`initdb` in a temporary folder, 127.0.0.1, `fsync` and `synchronous_commit` on), made
/// when the first of these scenarios runs and removed at the end.
enum Fleet {
    /// The cluster, started on first use.
    actor Cluster {
        private var started: PostgresServer?

        func server() async throws -> PostgresServer {
            if let started { return started }
            guard PostgresServer.isAvailable else { throw BenchError("PostgreSQL is not installed (apt-get install postgresql)") }
            let server = try await PostgresServer.start(durable: true)
            started = server
            return server
        }

        func stop() async {
            await started?.stop()
            started = nil
        }
    }

    static let cluster = Cluster()

    static func client(_ server: PostgresServer) -> PostgresClient {
        PostgresClient(configuration: .init(
            host: "127.0.0.1", port: server.port, username: PostgresServer.user, password: PostgresServer.password,
            database: "postgres", tls: .disable))
    }

    static var unavailable: String? { PostgresServer.isAvailable ? nil : "PostgreSQL is not installed" }

    // MARK: Freezing

    static func freezeScenario(count: Int) -> Scenario {
        Scenario(
            name: "Outbox freezes",
            details: "\(count) freezable POSTs (a 40-byte JSON body) enqueued at once while the host is unreachable; the time until every one is committed (`onFrozen`): the SQLite outbox of a data directory, and a PostgreSQL outbox on 127.0.0.1 (fsync and synchronous_commit on)",
            metrics: [Metric(name: "freezes/s", unit: "requests committed per second", higherIsBetter: true)],
            baseline: "SQLite (data directory)",
            contenders: [
                Contender("SQLite (data directory)") {
                    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-bench-fleet-\(UUID().uuidString)")
                    defer { try? FileManager.default.removeItem(at: directory) }
                    return try await freeze(count: count, outbox: .sqlite(directory: directory))
                },
                Contender("PostgreSQL (loopback)", unavailable: unavailable) {
                    let server = try await cluster.server()
                    let client = client(server)
                    let running = Task { await client.run() }
                    defer { running.cancel() }
                    let name = "freeze_\(UUID().uuidString.prefix(8).lowercased())"
                    defer { Task { _ = try? await server.psql("DROP TABLE courier_outbox_\(name)") } }
                    return try await freeze(count: count, outbox: .postgres(client: client, name: name))
                },
            ])
    }

    static func freeze(count: Int, outbox: OutboxLocation) async throws -> Figures {
        let engine = NetworkEngine(baseURL: "https://api.example.com", configuration: .init {
            $0.reachability = ManualReachability(.unreachable)
            $0.outbox = outbox
            $0.replaysOutbox = false
        }, queue: NetworkQueue())
        _ = engine.outbox   // opened (and its table made) before the clock starts
        let operations = (0..<count).map { n -> NetworkOperation in
            let operation = engine.operation(path: "orders", method: .post, body: .json(["order": "\(n)", "note": "benchmark"]))
            operation.isFreezable = true
            return operation
        }
        let started = Machine.now
        try await freezeAll(operations, on: engine)
        let elapsed = Machine.now - started
        return ["freezes/s": Double(count) / elapsed]
    }

    // MARK: Replaying

    static func replayScenario(rows: Int, origin: TestServer) -> Scenario {
        let instances = [1, 2, 4]
        return Scenario(
            name: "Outbox replay on PostgreSQL",
            details: "\(rows) frozen POSTs over 24 ordering keys in one PostgreSQL outbox, drained by 1, 2 or 4 instance processes (`courier-bench outbox-instance`, each an engine replaying the outbox, 6 ordering keys at a time) against CourierTestServer in this process; from the first process's start to the last one's exit (process start and connection included). The origin must see each idempotency key exactly once",
            metrics: [Metric(name: "deliveries/s", unit: "requests delivered per second", higherIsBetter: true)],
            baseline: "1 instance",
            contenders: instances.map { count in
                Contender(count == 1 ? "1 instance" : "\(count) instances", unavailable: unavailable) {
                    try await replay(rows: rows, instances: count, origin: origin)
                }
            })
    }

    /// The name of the outbox the instances drain.
    static let replayName = "bench_replay"

    /// Rows are frozen once (through an engine like the instances', so theirs to claim) and kept in a
    /// template table; each run starts from a copy of it.
    static func replay(rows: Int, instances: Int, origin: TestServer) async throws -> Figures {
        let server = try await cluster.server()
        let table = "courier_outbox_\(replayName)"
        if try await server.psql("SELECT to_regclass('bench_replay_template') IS NOT NULL") != "t\n" {
            try await freezeTemplate(rows: rows, server: server, origin: origin)
            _ = try await server.psql("CREATE TABLE bench_replay_template AS SELECT * FROM \(table)")
        }
        _ = try await server.psql("TRUNCATE \(table) CASCADE; INSERT INTO \(table) SELECT * FROM bench_replay_template")
        origin.resetStatistics()
        let started = Machine.now
        let processes = try (0..<instances).map { _ in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
            process.arguments = ["outbox-instance", origin.baseURL, server.url, replayName]
            process.environment = ProcessInfo.processInfo.environment.merging(["PGPASSWORD": PostgresServer.password]) { $1 }
            try process.run()
            return process
        }
        for process in processes { await process.exitedOffThePool() }
        let elapsed = Machine.now - started
        for process in processes where process.terminationStatus != 0 { throw BenchError("an instance exited with \(process.terminationStatus)") }
        let keys = origin.recordedRequests.map { $0.header("idempotency-key") ?? "" }
        guard origin.requestCount == rows, Set(keys).count == rows else {
            throw BenchError("the origin saw \(origin.requestCount) requests with \(Set(keys).count) distinct keys for \(rows) rows")
        }
        return ["deliveries/s": Double(rows) / elapsed]
    }

    static func freezeTemplate(rows: Int, server: PostgresServer, origin: TestServer) async throws {
        let client = client(server)
        let running = Task { await client.run() }
        defer { running.cancel() }
        let engine = instanceEngine(origin: origin.baseURL, client: client, name: replayName, replays: false)
        let operations = (0..<rows).map { n -> NetworkOperation in
            let operation = engine.operation(path: "anything/\(n)", method: .post, body: .text("row \(n)"))
            operation.isFreezable = true
            operation.orderingKey = "lane-\(n % 24)"
            return operation
        }
        try await freezeAll(operations, on: engine)
    }

    /// Enqueues every operation at once; returns when each is committed to the outbox.
    static func freezeAll(_ operations: [NetworkOperation], on engine: NetworkEngine) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group -> Void in
            for operation in operations {
                group.addTask { try await frozen(operation, on: engine) }
            }
            try await group.waitForAll()
        }
    }

    static func frozen(_ operation: NetworkOperation, on engine: NetworkEngine) async throws {
        let once = Once()
        let frozen: Bool = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            operation.onFrozen { _ in if once.claim() { continuation.resume(returning: true) } }
            operation.onError { _ in if once.claim() { continuation.resume(returning: false) } }
            engine.enqueue(operation)
        }
        if !frozen { throw BenchError("a request was not frozen") }
    }

    /// The engine of an instance (and of the template's freezing: the same configuration, so the same pipeline).
    static func instanceEngine(origin: String, client: PostgresClient, name: String, replays: Bool) -> NetworkEngine {
        NetworkEngine(baseURL: origin, configuration: .init {
            $0.reachability = ManualReachability(replays ? .reachable(via: .wired) : .unreachable)
            $0.outbox = .postgres(client: client, name: name)
            $0.replaysOutbox = replays
            $0.outboxRetry = OutboxRetry(initialDelay: .milliseconds(50), maximumDelay: .seconds(1), lease: .seconds(10))
        }, queue: NetworkQueue())
    }

    /// An instance: replays until nothing is pending, then exits.
    static func runInstance(origin: String, database: String, name: String) async throws {
        guard let components = URLComponents(string: database), let port = components.port else { throw BenchError("bad database URL") }
        let client = PostgresClient(configuration: .init(
            host: components.host ?? "127.0.0.1", port: port, username: PostgresServer.user,
            password: ProcessInfo.processInfo.environment["PGPASSWORD"], database: "postgres", tls: .disable))
        let running = Task { await client.run() }
        defer { running.cancel() }
        let engine = instanceEngine(origin: origin, client: client, name: name, replays: true)
        guard let outbox = engine.outbox else { throw BenchError("no outbox") }
        // Reading every pending row is the only public way to know the outbox is drained, and it is not
        // free: looked at each time this instance's replay goes idle (nothing left it could claim), not on a timer.
        while true {
            _ = await engine.flushOutbox()
            if try await outbox.readEntries().filter({ $0.state == .pending }).isEmpty { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        withExtendedLifetime(engine) {}
    }
}

/// Hidden: one instance of the replay scenario.
struct OutboxInstance: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "outbox-instance", shouldDisplay: false)
    @Argument var origin: String
    @Argument var database: String
    @Argument var name: String

    func run() async throws {
        try await Fleet.runInstance(origin: origin, database: database, name: name)
    }
}

extension Process {
    /// Waits for the process on a thread of its own (never a thread of the cooperative pool).
    func exitedOffThePool() async {
        await withCheckedContinuation { continuation in
            Thread {
                self.waitUntilExit()
                continuation.resume()
            }.start()
        }
    }
}
