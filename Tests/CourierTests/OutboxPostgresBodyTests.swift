import CourierTestServer
import Foundation
import PostgresNIO
import Testing
@testable import Courier
@testable import CourierPostgres

/// Frozen files and forms in a PostgreSQL outbox: kept in chunks beside their row (one chunk in memory at a
/// time), sent as frozen by whichever instance replays them, and gone with their row.
@Suite("Outbox on PostgreSQL: frozen files and forms", .serialized)
struct OutboxPostgresBodyTests {
    /// An engine of the in-process origin whose outbox is `uploads` on `server`, with its own client.
    static func instance(
        _ server: PostgresServer, origin: TestServer, reachability: ManualReachability, limit: Int = 100 * 1024 * 1024,
        timeout: Duration = .seconds(15), lease: Duration = .seconds(120)
    ) -> (NetworkEngine, Task<Void, Never>) {
        let client = server.makeClient()
        let running = Task { await client.run() }
        let engine = NetworkEngine(baseURL: origin.baseURL, configuration: .init {
            $0.reachability = reachability
            $0.outbox = .postgres(client: client, name: "uploads", timeout: timeout)
            $0.outboxRetry = OutboxRetry(initialDelay: .milliseconds(20), maximumDelay: .milliseconds(200), lease: lease)
            $0.maximumFrozenBodySize = limit
        }, queue: NetworkQueue())
        return (engine, running)
    }

    static func freeze(_ engine: NetworkEngine, _ body: RequestBody, path: String = "echo") async -> NetworkOperation {
        let op = engine.operation(path: path, method: .post, body: body)
        op.isFreezable = true
        engine.enqueue(op)
        _ = await eventually { op.state == .frozen || op.isFinished }
        return op
    }

    static func chunks(_ server: PostgresServer) async throws -> Int {
        Int(try await server.psql("SELECT count(*) FROM \"courier_outbox_uploads$bodies\"").trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    static func firstDifference(_ a: Data, _ b: Data) -> Int {
        zip(a, b).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(a.count, b.count)
    }

    static func sources() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-pg-bodies-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    /// One instance freezes a 600 KB file and a form (a field, a file, a data part) while the origin is
    /// away; the originals change and go; another instance, which never saw them, sends the bytes as
    /// frozen, with the boundary and the `Content-Length` frozen; the chunks go with the outcome.
    @Test(.postgres(minutes: 4)) func filesAndFormsAreKeptInChunksAndSentAsFrozenByAnotherInstance() async throws {
        try await OutboxPostgresTests.withServer { server in
            let origin = try await TestServer.start()
            let folder = try Self.sources()
            defer { try? FileManager.default.removeItem(at: folder) }
            let (a, runningA) = Self.instance(server, origin: origin, reachability: ManualReachability(.unreachable))
            let bReachability = ManualReachability(.unreachable)
            let (b, runningB) = Self.instance(server, origin: origin, reachability: bReachability)
            defer { runningA.cancel(); runningB.cancel() }
            let report = folder.appendingPathComponent("report.bin")
            try OutboxFileBodyTests.pattern(600_000).write(to: report)
            let photo = folder.appendingPathComponent("photo.jpg")
            try OutboxFileBodyTests.pattern(250_000, seed: 3).write(to: photo)
            var form = MultipartForm()
            form.addField("Holiday", name: "album")
            form.addFile(photo, name: "photo")
            form.addData(Data(#"{"w":64}"#.utf8), name: "meta", filename: "meta.json")

            let upload = await Self.freeze(a, .file(report))
            let post = await Self.freeze(a, .multipart(form))
            #expect(upload.state == .frozen && post.state == .frozen, "\(upload.state) \(post.state)")
            #expect(try await Self.chunks(server) >= 4, "600 KB in 256 KiB chunks, and the form's")
            #expect(try await server.psql("SELECT count(*) FROM \"courier_outbox_uploads\" WHERE body IS NOT NULL") == "0\n",
                    "no body in the rows themselves")
            try OutboxFileBodyTests.pattern(10, seed: 9).write(to: report)
            try FileManager.default.removeItem(at: photo)

            bReachability.setStatus(.reachable(via: .wired))
            _ = await offThePool { b.outbox?.entries.count }   // B's replayer starts
            // A's operations learn B's outcomes (a status, not a body: the origin shows what was sent).
            #expect(try await upload.response().statusCode == 200)
            #expect(try await post.response().statusCode == 200)
            let requests = origin.recordedRequests.filter { $0.path == "/echo" }
            #expect(requests.count == 2)
            let file = try #require(requests.first { $0.header("content-length") == "600000" })
            let same = Data(file.body) == OutboxFileBodyTests.pattern(600_000)   // not inside #expect: a failure would diff 600 KB
            #expect(same, "the bytes as frozen: \(file.body.count) bytes, first difference at \(Self.firstDifference(Data(file.body), OutboxFileBodyTests.pattern(600_000)))")
            let formRequest = try #require(requests.first { $0.header("content-type") == form.contentType }, "the boundary frozen is the boundary sent")
            #expect(formRequest.header("content-length") == String(formRequest.body.count))
            let parts = try #require(TransferTestSupport.parseMultipart(formRequest.body, boundary: form.boundary))
            let sameParts = parts.map(\.body) == [Array("Holiday".utf8), Array(OutboxFileBodyTests.pattern(250_000, seed: 3)), Array(#"{"w":64}"#.utf8)]
            #expect(sameParts, "the form as frozen: parts of \(parts.map(\.body.count)) bytes")
            #expect(parts.count == 3 && parts[1].headers["content-disposition"] == #"form-data; name="photo"; filename="photo.jpg""#)
            #expect(try await Self.chunks(server) == 0, "the chunks went with the outcomes")
            try await origin.shutdown()
        }
    }

    /// Over the limit, a missing file, a one-shot stream: typed errors, nothing written. A dropped row's
    /// chunks go with it.
    @Test(.postgres(minutes: 4)) func overTheLimitOrMissingWritesNothingAndADropTakesTheChunks() async throws {
        try await OutboxPostgresTests.withServer { server in
            let origin = try await TestServer.start()
            let folder = try Self.sources()
            defer { try? FileManager.default.removeItem(at: folder) }
            let (engine, running) = Self.instance(server, origin: origin, reachability: ManualReachability(.unreachable), limit: 100_000)
            defer { running.cancel() }
            let big = folder.appendingPathComponent("big.bin")
            try OutboxFileBodyTests.pattern(100_001).write(to: big)
            #expect(await failure(of: await Self.freeze(engine, .file(big)))?.code == .frozenBodyTooLarge)
            var form = MultipartForm()
            form.addFile(big, name: "a")
            #expect(await failure(of: await Self.freeze(engine, .multipart(form)))?.code == .frozenBodyTooLarge)
            #expect(await failure(of: await Self.freeze(engine, .file(folder.appendingPathComponent("never-was.bin"))))?.code == .fileUnavailable)
            let stream = AsyncStream<[UInt8]> { $0.yield([1, 2, 3]); $0.finish() }
            #expect(await failure(of: await Self.freeze(engine, .stream(stream, length: 3)))?.code == .bodyNotReplayable)
            #expect(try await server.psql("SELECT count(*) FROM \"courier_outbox_uploads\"") == "0\n")
            #expect(try await Self.chunks(server) == 0)

            let small = folder.appendingPathComponent("small.bin")
            try OutboxFileBodyTests.pattern(90_000).write(to: small)
            let kept = await Self.freeze(engine, .file(small))
            #expect(kept.state == .frozen)
            #expect(try await Self.chunks(server) == 1)
            let outbox = try #require(engine.outbox)
            #expect(await outbox.drop(try #require(kept.outboxID)))
            #expect(try await Self.chunks(server) == 0, "a dropped row's chunks go with it")
            try await origin.shutdown()
        }
    }
}
