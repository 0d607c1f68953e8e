import CourierTestServer
import Foundation
import Testing

/// Issue 26 through the command line: `post --freezable` and `outbox` on a PostgreSQL outbox.
extension CLITests {
    /// How many requests the test freezes, as issue 26 asks: each is a `courier` process.
    static let postgresPosts = 20

    @Test(.postgres(minutes: 6)) func freezesGoToAPostgresOutboxAndTwoFlushesDeliverEachKeyOnce() async throws {
        guard PostgresServer.isAvailable else {
            try #require(!PostgresServer.isRequired, "COURIER_REQUIRE_POSTGRES=1 but PostgreSQL is not installed")
            return
        }
        try await PostgresServer.with { database in try await freezeAndFlush(database) }
    }

    private func freezeAndFlush(_ database: PostgresServer) async throws {
        let where_ = ["--database", database.url, "--password-file", database.passwordFile]
        let port = try await TestServer.vacantPort()
        let url = "http://127.0.0.1:\(port)/anything/orders"
        for index in 1...Self.postgresPosts {
            let frozen = try await courier(
                ["post", "--freezable", url, "-d", "item=\(index)", "-H", "Authorization: Bearer cli-pg-secret"] + where_)
            #expect(frozen.status == 0 && frozen.stdout.hasPrefix("frozen "), "\(frozen.stderr)")
        }
        let list = try await courier(["outbox", "list"] + where_)
        #expect(list.stdout.split(separator: "\n").count == Self.postgresPosts + 1, "\(list.stdout)\(list.stderr)")
        #expect(!(try await database.dump()).contains("cli-pg-secret"), "pg_dump holds no credential sent with -H")
        let withPassword = try await courier(["outbox", "list", "--database", "postgres://courier:pw@127.0.0.1:\(database.port)/postgres"])
        #expect(withPassword.status == 2 && withPassword.stderr.contains("PGPASSWORD"), "a password in the URL is refused")
        #expect(!withPassword.stderr.contains("pw@"), "and never echoed")
        // A server that refuses says why, at once: not a pool that waited out its timeout.
        let wrongPassword = try await courier(["outbox", "list", "--database", database.url], environment: ["PGPASSWORD": "not-it"])
        #expect(wrongPassword.status == 1 && wrongPassword.stderr.contains("password authentication failed"), "\(wrongPassword.stderr)")
        #expect(!wrongPassword.stderr.contains("not-it"))
        let nobody = try await TestServer.vacantPort()
        let refused = try await courier(["outbox", "list", "--password-file", database.passwordFile,
                                         "--database", "postgres://courier@127.0.0.1:\(nobody)/postgres"])
        #expect(refused.status == 1 && refused.stderr.contains("cannot connect to the PostgreSQL server at 127.0.0.1:\(nobody)"), "\(refused.stderr)")
        let badPort = try await courier(["outbox", "list", "--database", "postgres://courier@127.0.0.1:70000/postgres"])
        #expect(badPort.status == 2 && badPort.stderr.contains("1 to 65535"), "\(badPort.stderr)")

        let server = try await TestServer.start(port: port)
        defer { Task { try? await server.shutdown() } }
        async let first = courier(["outbox", "flush"] + where_)
        async let second = courier(["outbox", "flush"] + where_)
        let (one, two) = try await (first, second)
        // Both ran at once on one lane: one delivered while the other found the lane claimed (and may say
        // that requests were still pending when it stopped); every key reached the server once.
        #expect(one.status == 0 || two.status == 0, "\(one.stderr)\(two.stderr)")
        let keys = server.recordedRequests.compactMap { $0.header("idempotency-key") }
        #expect(keys.count == Self.postgresPosts && Set(keys).count == Self.postgresPosts, "each idempotency key exactly once: \(keys.count)")
        #expect(server.recordedRequests.map { String(decoding: $0.body, as: UTF8.self) } == (1...Self.postgresPosts).map { "item=\($0)" }, "in order")
        #expect(try await courier(["outbox", "list"] + where_).stdout == "the outbox is empty\n")
    }
}
