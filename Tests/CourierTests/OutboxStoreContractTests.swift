import CourierTestServer
import Foundation
import HTTPTypes
import PostgresNIO
import Testing
@testable import Courier
@testable import CourierPostgres

/// Issue 26: the outbox's store seam. The same contract runs against the SQLite store (a data directory)
/// and the PostgreSQL store (a throwaway cluster per test, `PostgresServer`): what is kept, in which
/// order heads are claimed, what a lease holds, what outcomes do to rows, drops and revivals.
@Suite("Outbox stores: one contract, SQLite and PostgreSQL")
struct OutboxStoreContractTests {
    enum Kind: String, CaseIterable, CustomTestStringConvertible {
        case sqlite, postgres
        var testDescription: String { rawValue }
    }

    /// Runs `body` with a fresh store of `kind` (and, for PostgreSQL, the server), then removes everything.
    static func withStore(
        _ kind: Kind, _ body: (any OutboxStore, PostgresServer?) async throws -> Void
    ) async throws {
        switch kind {
        case .sqlite:
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-contract-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: directory) }
            try await body(try OutboxDatabase.open(at: directory), nil)
        case .postgres:
            guard PostgresServer.isAvailable else {
                try #require(!PostgresServer.isRequired, "COURIER_REQUIRE_POSTGRES=1 but PostgreSQL is not installed")
                return
            }
            try await PostgresServer.with { server in
                let client = server.makeClient()
                let running = Task { await client.run() }
                defer { running.cancel() }
                let store = try await offThePool { () throws -> any OutboxStore in
                    try PostgresOutboxStore.open(client: client, name: "contract", location: URL(string: "postgres:test")!, logger: nil)
                }
                try await body(store, server)
            }
        }
    }

    static let pipeline = OutboxPipeline(origin: "https://api.example.com:443", name: "contract")

    static func record(_ path: String, lane: String? = nil, secret: String = "Bearer s3cr3t-token") -> OutboxRecord {
        let now = Date().timeIntervalSince1970
        let url = URL(string: "https://api.example.com/\(path)")!
        return OutboxRecord(
            id: UUID().uuidString.lowercased(), origin: OutboxRecord.origin(of: url), method: .post, url: url,
            headers: [.authorization: secret, .contentType: "application/json", .idempotencyKey: "key-\(path)"],
            body: nil, idempotencyKey: "key-\(path)", createdAt: now, expiresAt: nil, maximumAttempts: 5, nextAttemptAt: now,
            orderingKey: lane, pipeline: pipeline.identity)
    }

    /// Blocking store calls, off the cooperative pool (as the library makes them).
    static func call<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T { try await offThePool(work) }

    static func claim(_ store: any OutboxStore, lease: Double = 60, excluding: Set<String> = []) async throws -> OutboxClaimResult {
        try await call { store.claimHead(pipeline, claim: ReplayStateMachine.Claim(excluding: excluding), now: Date().timeIntervalSince1970, lease: lease) }
    }

    static func sent(_ result: OutboxClaimResult) -> String? {
        if case .head(_, .send, let record) = result { return record.url.lastPathComponent }
        return nil
    }

    @Test(arguments: Kind.allCases)
    func rowsAreKeptInOrderWithTheirBodiesAndWithoutCredentials(_ kind: Kind) async throws {
        try await Self.withStore(kind) { store, server in
            for path in ["a", "b", "c"] {
                _ = try await Self.call {
                    try store.insertFrozen(Self.record(path), bytes: Data("{\"n\":\"\(path)\"}".utf8), source: nil, limit: 1 << 20)
                }
            }
            let records = try await Self.call { try store.records(origin: nil) }
            #expect(records.map { $0.url.lastPathComponent } == ["a", "b", "c"])
            #expect(records.allSatisfy { $0.headers[.authorization] == nil }, "credentials are never kept")
            #expect(records.first?.headers[.contentType] == "application/json")
            #expect(try await Self.call { store.count() } == 3)
            let body = try #require(records.first.flatMap { store.requestBody(of: $0) })
            #expect(body.data == Data("{\"n\":\"a\"}".utf8))
            if let server {
                let dump = try await server.psql("SELECT headers || coalesce(encode(body, 'escape'), '') FROM \"courier_outbox_contract\"")
                #expect(!dump.contains("s3cr3t"), "the table holds no credential")
                #expect(dump.contains("application/json"))
            }
        }
    }

    @Test(arguments: Kind.allCases)
    func aClaimedHeadHoldsItsLaneWhileOtherLanesGoOn(_ kind: Kind) async throws {
        try await Self.withStore(kind) { store, _ in
            for (path, lane) in [("a1", "a"), ("a2", "a"), ("b1", "b")] {
                _ = try await Self.call { try store.insertFrozen(Self.record(path, lane: lane), bytes: nil, source: nil, limit: 0) }
            }
            let first = try await Self.claim(store)
            #expect(Self.sent(first) == "a1", "the oldest head goes first")
            #expect(Self.sent(try await Self.claim(store)) == "b1", "the other lane is not held back")
            // Lane a's head is leased: nothing else to send.
            let third = try await Self.claim(store)
            #expect(Self.sent(third) == nil)
            guard case .head(let head, _, _) = first else { return }
            try await Self.call { store.complete(id: head.id, .delivered, status: 201, error: nil, counted: true, now: Date().timeIntervalSince1970) }
            #expect(Self.sent(try await Self.claim(store)) == "a2", "the next of its lane once it is delivered")
            let finished = try await Self.call { try store.finishedEntries() }
            #expect(finished.map(\.state) == [.delivered])
            #expect(finished.first?.lastStatus == 201)
            #expect(try await Self.call { store.count() } == 2)
        }
    }

    @Test(arguments: Kind.allCases)
    func anExpiredLeaseIsClaimedAgain(_ kind: Kind) async throws {
        try await Self.withStore(kind) { store, _ in
            _ = try await Self.call { try store.insertFrozen(Self.record("once"), bytes: nil, source: nil, limit: 0) }
            // Long enough for the next claim to come within it on a loaded machine (the whole suite at once:
            // 4 s was once not enough on two shared cores).
            #expect(Self.sent(try await Self.claim(store, lease: 10)) == "once")
            #expect(Self.sent(try await Self.claim(store)) == nil, "leased")
            try await Task.sleep(for: .milliseconds(10_500))
            #expect(Self.sent(try await Self.claim(store)) == "once", "the lease ran out: whoever claims next sends it")
        }
    }

    @Test(arguments: Kind.allCases)
    func retriesDeadLettersRevivalsDropsAndClears(_ kind: Kind) async throws {
        try await Self.withStore(kind) { store, _ in
            let later = try await Self.call { try store.insertFrozen(Self.record("later"), bytes: nil, source: nil, limit: 0) }
            let refused = try await Self.call { try store.insertFrozen(Self.record("refused", lane: "x"), bytes: nil, source: nil, limit: 0) }
            let now = Date().timeIntervalSince1970
            _ = try await Self.claim(store)
            _ = try await Self.claim(store)
            try await Self.call {
                store.complete(id: later.id, .retry(at: now + 3600), status: 503, error: nil, counted: true, now: now)
                store.complete(id: refused.id, .deadLettered(.unauthorized), status: 401, error: "401", counted: true, now: now)
            }
            let waiting = try await Self.claim(store)
            guard case .head(_, .wait(let until), let record) = waiting else {
                Issue.record("expected the retried row to wait, got \(waiting)")
                return
            }
            #expect(record.id == later.id && until >= now + 3599)
            let records = try await Self.call { try store.records(origin: nil) }
            #expect(records.first { $0.id == later.id }?.attempts == 1)
            #expect(records.first { $0.id == refused.id }?.deadReason == .unauthorized)

            #expect(try await Self.call { store.revive(id: refused.id, now: Date().timeIntervalSince1970) })
            #expect(!(try await Self.call { store.revive(id: later.id, now: now) }), "only a dead letter is revived")
            #expect(Self.sent(try await Self.claim(store)) == "refused", "pending again, due now")

            #expect(try await Self.call { store.drop(id: later.id) })
            #expect(!(try await Self.call { store.drop(id: later.id) }), "already gone")
            _ = try await Self.call { try store.insertFrozen(Self.record("more"), bytes: nil, source: nil, limit: 0) }
            #expect(try await Self.call { store.clear() } == 2)
            #expect(try await Self.call { store.count() } == 0)
        }
    }

    @Test(arguments: Kind.allCases)
    func anotherPipelinesRowsAreNeverClaimed(_ kind: Kind) async throws {
        try await Self.withStore(kind) { store, _ in
            var foreign = Self.record("theirs")
            foreign.pipeline = OutboxPipeline(origin: "https://api.example.com:443", name: "other").identity
            let theirs = foreign
            _ = try await Self.call { try store.insertFrozen(theirs, bytes: nil, source: nil, limit: 0) }
            guard case .empty = try await Self.claim(store) else {
                Issue.record("claimed a row another pipeline froze")
                return
            }
        }
    }

    @Test(arguments: Kind.allCases)
    func aBodyOverTheLimitIsNotKept(_ kind: Kind) async throws {
        try await Self.withStore(kind) { store, _ in
            var code: NetworkError.Code?
            do {
                _ = try await Self.call { try store.insertFrozen(Self.record("big"), bytes: Data(count: 2048), source: nil, limit: 1024) }
            } catch let error as NetworkError {
                code = error.code
            }
            #expect(code == .frozenBodyTooLarge)
            #expect(try await Self.call { store.count() } == 0)
        }
    }
}
