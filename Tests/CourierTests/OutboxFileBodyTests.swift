@testable import Courier
import CourierTestServer
import Foundation
import Testing

/// Tier 3: frozen uploads against the in-process server. A file body, or a form with files, is copied
/// into the outbox when frozen; the replay sends the copy (the original may have changed or gone), the
/// copy goes with its row, a missing copy is a dead letter, and a body over the limit is not frozen.
@Suite("Outbox: frozen files and forms", .serialized)
struct OutboxFileBodyTests {
    struct Setup {
        let directory: URL
        let sources: URL
        let server: TestServer
        let reachability: ManualReachability
        let engine: NetworkEngine

        var bodies: URL { directory.appendingPathComponent("bodies") }

        /// The names in `bodies/` (row ids, and anything left half-made).
        var copies: [String] { ((try? FileManager.default.contentsOfDirectory(atPath: bodies.path)) ?? []).sorted() }

        func source(_ name: String, _ data: Data) throws -> URL {
            let url = sources.appendingPathComponent(name)
            try data.write(to: url)
            return url
        }

        func freeze(_ body: RequestBody, path: String = "echo", _ configure: (NetworkOperation) -> Void = { _ in }) async throws -> NetworkOperation {
            let op = engine.operation(path: path, method: .post, body: body)
            op.isFreezable = true
            configure(op)
            engine.enqueue(op)
            #expect(await eventually { op.state == .frozen || op.isFinished }, "neither frozen nor failed")
            return op
        }

        /// Removes the files at once (a `Task` at the end of the last test may never run) and shuts the
        /// server down.
        func tearDown() {
            engine.queue.cancelAll()
            try? FileManager.default.removeItem(at: directory)
            try? FileManager.default.removeItem(at: sources)
            Task { [server] in try? await server.shutdown() }
        }
    }

    static func setUp(_ configure: (inout NetworkEngine.Configuration) -> Void = { _ in }) async throws -> Setup {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-frozen-files-\(UUID().uuidString)")
        let sources = FileManager.default.temporaryDirectory.appendingPathComponent("courier-frozen-sources-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: sources, withIntermediateDirectories: true)
        let server = try await TestServer.start()
        let reachability = ManualReachability(.unreachable)
        let engine = NetworkEngine(baseURL: server.baseURL, configuration: .init {
            $0.reachability = reachability
            $0.dataDirectory = directory
            $0.outboxRetry = OutboxRetry(initialDelay: .milliseconds(20), maximumDelay: .milliseconds(200))
            $0.callbackQueue = DispatchQueue(label: "test.frozen-files")
            configure(&$0)
        }, queue: NetworkQueue())
        return Setup(directory: directory, sources: sources, server: server, reachability: reachability, engine: engine)
    }

    static func pattern(_ count: Int, seed: Int = 0) -> Data { Data((0..<count).map { UInt8(($0 * 7 + seed) % 253) }) }

    @Test(.timeLimit(.minutes(1))) func frozenUploadsSendTheBytesFrozenAfterTheOriginalsChangedOrWentAway() async throws {
        let setup = try await Self.setUp()
        defer { setup.tearDown() }
        let report = try setup.source("report.bin", Self.pattern(400_000))
        let photo = try setup.source("photo.jpg", Self.pattern(250_000, seed: 3))
        let upload = try await setup.freeze(.file(report))
        var form = MultipartForm()
        form.addField("Holiday", name: "album")
        form.addFile(photo, name: "photo")
        form.addData(Data(#"{"w":64}"#.utf8), name: "meta", filename: "meta.json")
        let post = try await setup.freeze(.multipart(form))
        let ids = try [#require(upload.outboxID), #require(post.outboxID)]
        #expect(setup.copies == ids.sorted(), "one folder of copies per row, nothing half-made")
        #expect(!FileManager.default.fileExists(atPath: setup.bodies.appendingPathComponent(ids[0]).appendingPathComponent(".owner").path))

        // The originals change and go away while the requests wait.
        try Self.pattern(10, seed: 9).write(to: report)
        try FileManager.default.removeItem(at: photo)
        setup.reachability.setStatus(.reachable(via: .wired))

        let uploaded = try await upload.response()
        #expect(uploaded.body == Self.pattern(400_000), "the bytes as frozen, streamed from the copy")
        let posted = try await post.response()
        let parts = try #require(TransferTestSupport.parseMultipart(Array(posted.body), boundary: form.boundary))
        #expect(parts.map(\.body) == [Array("Holiday".utf8), Array(Self.pattern(250_000, seed: 3)), Array(#"{"w":64}"#.utf8)])
        #expect(parts[1].headers["content-disposition"] == #"form-data; name="photo"; filename="photo.jpg""#)
        #expect(parts[1].headers["content-type"] == "image/jpeg")
        let requests = setup.server.recordedRequests.filter { $0.path == "/echo" }
        #expect(requests.count == 2)
        #expect(requests.first?.header("content-length") == "400000")
        #expect(requests.last?.header("content-type") == form.contentType, "the boundary frozen is the boundary sent")
        #expect(requests.last?.header("content-length") == String(posted.body.count))
        #expect(await eventually { setup.copies.isEmpty }, "delivered: the copies went with the rows")
    }

    @Test(.timeLimit(.minutes(1))) func overTheLimitOrMissingIsATypedErrorWithNothingLeftOnDisk() async throws {
        let setup = try await Self.setUp { $0.maximumFrozenBodySize = 100_000 }
        defer { setup.tearDown() }
        let big = try setup.source("big.bin", Self.pattern(100_001))
        let op = try await setup.freeze(.file(big))
        let error = await failure(of: op)
        #expect(error?.code == .frozenBodyTooLarge, "\(String(describing: error))")
        #expect(error?.message.contains("maximumFrozenBodySize") == true)
        var form = MultipartForm()
        form.addFile(try setup.source("half.bin", Self.pattern(60_000)), name: "a")
        form.addFile(try setup.source("other-half.bin", Self.pattern(60_000)), name: "b")
        #expect(await failure(of: try await setup.freeze(.multipart(form)))?.code == .frozenBodyTooLarge)
        #expect(await failure(of: try await setup.freeze(.data(Self.pattern(100_001))))?.code == .frozenBodyTooLarge)
        let missing = setup.sources.appendingPathComponent("never-was.bin")
        #expect(await failure(of: try await setup.freeze(.file(missing)))?.code == .fileUnavailable)
        #expect(try #require(setup.engine.outbox).entries.isEmpty)
        #expect(setup.copies.isEmpty, "nothing copied, nothing left: \(setup.copies)")
        // Online, the limit does not apply: it is only about what the outbox keeps.
        setup.reachability.setStatus(.reachable(via: .wired))
        #expect(try await setup.engine.send(setup.engine.operation(path: "echo", method: .post, body: .file(big))).body.count == 100_001)
    }

    @Test(.timeLimit(.minutes(1))) func tooLargeToFreezeAfterAFailedAttemptSaysWhatMadeItFreeze() async throws {
        let base = "http://127.0.0.1:\(try await TestServer.vacantPort())"
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-frozen-refused-\(UUID().uuidString)")
        let file = directory.appendingPathExtension("bin")
        defer {
            try? FileManager.default.removeItem(at: directory)
            try? FileManager.default.removeItem(at: file)
        }
        try Self.pattern(5000).write(to: file)
        let engine = NetworkEngine(baseURL: base, configuration: .init {
            $0.reachability = ManualReachability(.reachable(via: .wired))   // reachable, but nobody listens
            $0.dataDirectory = directory
            $0.maximumFrozenBodySize = 4999
        }, queue: NetworkQueue())
        let op = engine.operation(path: "echo", method: .post, body: .file(file))
        op.isFreezable = true
        let error = await failure(of: op)
        #expect(error?.code == .frozenBodyTooLarge)
        #expect((error?.underlying as? NetworkError)?.code == .cannotConnect, "the network error that made it freeze")
        #expect(try #require(engine.outbox).entries.isEmpty)
    }

    @Test(.timeLimit(.minutes(1))) func whatRemovesARowRemovesItsCopyAndNothingElse() async throws {
        let setup = try await Self.setUp()
        defer { setup.tearDown() }
        let file = try setup.source("keep-me.bin", Self.pattern(5000))
        let dropped = try await setup.freeze(.file(file))
        let cancelled = try await setup.freeze(.file(file))
        let expiring = try await setup.freeze(.file(file)) { $0.timeToLive = .milliseconds(50) }
        let kept = try await setup.freeze(.file(file))
        let outbox = try Outbox(directory: setup.directory)
        #expect(setup.copies.count == 4)

        #expect(await outbox.drop(try #require(dropped.outboxID)))
        #expect(await failure(of: dropped)?.code == .cancelled)
        cancelled.cancel()
        #expect(await failure(of: cancelled)?.code == .cancelled)
        #expect(await eventually { setup.copies == [expiring.outboxID, kept.outboxID].compactMap { $0 }.sorted() })

        // A dead letter keeps its copy (it is kept until dropped); dropping it removes the copy.
        try await Task.sleep(for: .milliseconds(100))
        setup.reachability.setStatus(.reachable(via: .wired))
        #expect(await failure(of: expiring)?.code == .deadLettered)
        #expect(try await kept.response().body == Self.pattern(5000))
        #expect(await eventually { setup.copies == [expiring.outboxID].compactMap { $0 } })
        #expect(outbox.deadLetters.map(\.state) == [.deadLettered(.expired)])
        #expect(await outbox.drop(try #require(expiring.outboxID)))
        #expect(setup.copies.isEmpty)
        #expect(FileManager.default.fileExists(atPath: file.path), "the original is the user's: never removed")
    }

    @Test(.timeLimit(.minutes(1))) func aRowWhoseCopyIsMissingOrDamagedIsADeadLetterNeverSent() async throws {
        let setup = try await Self.setUp()
        defer { setup.tearDown() }
        let file = try setup.source("a.bin", Self.pattern(5000))
        let missing = try await setup.freeze(.file(file)) { $0.orderingKey = "missing" }
        var form = MultipartForm()
        form.addFile(file, name: "doc")
        let truncated = try await setup.freeze(.multipart(form)) { $0.orderingKey = "truncated" }
        let fine = try await setup.freeze(.file(file)) { $0.orderingKey = "missing" }
        let missingID = try #require(missing.outboxID), truncatedID = try #require(truncated.outboxID)
        try FileManager.default.removeItem(at: setup.bodies.appendingPathComponent(missingID).appendingPathComponent("body"))
        try Self.pattern(10).write(to: setup.bodies.appendingPathComponent(truncatedID).appendingPathComponent("part-0"))

        setup.reachability.setStatus(.reachable(via: .wired))
        let lost = await failure(of: missing)
        #expect(lost?.code == .deadLettered)
        #expect(lost?.message.contains("is missing") == true, "\(String(describing: lost))")
        let damaged = await failure(of: truncated)
        #expect(damaged?.code == .deadLettered)
        #expect(damaged?.message.contains("damaged: 10 bytes where 5000 were copied") == true, "\(String(describing: damaged))")
        #expect(try await fine.response().body == Self.pattern(5000), "the lane goes on behind a dead letter")
        #expect(setup.server.requestCount(path: "/echo") == 1, "never sent with a body other than the one frozen")
        let outbox = try #require(setup.engine.outbox)
        #expect(Set(outbox.deadLetters.map(\.state)) == [.deadLettered(.bodyUnavailable)])
        #expect(outbox.deadLetters.allSatisfy { $0.lastError?.contains("the copy of its body") == true })
        #expect(await outbox.clear() == 2)
        #expect(setup.copies.isEmpty)
    }
}
