import CourierTestServer
import Foundation
import NIOConcurrencyHelpers
import Testing
@testable import Courier

/// Tier 3: bodies that do not go to memory (issue 10): downloads to files and the body as a stream,
/// against the in-process server. Bandwidth limits: `TransferAcceptanceTests`.
@Suite("Downloads to files and body streams")
struct DownloadTests {
    static func folder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("courier-downloads-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    static func engine(_ server: TestServer, queue: NetworkQueue = NetworkQueue()) -> NetworkEngine {
        NetworkEngine(host: "127.0.0.1", port: server.port, isSecure: false, configuration: .init { $0.dataDirectory = nil }, queue: queue)
    }

    /// What `/bytes/N` serves (the test server's deterministic pattern).
    static func expected(_ count: Int) -> Data { Data((0..<count).map { UInt8($0 % 251) }) }

    /// Every name in `folder`, partial files included.
    static func names(in folder: URL) -> Set<String> {
        Set((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? [])
    }

    @Test func aDownloadGoesToEveryDestinationAndNotToMemory() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let engine = Self.engine(server)
        let first = folder.appendingPathComponent("a.bin"), second = folder.appendingPathComponent("b.bin")
        let progress = ProgressLog()
        let op = engine.operation(path: "/bytes/3000000", params: ["chunkSize": "65536"]).download(to: [first, second])
        op.onDownloadProgress { progress.append($0) }
        let response = try await engine.send(op)
        #expect(response.fileURLs == [first, second] && response.body.isEmpty)
        let expected = Self.expected(3_000_000)
        #expect(try Data(contentsOf: first) == expected)
        #expect(try Data(contentsOf: second) == expected)
        #expect(Self.names(in: folder) == ["a.bin", "b.bin"], "no partial file left")
        #expect(await eventually { progress.last?.completedBytes == 3_000_000 && progress.last?.totalBytes == 3_000_000 })
    }

    @Test func aMissingFolderIsATypedErrorAndNothingIsWritten() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let engine = Self.engine(server)
        let destination = FileManager.default.temporaryDirectory.appendingPathComponent("courier-missing-\(UUID().uuidString)/file.bin")
        let error = await failure(of: engine.operation(path: "/bytes/1000").download(to: destination))
        #expect(error?.code == .fileUnavailable)
        #expect(error?.message.contains("does not exist") == true, "\(String(describing: error))")
        #expect(!FileManager.default.fileExists(atPath: destination.path))
    }

    @Test func aDroppedConnectionLeavesNothingUnderTheFinalName() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let engine = Self.engine(server)
        let destination = folder.appendingPathComponent("dropped.bin")
        let error = await failure(of: engine.operation(path: "/drop-mid-body").download(to: destination))
        #expect(error?.code == .connectionLost)
        #expect(Self.names(in: folder).isEmpty, "not resumable: the partial file is removed too")
        let resumable = await failure(of: engine.operation(path: "/drop-mid-body").download(to: destination, resumable: true))
        #expect(resumable?.code == .connectionLost)
        #expect(!FileManager.default.fileExists(atPath: destination.path))
        #expect(Self.names(in: folder).isEmpty, "no ETag or Last-Modified: nothing could tell a resumed file apart, so nothing is kept")
    }

    @Test func anUnacceptableAnswerIsAnErrorWithItsBodyAndNoFile() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let engine = Self.engine(server)
        let error = await failure(of: engine.operation(path: "/status/404").download(to: folder.appendingPathComponent("x")))
        #expect(error?.code == .unacceptableStatus && error?.response?.statusCode == 404)
        #expect(Self.names(in: folder).isEmpty)
    }

    @Test func theBodyStreamDeliversChunksAsTheyArrive() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let engine = Self.engine(server)
        let op = engine.operation(path: "/bytes/300000", params: ["chunkSize": "1000"])
        let stream = op.bodyStream
        engine.enqueue(op)
        var received = Data()
        var chunks = 0
        for try await chunk in stream {
            received.append(chunk)
            chunks += 1
        }
        #expect(received == Self.expected(300_000) && chunks > 1)
        let response = try await op.response()
        #expect(response.body.isEmpty, "a streamed body is not also kept in memory")
    }

    @Test func stoppingTheBodyStreamEarlyCancelsTheOperation() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let engine = Self.engine(server)
        let op = engine.operation(path: "/bytes/10000000", params: ["chunkSize": "1000", "delayMs": "1"])
        let stream = op.bodyStream
        engine.enqueue(op)
        let consumer = Task {
            var count = 0
            for try await _ in stream {
                count += 1
                if count == 3 { break }
            }
            return count
        }
        #expect(try await consumer.value == 3)
        #expect(await failure(of: op)?.code == .cancelled)
    }

    @Test func aBodyStreamEndsWhenItsOperationEndsWithoutAFlight() async throws {
        let engine = NetworkEngine.fake(FakeTransport())
        let op = engine.operation(path: "a")
        let stream = op.bodyStream
        op.cancel()
        await #expect(throws: NetworkError.self) { for try await _ in stream {} }
    }

    @Test func aTimeoutEndsAStreamedBodyWhoseReaderStoppedReading() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let engine = Self.engine(server)
        let op = engine.operation(path: "/bytes/20000000", params: ["chunkSize": "65536"])
        op.timeouts.total = .seconds(2)
        let stream = op.bodyStream
        engine.enqueue(op)
        var iterator = stream.makeAsyncIterator()
        // One chunk (on a slow machine the timeout may come first), then the reader stops reading but keeps the stream.
        var streamError: (any Error)?
        do { _ = try await iterator.next() } catch { streamError = error }
        #expect(await failure(of: op)?.code == .timeout, "the flight waiting for room is not stuck")
        // Reading on: what was buffered, then the operation's own error, not the flight's cancellation.
        if streamError == nil {
            do { while try await iterator.next() != nil {} } catch { streamError = error }
        }
        #expect((streamError as? NetworkError)?.code == .timeout)
    }

    @Test func aBodyStreamOfAnUnacceptableAnswerThrowsTheStatus() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let engine = Self.engine(server)
        let op = engine.operation(path: "/status/503")
        let stream = op.bodyStream
        engine.enqueue(op)
        await #expect(throws: NetworkError.self) { for try await _ in stream {} }
        #expect(await failure(of: op)?.code == .unacceptableStatus)
    }
}

/// Progress values collected from a handler.
final class ProgressLog: Sendable {
    private let values = NIOLockedValueBox<[TransferProgress]>([])
    func append(_ progress: TransferProgress) { values.withLockedValue { $0.append(progress) } }
    var last: TransferProgress? { values.withLockedValue { $0.last } }
    var all: [TransferProgress] { values.withLockedValue { $0 } }
}
