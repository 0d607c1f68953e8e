import Foundation
import HTTPTypes
import Testing
@testable import Courier

/// Tier 3: response trailers, read through every way a body is taken.
@Suite("Response trailers")
struct TrailersTests {
    static let checksum = HTTPField.Name("X-Checksum")!

    private func server() async throws -> EventStreamServer {
        try await EventStreamServer.start { request, _ in
            switch request.uri {
            case "/plain": [.head(200, [("Content-Type", "text/plain"), ("Content-Length", "5")]), .send("hello"), .end]
            default:
                [.head(200, [("Content-Type", "text/plain"), ("Trailer", "X-Checksum")]), .send("hel"), .send("lo"),
                 .trailers([("X-Checksum", "sha256=abc"), ("X-Rows", "2")])]
            }
        }
    }

    @Test func aResponseKeepsItsTrailersApartFromItsHeaders() async throws {
        let server = try await server()
        defer { Task { try? await server.shutdown() } }
        let engine = ServerSentEventsTests.engine(server)
        let response = try await engine.send(engine.operation(path: "/trailed"))
        #expect(response.string == "hello")
        #expect(response.trailers?[Self.checksum] == "sha256=abc")
        #expect(response.trailers?[HTTPField.Name("X-Rows")!] == "2")
        #expect(response.headers[Self.checksum] == nil, "not merged into the head")
        let plain = try await engine.send(engine.operation(path: "/plain"))
        #expect(plain.trailers == nil)
    }

    @Test func theyArriveWithAnInformationalHandlerAndAreNeverARetriedAttemptsOwn() async throws {
        let server = try await EventStreamServer.start { request, index in
            if request.uri == "/retried" && index == 1 {
                return [.head(503, [("Content-Type", "text/plain")]), .trailers([("X-Checksum", "stale")])]
            }
            if request.uri == "/retried" { return [.head(200, [("Content-Length", "5")]), .send("fresh"), .end] }
            return [.head(200, [("Content-Type", "text/plain")]), .send("hello"), .trailers([("X-Checksum", "sha256=abc")])]
        }
        defer { Task { try? await server.shutdown() } }
        let engine = ServerSentEventsTests.engine(server)
        // Through the connection that reports interim responses.
        let interim = engine.operation(path: "/trailed").onInformationalResponse { _ in }
        #expect(try await engine.send(interim).trailers?[Self.checksum] == "sha256=abc")
        // A 503 with trailers, retried: the reader and the response see the final attempt only.
        let retrying = ServerSentEventsTests.retryingEngine(server)
        let op = retrying.operation(path: "/retried")
        #expect(try await ServerSentEventsTests.readStream(of: op, on: retrying) == "fresh")
        #expect(op.responseTrailers == nil, "the 503's trailers are not the answer's")
        #expect(try await op.response().trailers == nil)
    }

    @Test func aBodyStreamReaderAndADownloadSeeThemToo() async throws {
        let server = try await server()
        defer { Task { try? await server.shutdown() } }
        let engine = ServerSentEventsTests.engine(server)
        let op = engine.operation(path: "/trailed")
        #expect(try await ServerSentEventsTests.readStream(of: op, on: engine) == "hello")
        #expect(op.responseTrailers?[Self.checksum] == "sha256=abc", "set before the stream's end is delivered")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("trailers-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        let download = try await engine.download(path: "/trailed", to: file)
        #expect(try Data(contentsOf: file) == Data("hello".utf8))
        #expect(download.trailers?[Self.checksum] == "sha256=abc")
    }
}
