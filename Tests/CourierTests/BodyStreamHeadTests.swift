import CourierTestServer
import Foundation
import HTTPTypes
import Testing
@testable import Courier

/// Issue 23 F: a `bodyStream` reader sees the response's head before the first chunk, and cancelling the
/// reader's task throws `NetworkError` `.cancelled` (not `CancellationError`).
@Suite("body stream: head and cancellation")
struct BodyStreamHeadTests {
    static func engine(_ server: TestServer) -> NetworkEngine {
        NetworkEngine(host: "127.0.0.1", port: server.port, isSecure: false, configuration: .init { $0.dataDirectory = nil; $0.reachability = ManualReachability() }, queue: NetworkQueue())
    }

    @Test func theHeadIsThereBeforeTheFirstChunk() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let engine = Self.engine(server)
        let op = engine.operation(path: "/bytes/200000", params: ["chunkSize": "1000", "delayMs": "1"])
        let stream = op.bodyStream
        #expect(op.responseHead == nil)
        engine.enqueue(op)
        var heads: [HTTPResponse?] = []
        for try await _ in stream where heads.isEmpty { heads.append(op.responseHead) }
        let head = try #require(heads.first ?? nil)
        #expect(head.status == .ok)
        #expect(head.headerFields[.contentLength] == "200000" || head.headerFields[.transferEncoding] != nil)
        _ = try await op.response()
    }

    @Test func cancellingTheReadersTaskThrowsNetworkErrorCancelled() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let engine = Self.engine(server)
        let op = engine.operation(path: "/bytes/10000000", params: ["chunkSize": "1000", "delayMs": "5"])
        let stream = op.bodyStream
        engine.enqueue(op)
        let started = AsyncStream<Void>.makeStream()
        let reader = Task { () -> (any Error)? in
            do {
                var first = true
                for try await _ in stream where first {
                    first = false
                    started.continuation.yield()
                }
                return nil
            } catch {
                return error
            }
        }
        for await _ in started.stream { break }
        reader.cancel()
        let error = await reader.value
        #expect((error as? NetworkError)?.code == .cancelled, "\(String(describing: error))")
        #expect(!(error is CancellationError))
    }
}
