import CourierTestServer
import Foundation
import PostgresNIO
import Testing
@testable import Courier
@testable import CourierPostgres

extension OutboxPostgresBodyTests {
    /// Ways a frozen file's row and chunks can stop agreeing (a restore, a hand edit, a bad migration), for a
    /// 600,000-byte file kept as parts 0, 1 and 2 (262,144, 262,144 and 75,712 bytes).
    static let damages = [
        #"UPDATE "courier_outbox_uploads" SET body_length = 262144"#,
        #"UPDATE "courier_outbox_uploads" SET body_length = 600100"#,
        #"INSERT INTO "courier_outbox_uploads$bodies" SELECT id, 3, '\xdeadbeef'::bytea FROM "courier_outbox_uploads""#,
        #"DELETE FROM "courier_outbox_uploads$bodies" WHERE part = 2"#,
        #"UPDATE "courier_outbox_uploads$bodies" SET part = 5 WHERE part = 1"#,
        #"UPDATE "courier_outbox_uploads$bodies" SET chunk = chunk || '\x41'::bytea WHERE part = 0"#,
    ]

    /// Review 11: once a body in chunks ended at its frozen length, a row whose length was lowered to a
    /// chunk's end sent that much of the file, and the outbox recorded it delivered. Now the first read checks
    /// that the parts are 0 to n and add up to the length: a row that does not is dead-lettered as
    /// `bodyUnavailable` (not an attempt), kept with its chunks, and no body reaches the origin.
    @Test(.postgres(minutes: 2), arguments: damages)
    func aBodyWhoseChunksDoNotAddUpToItsLengthIsDeadLetteredNotSent(damage: String) async throws {
        try await Self.withUploads { server, origin, folder in
            let client = server.makeClient()
            let running = Task { await client.run() }
            defer { running.cancel() }
            let (engine, reachability, op) = try await Self.frozenFile(
                600_000, in: folder, origin: origin, client: client,
                retry: OutboxRetry(initialDelay: .milliseconds(50), maximumDelay: .milliseconds(200)))
            #expect(try await Self.chunks(server) == 3)
            _ = try await server.psql(damage)
            reachability.setStatus(.reachable(via: .wired))
            let ended = await eventually(timeout: .seconds(15)) { op.isFinished }
            #expect(ended, "the operation hears that its request was given up")
            if ended { #expect(await failure(of: op)?.code == .deadLettered) }
            let row = try await server.psql(#"SELECT coalesce(outcome, '-'), dead_reason, attempts, last_error FROM "courier_outbox_uploads""#)
            #expect(row.hasPrefix("-|bodyUnavailable|0|") && row.contains("do not add up"), "\(row)")
            #expect(try await Self.chunks(server) > 0, "its chunks are kept until the row is dropped")
            #expect(!origin.recordedRequests.contains { $0.method == "POST" && !$0.body.isEmpty }, "\(origin.recordedRequests.map(\.body.count))")
            withExtendedLifetime(engine) {}
        }
    }

    /// An empty file is frozen as an empty body in its row, not as chunks: a row in chunks always has some
    /// (its first read checks them), so one whose length was set to 0 is set aside as damaged, never sent
    /// empty. The empty file itself is delivered empty.
    @Test(.postgres(minutes: 2)) func anEmptyFileIsKeptInItsRowAndARowInChunksOfLengthZeroIsSetAside() async throws {
        try await Self.withUploads { server, origin, folder in
            let client = server.makeClient()
            let running = Task { await client.run() }
            defer { running.cancel() }
            let (engine, reachability, big) = try await Self.frozenFile(
                600_000, in: folder, origin: origin, client: client,
                retry: OutboxRetry(initialDelay: .milliseconds(50), maximumDelay: .milliseconds(200)))
            let empty = folder.appendingPathComponent("empty.bin")
            try Data().write(to: empty)
            let op = await Self.freeze(engine, .file(empty), path: "echo?empty")
            #expect(op.state == .frozen)
            #expect(try await server.psql(#"SELECT count(*) FROM "courier_outbox_uploads" WHERE body_length IS NULL AND body = ''"#) == "1\n")
            #expect(try await Self.chunks(server) == 3, "the 600 kB file's chunks only")
            _ = try await server.psql(#"UPDATE "courier_outbox_uploads" SET body_length = 0 WHERE body_length = 600000"#)
            reachability.setStatus(.reachable(via: .wired))
            let delivered = await eventually(timeout: .seconds(15)) { op.isFinished }
            let rows = (try? await server.psql(#"SELECT body_length, outcome, dead_reason, last_error FROM "courier_outbox_uploads" ORDER BY seq"#)) ?? ""
            #expect(delivered, "the empty file is delivered: \(rows)")
            if delivered { #expect(try await op.response().statusCode == 200) }
            let setAside = await Self.until(.seconds(15)) {
                (try? await server.psql(#"SELECT dead_reason FROM "courier_outbox_uploads" WHERE body_length = 0"#)) == "damaged\n"
            }
            #expect(setAside)
            #expect(!origin.recordedRequests.contains { $0.method == "POST" && !$0.body.isEmpty }, "\(origin.recordedRequests.map(\.body.count))")
            #expect(origin.recordedRequests.contains { $0.method == "POST" && $0.path.hasPrefix("/echo") && $0.body.isEmpty })
            _ = big
            withExtendedLifetime(engine) {}
        }
    }

    /// Review 12: six heads of one lane set aside in one claim (chunked rows of length 0) ahead of a
    /// healthy row: the claim reads the lane again until no head is removed, and the healthy row is sent
    /// (after four it waited for the next wake-up, with none coming).
    @Test(.postgres(minutes: 2)) func manyHeadsSetAsideInOneClaimDoNotHoldBackTheLanesNextRow() async throws {
        try await Self.withUploads { server, origin, folder in
            let client = server.makeClient()
            let running = Task { await client.run() }
            defer { running.cancel() }
            let (engine, reachability, first) = try await Self.frozenFile(
                1000, in: folder, origin: origin, client: client,
                retry: OutboxRetry(initialDelay: .milliseconds(50), maximumDelay: .milliseconds(200)))
            var damaged = [first]
            for index in 1..<6 {
                let file = folder.appendingPathComponent("\(index).bin")
                try Data(count: 1000).write(to: file)
                damaged.append(await Self.freeze(engine, .file(file)))
            }
            let healthy = await Self.freeze(engine, .data(Data("healthy".utf8)), path: "echo?healthy")
            #expect(damaged.allSatisfy { $0.state == .frozen } && healthy.state == .frozen)
            _ = try await server.psql(#"UPDATE "courier_outbox_uploads" SET body_length = 0 WHERE body_length IS NOT NULL"#)
            reachability.setStatus(.reachable(via: .wired))
            let sent = await eventually(timeout: .seconds(15)) { healthy.isFinished }
            #expect(sent, "the healthy row behind six set-aside heads is sent")
            if sent { #expect(try await healthy.response().statusCode == 200) }
            #expect(try await server.psql(#"SELECT count(*) FROM "courier_outbox_uploads" WHERE dead_reason = 'damaged'"#) == "6\n")
            withExtendedLifetime(engine) {}
        }
    }

    /// Review 12: the chunks were checked only at the body's first read, after the request's head had gone;
    /// an origin that answers a head at once (here: 200 to its first bytes, then it closes) got the
    /// damaged row recorded delivered. Now a claimed row's chunks are checked before its request is built:
    /// the origin gets nothing, and the row is dead-lettered as `bodyUnavailable`, not an attempt.
    @Test(.postgres(minutes: 2)) func aDamagedBodyIsFoundBeforeAnOriginThatAnswersHeadsGetsAnything() async throws {
        try await Self.withUploads { server, _, folder in
            let early = try await RawResponseServer.start(
                replyingWith: Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok".utf8))
            defer { Task { try? await early.shutdown() } }
            let client = server.makeClient()
            let running = Task { await client.run() }
            defer { running.cancel() }
            let reachability = ManualReachability(.unreachable)
            let engine = NetworkEngine(baseURL: "http://127.0.0.1:\(early.port)", configuration: .init {
                $0.reachability = reachability
                $0.outbox = .postgres(client: client, name: "uploads", timeout: .seconds(2))
                $0.outboxRetry = OutboxRetry(initialDelay: .milliseconds(50), maximumDelay: .milliseconds(200))
            }, queue: NetworkQueue())
            var ops: [NetworkOperation] = []
            for index in 0..<3 {
                let file = folder.appendingPathComponent("early\(index).bin")
                try OutboxFileBodyTests.pattern(600_000).write(to: file)
                ops.append(await Self.freeze(engine, .file(file), path: "upload?n=\(index)"))
            }
            #expect(ops.allSatisfy { $0.state == .frozen })
            _ = try await server.psql(#"UPDATE "courier_outbox_uploads" SET body_length = 262144"#)
            reachability.setStatus(.reachable(via: .wired))
            let ended = await eventually(timeout: .seconds(20)) { ops.allSatisfy(\.isFinished) }
            #expect(ended)
            for op in ops where op.isFinished { #expect(await failure(of: op)?.code == .deadLettered) }
            let rows = try await server.psql(#"SELECT coalesce(outcome, '-'), dead_reason, attempts FROM "courier_outbox_uploads" ORDER BY seq"#)
            #expect(rows == String(repeating: "-|bodyUnavailable|0\n", count: 3), "\(rows)")
            #expect(early.received.isEmpty, "the origin got: \(early.received.prefix(200))")
            withExtendedLifetime(engine) {}
        }
    }

    /// Review 12: instance A's replay waits 3 s for its answer while its lease lapses (as if its renewals had
    /// not reached the server), and instance B delivers the row (its chunks go with the outcome). A then
    /// follows the 307 it got and reads the body again: a row settled meanwhile is not damaged, so A's
    /// operation learns that its request was delivered, not that it was given up.
    @Test(.postgres(minutes: 2)) func aRowDeliveredByAnotherInstanceWhileARedirectIsFollowedIsReportedDelivered() async throws {
        try await Self.withUploads { server, _, folder in
            let origin = try await SlowFirstRedirectServer.start(delay: .seconds(3))
            defer { Task { try? await origin.shutdown() } }
            func instance(_ reachability: ManualReachability) -> (NetworkEngine, Task<Void, Never>) {
                let client = server.makeClient()
                let running = Task { await client.run() }
                let engine = NetworkEngine(baseURL: "http://127.0.0.1:\(origin.port)", configuration: .init {
                    $0.reachability = reachability
                    $0.outbox = .postgres(client: client, name: "uploads", timeout: .seconds(5))
                    $0.outboxRetry = OutboxRetry(initialDelay: .milliseconds(50), maximumDelay: .milliseconds(200))
                }, queue: NetworkQueue())
                return (engine, running)
            }
            let (aReach, bReach) = (ManualReachability(.unreachable), ManualReachability(.unreachable))
            let (a, runningA) = instance(aReach)
            let (b, runningB) = instance(bReach)
            defer { runningA.cancel(); runningB.cancel() }
            let file = folder.appendingPathComponent("redirected.bin")
            try OutboxFileBodyTests.pattern(600_000).write(to: file)
            let op = await Self.freeze(a, .file(file), path: "slow307")
            #expect(op.state == .frozen)
            _ = await offThePool { b.outbox?.entries.count }
            aReach.setStatus(.reachable(via: .wired))
            #expect(await eventually(timeout: .seconds(10)) { origin.requests.count == 1 }, "A's replay reached the origin")
            _ = try await server.psql(#"UPDATE "courier_outbox_uploads" SET lease_owner = 'lapsed', lease_expires = 0"#)
            bReach.setStatus(.reachable(via: .wired))
            let delivered = await Self.until(.seconds(10)) {
                (try? await server.psql(#"SELECT outcome FROM "courier_outbox_uploads""#)) == "delivered\n"
            }
            #expect(delivered, "B delivered the row")
            #expect(await eventually(timeout: .seconds(15)) { op.isFinished })
            if op.isFinished {
                let error = await failure(of: op)
                #expect(error == nil, "the row was delivered, yet A's operation says \(String(describing: error))")
            }
            let requests = origin.requests
            #expect(requests.filter { $0.path == "/slow307" }.map(\.bodyBytes) == [600_000, 600_000], "\(requests)")
            #expect(!requests.contains { $0.path == "/done" }, "A's redirect sent no body once the row was settled: \(requests)")
            withExtendedLifetime((a, b)) {}
        }
    }
}
