import Courier
import CourierPostgres
import Foundation
import PostgresNIO

/// The child as one instance of a service sharing the PostgreSQL outbox `fleet` (see ``OutboxChild``).
struct Fleet {
    let base: String
    let location: OutboxLocation

    init(base: String, database: String) {
        guard let components = URLComponents(string: database), let host = components.host, let user = components.user else { exit(2) }
        var configuration = PostgresClient.Configuration(
            host: host, port: components.port ?? 5432, username: user, password: ProcessInfo.processInfo.environment["PGPASSWORD"],
            database: components.path.split(separator: "/").first.map(String.init) ?? user, tls: .disable)
        configuration.options.connectTimeout = .seconds(2)
        let client = PostgresClient(configuration: configuration)
        Task { await client.run() }
        self.base = base
        self.location = .postgres(client: client, name: "fleet", timeout: .seconds(3))
    }

    func engine(replays: Bool) -> NetworkEngine {
        NetworkEngine(baseURL: base, configuration: .init {
            $0.reachability = ManualReachability(replays ? .reachable(via: .wired) : .unreachable)
            $0.outbox = location
            $0.replaysOutbox = replays
            // Long enough that a renewal (every quarter of it) never misses under the thread sanitizer on
            // two loaded cores: with 3 s, a lease lapsed now and then and another instance resent a row that
            // was on its way (at least once, as designed, but the test counts resends only across kills).
            $0.outboxRetry = OutboxRetry(initialDelay: .milliseconds(10), maximumDelay: .milliseconds(200), lease: .seconds(10))
        }, queue: NetworkQueue())
    }

    /// The pending entries; waits out an outage of the server (the child never mistakes one for an empty outbox).
    func pending(_ outbox: Outbox) async -> [OutboxEntry] {
        while true {
            if let entries = try? await outbox.readEntries() { return entries.filter { $0.state == .pending } }
            try? await Task.sleep(for: .milliseconds(200))
        }
    }

    /// Freezes `fleet-0` to `fleet-(count - 1)`, skipping those already in the outbox; a freeze that fails
    /// with `outboxUnavailable` (the server away) is tried again. Prints how many failed so.
    func freeze(count: Int, pace: Duration) async -> Never {
        let engine = engine(replays: false)
        guard let outbox = engine.outbox else { exit(1) }
        let done = Set(await pending(outbox).map(\.idempotencyKey))
        var refused = 0
        for n in 0..<count where !done.contains("fleet-\(n)") {
            if pace > .zero { try? await Task.sleep(for: pace) }
            while true {
                // The origin answers after 20 ms: a kill then usually finds attempts on the wire.
                let operation = engine.operation(path: "delay/20", method: .post, body: .text("payload \(n)"))
                operation.isFreezable = true
                operation.orderingKey = "lane-\(n % 20)"
                operation.setHeader("fleet-\(n)", forName: "Idempotency-Key")
                let events = operation.events
                engine.enqueue(operation)
                var frozen = false
                for await event in events {
                    if case .frozen = event {
                        frozen = true
                        break
                    }
                    if case .failure(let error) = event {
                        guard error.code == .outboxUnavailable else {
                            FileHandle.standardError.write(Data("not frozen: \(error)\n".utf8))
                            exit(1)
                        }
                        break
                    }
                }
                if frozen { break }
                refused += 1
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
        print("frozen all; \(refused) freeze(s) refused while the server was away")
        exit(0)
    }

    /// Replays until nothing is pending (rows claimed by a killed instance come back when their lease expires).
    func replay() async -> Never {
        let engine = engine(replays: true)
        guard let outbox = engine.outbox else { exit(1) }
        // (Reading every pending row is the only public way to tell: not too often, it costs the replayers' CPU.)
        while !(await pending(outbox)).isEmpty {
            try? await Task.sleep(for: .milliseconds(500))
        }
        // The engine replays only while it lives: without this, it may be released after its last use
        // above, and its replayer with it as soon as nothing is on the wire (a lane left waiting for a
        // killed instance's lease to expire then waited forever).
        withExtendedLifetime(engine) {}
        print("replayed all")
        exit(0)
    }
}
