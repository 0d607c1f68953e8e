import CourierTestServer
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing
@testable import Courier

/// Tier 3: streamed request bodies (issue 10) against the in-process server's `/echo`.
@Suite("Uploads: files, multipart forms and streams")
struct UploadTests {
    static func engine(_ server: TestServer) -> NetworkEngine {
        NetworkEngine(host: "127.0.0.1", port: server.port, isSecure: false, configuration: .init { $0.dataDirectory = nil }, queue: NetworkQueue())
    }

    @Test func aFileIsSentInChunksWithItsLengthAndProgress() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("courier-upload-\(UUID().uuidString).bin")
        let content = Data((0..<1_000_000).map { UInt8($0 % 253) })   // four 256 KiB parts
        try content.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let engine = Self.engine(server)
        let progress = ProgressLog()
        let op = engine.operation(path: "/echo", method: .post, body: .file(file))
        op.onUploadProgress { progress.append($0) }
        op.maximumBytesPerSecond = 4_000_000   // ~0.25 s, so reports (at most one per 20 ms) come part by part
        let response = try await engine.send(op)
        #expect(response.body == content)
        #expect(server.recordedRequests.last?.header("Content-Length") == "1000000")
        #expect(server.recordedRequests.last?.header("Content-Type") == "application/octet-stream")
        #expect(await eventually { progress.last?.completedBytes == 1_000_000 && progress.last?.totalBytes == 1_000_000 })
        #expect(progress.all.count > 2, "reported part by part")
        #expect(progress.all.contains { $0.bytesPerSecond != nil && $0.estimatedTimeRemaining != nil }, "with rate and time left")
    }

    @Test func aMissingFileIsATypedErrorAndNothingIsSent() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let engine = Self.engine(server)
        let missing = FileManager.default.temporaryDirectory.appendingPathComponent("courier-missing-\(UUID().uuidString).bin")
        let error = await failure(of: engine.operation(path: "/echo", method: .post, body: .file(missing)))
        #expect(error?.code == .fileUnavailable)
        #expect(server.requestCount(path: "/echo") == 0)
    }

    @Test func aStreamBodyIsSentOnceAndA307ThatNeedsItAgainIsATypedError() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let engine = Self.engine(server)
        let chunks = AsyncStream<ByteBuffer> { continuation in
            for index in 0..<4 { continuation.yield(ByteBuffer(string: "part \(index);")) }
            continuation.finish()
        }
        let echoed = try await engine.send(engine.operation(path: "/echo", method: .post, body: .stream(chunks)))
        #expect(echoed.string == "part 0;part 1;part 2;part 3;")
        let again = AsyncStream<ByteBuffer> { continuation in
            continuation.yield(ByteBuffer(string: "once"))
            continuation.finish()
        }
        let redirected = engine.operation(path: "/redirect-to", params: ["url": "/echo", "status": 307], method: .post, body: .stream(again))
        #expect(await failure(of: redirected)?.code == .bodyNotReplayable)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("courier-upload-\(UUID().uuidString).txt")
        try Data("replayable".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let replayed = try await engine.send(engine.operation(path: "/redirect-to", params: ["url": "/echo", "status": 307], method: .post, body: .file(file)))
        #expect(replayed.string == "replayable", "a file is sent again on a 307")
    }

    @Test func aMultipartFormIsStreamedWithAnExactLength() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let engine = Self.engine(server)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("courier-form-\(UUID().uuidString).json")
        try Data(#"{"a":1}"#.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        var form = MultipartForm()
        form.addField("value", name: "field")
        form.addFile(file, name: "upload")
        let response = try await engine.send(engine.operation(path: "/echo", method: .post, body: .multipart(form)))
        let text = try #require(response.string)
        #expect(text.contains(#"Content-Disposition: form-data; name="upload"; filename="\#(file.lastPathComponent)""#))
        #expect(text.contains("Content-Type: application/json") && text.contains(#"{"a":1}"#) && text.contains("value"))
        #expect(server.recordedRequests.last?.header("Content-Length") == String(response.body.count))
    }

    @Test func aOneShotStreamIsNeverFrozen() async throws {
        let engine = NetworkEngine.fake(FakeTransport())
        let chunks = AsyncStream<ByteBuffer> { continuation in
            continuation.yield(ByteBuffer(string: "once"))
            continuation.finish()
        }
        let op = engine.operation(path: "a", method: .post, body: .stream(chunks))
        op.isFreezable = true
        #expect(await failure(of: op)?.code == .bodyNotReplayable, "refused when enqueued: its bytes could not be kept")
    }
}
