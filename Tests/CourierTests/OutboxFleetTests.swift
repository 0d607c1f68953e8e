@testable import Courier
import CourierTestServer
import Foundation
import NIOConcurrencyHelpers
import Testing

/// Issue 26's fleet: processes sharing one PostgreSQL outbox (`courier-outbox-child` with a `postgres://`
/// location, see Sources/CourierOutboxChild) while instances are killed with SIGKILL and the server is
/// restarted under them. Every frozen request reaches the origin; a key it sees twice was resent after a
/// kill or a restart (the answer of an attempt died with it), never otherwise; each ordering key's rows
/// arrive in order; nothing is left pending or claimed.
@Suite("Outbox on PostgreSQL: a fleet of processes, killed and restarted", .serialized)
struct OutboxFleetTests {
    /// What the origin received, checked against what was frozen.
    struct Delivery {
        let keys: [String]

        /// `fleet-N`'s N, in the order the origin received them.
        var numbers: [Int] { keys.compactMap { Int($0.dropFirst("fleet-".count)) } }

        /// The keys received more than once, each with the indexes of its receipts.
        var repeats: [String: [Int]] {
            var receipts: [String: [Int]] = [:]
            for (index, key) in keys.enumerated() { receipts[key, default: []].append(index) }
            return receipts.filter { $0.value.count > 1 }
        }

        /// Ordering keys whose rows did not arrive in order (`lane-N % 20`): a row may arrive again (resent),
        /// but never after a later row of its lane.
        var lanesOutOfOrder: [Int] {
            var last: [Int: Int] = [:]
            var broken: Set<Int> = []
            for number in numbers {
                if let previous = last[number % 20], previous > number { broken.insert(number % 20) }
                last[number % 20] = number
            }
            return broken.sorted()
        }
    }

    static func environment(_ server: PostgresServer) -> [String: String] { ["PGPASSWORD": PostgresServer.password] }

    /// Freezes `count` requests through a child process, one every `pace` milliseconds; returns how many
    /// freezes failed with `outboxUnavailable` (and were tried again).
    @discardableResult
    static func freeze(_ count: Int, pace: Int = 0, server: PostgresServer, origin: TestServer) async throws -> Int? {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("courier-fleet-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: output) }
        let frozen = try await OutboxCrashTests.runChild(
            ["freeze", origin.baseURL, server.url, "\(count)", "\(pace)"], environment: environment(server), output: output)
        #expect(frozen.status == 0, "the freezing child failed")
        // "frozen all; N freeze(s) refused while the server was away"
        let printed = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        return printed.split(separator: ";").last?.split(separator: " ").first.flatMap { Int($0) }
    }

    /// What is still pending in the table, and still leased.
    static func leftovers(_ server: PostgresServer) async throws -> (pending: String, leased: String) {
        let table = "\"courier_outbox_fleet\""
        return (try await server.psql("SELECT count(*) FROM \(table) WHERE outcome IS NULL"),
                try await server.psql("SELECT count(*) FROM \(table) WHERE lease_owner IS NOT NULL AND outcome IS NULL"))
    }

    @Test(.postgres(minutes: 8)) func fourInstancesDrainTwoThousandRowsWhileTwoAreKilled() async throws {
        try await OutboxPostgresTests.withServer { server in
            let origin = try await TestServer.start()
            defer { Task { try? await origin.shutdown() } }
            let count = 2000
            try await Self.freeze(count, server: server, origin: origin)
            #expect(origin.requestCount == 0, "nothing is sent while freezing")

            // Four instances at once; two are killed at random moments, each once the origin has seen a
            // random number of requests. The count right after each kill marks it.
            let marks = NIOLockedValueBox<[Int]>([])
            let targets = [Int.random(in: 100...700), Int.random(in: 700...1400)]
            let arguments = ["replay", origin.baseURL, server.url]
            let environment = Self.environment(server)
            async let first = OutboxCrashTests.runChild(
                arguments, environment: environment, killWhen: { origin.requestCount >= targets[0] },
                afterKill: { marks.withLockedValue { $0.append(origin.requestCount) } })
            async let second = OutboxCrashTests.runChild(
                arguments, environment: environment, killWhen: { origin.requestCount >= targets[1] },
                afterKill: { marks.withLockedValue { $0.append(origin.requestCount) } })
            async let third = OutboxCrashTests.runChild(arguments, environment: environment)
            async let fourth = OutboxCrashTests.runChild(arguments, environment: environment)
            let runs = try await [first, second, third, fourth]
            #expect(runs[0].killed && runs[1].killed, "two instances were killed mid-way")
            #expect(runs[2].status == 0 && runs[3].status == 0, "the survivors drained the outbox")

            let delivery = Delivery(keys: origin.recordedRequests.map { $0.header("idempotency-key") ?? "" })
            #expect(Set(delivery.keys) == Set((0..<count).map { "fleet-\($0)" }), "every frozen request reached the origin")
            let kills = marks.withLockedValue { $0 }
            for (key, receipts) in delivery.repeats {
                // Sent again only after a kill: some kill came between two of its receipts.
                for (earlier, later) in zip(receipts, receipts.dropFirst()) {
                    #expect(kills.contains { $0 > earlier && $0 <= later }, "\(key) was sent twice without a kill in between")
                }
            }
            #expect(delivery.lanesOutOfOrder.isEmpty, "rows of one ordering key arrive in order")
            let (pending, leased) = try await Self.leftovers(server)
            #expect(pending == "0\n" && leased == "0\n", "nothing left pending (\(pending)) or claimed (\(leased))")
            print("fleet test: 4 instances, kills after \(kills) requests; \(delivery.keys.count) requests for \(count) keys, "
                + "\(delivery.repeats.count) key(s) resent across a kill")
        }
    }

    @Test(.postgres(minutes: 8)) func aServerRestartedWhileFreezingAndWhileReplayingLosesNothing() async throws {
        try await OutboxPostgresTests.withServer { server in
            let origin = try await TestServer.start()
            defer { Task { try? await origin.shutdown() } }
            let count = 300
            // Stopped for longer than the outbox's timeout (3 s in the child) while the child freezes, then
            // started again: the freezes meanwhile fail with outboxUnavailable (the child tries again, as a
            // service would); none reported frozen is lost.
            let outage = Task {
                try await Task.sleep(for: .milliseconds(Int.random(in: 200...600)))
                try await server.halt()
                try await Task.sleep(for: .seconds(4))
                try await server.resume()
            }
            let refused = try await Self.freeze(count, pace: 10, server: server, origin: origin)
            try await outage.value
            #expect((refused ?? 0) > 0, "freezes failed while the server was away: \(String(describing: refused))")

            // Restarted again while two instances replay.
            let mark = NIOLockedValueBox<Int?>(nil)
            let arguments = ["replay", origin.baseURL, server.url]
            let environment = Self.environment(server)
            async let first = OutboxCrashTests.runChild(arguments, environment: environment)
            async let second = OutboxCrashTests.runChild(arguments, environment: environment)
            let target = Int.random(in: 50...200)
            while origin.requestCount < target { try await Task.sleep(for: .milliseconds(5)) }
            mark.withLockedValue { $0 = origin.requestCount }
            try await server.restart()
            let afterRestart = origin.requestCount
            let runs = try await [first, second]
            #expect(runs.allSatisfy { $0.status == 0 }, "replay resumed by itself and drained the outbox")

            let delivery = Delivery(keys: origin.recordedRequests.map { $0.header("idempotency-key") ?? "" })
            #expect(Set(delivery.keys) == Set((0..<count).map { "fleet-\($0)" }), "every frozen request reached the origin")
            let restartedAt = mark.withLockedValue { $0 } ?? 0
            for (key, receipts) in delivery.repeats {
                // An outcome that could not be recorded while the server was away: resent after its lease.
                #expect(receipts.count == 2 && receipts[0] < afterRestart && receipts[1] >= restartedAt,
                        "\(key) was sent twice without the restart in between: \(receipts)")
            }
            #expect(delivery.lanesOutOfOrder.isEmpty, "rows of one ordering key arrive in order")
            let (pending, leased) = try await Self.leftovers(server)
            #expect(pending == "0\n" && leased == "0\n", "nothing left pending (\(pending)) or claimed (\(leased))")
            print("fleet test: \(refused ?? 0) freeze(s) refused during the outage; \(delivery.keys.count) requests for \(count) keys, "
                + "\(delivery.repeats.count) key(s) resent across the restart")
        }
    }
}
