import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import Testing
@testable import Courier

/// Tier 3: trailer fields sent after a request body, and the two trailer cases of the Swift HTTP API
/// workgroup's client conformance suite (apple/swift-http-api-proposal, `HTTPClientConformance`:
/// `testTrailerRead`, `testTrailerWrite`) played through Courier's public API against a server that
/// behaves as that suite's does.
@Suite("Request trailers")
struct RequestTrailersTests {
    /// The suite's server: `GET /trailers` answers "Response body" with three trailer fields; `/request`
    /// answers a JSON description of the request (method, headers, body, trailers).
    private func conformanceServer() async throws -> EventStreamServer {
        try await EventStreamServer.start { request, _ in
            if request.uri == "/trailers" {
                return [.head(200, [("Content-Type", "text/plain")]), .send("Response body"),
                        .trailers([("X-Trailer-One", "first-value"), ("X-Trailer-Two", "second-value"), ("X-Checksum", "abc123")])]
            }
            var trailers: [String: [String]] = [:]
            for (name, value) in request.trailers ?? [] { trailers[name, default: []].append(value) }
            var headers: [String: [String]] = [:]
            for (name, value) in request.headers { headers[name, default: []].append(value) }
            let json = try! JSONSerialization.data(withJSONObject: ["body": request.body, "headers": headers, "trailers": trailers])
            return [.head(200, [("Content-Type", "application/json"), ("Content-Length", "\(json.count)")]),
                    .send(String(decoding: json, as: UTF8.self)), .end]
        }
    }

    private struct Echo: Decodable {
        var body: String
        var headers: [String: [String]]
        var trailers: [String: [String]]
    }

    @Test func conformanceTrailerRead() async throws {
        let server = try await conformanceServer()
        defer { Task { try? await server.shutdown() } }
        let engine = ServerSentEventsTests.engine(server)
        let response = try await engine.send(engine.operation(path: "/trailers"))
        #expect(response.statusCode == 200)
        #expect(response.string == "Response body")
        let trailers = try #require(response.trailers)
        #expect(trailers[HTTPField.Name("X-Trailer-One")!] == "first-value")
        #expect(trailers[HTTPField.Name("X-Trailer-Two")!] == "second-value")
        #expect(trailers[HTTPField.Name("X-Checksum")!] == "abc123")
    }

    @Test func conformanceTrailerWrite() async throws {
        let server = try await conformanceServer()
        defer { Task { try? await server.shutdown() } }
        let engine = ServerSentEventsTests.engine(server)
        let body = RequestBody.text("Hello World").trailers([
            HTTPField.Name("X-Request-Trailer-One")!: "first-trailer-value",
            HTTPField.Name("X-Request-Trailer-Two")!: "second-trailer-value",
        ])
        let echo = try await engine.send(engine.operation(path: "/request", method: .post, body: body)).decode(Echo.self)
        #expect(echo.body == "Hello World")
        #expect(echo.trailers["X-Request-Trailer-One"] == ["first-trailer-value"])
        #expect(echo.trailers["X-Request-Trailer-Two"] == ["second-trailer-value"])
        // Announced, and framed so that trailers can follow: chunked, no length.
        #expect(echo.headers["Trailer"] == ["X-Request-Trailer-One, X-Request-Trailer-Two"])
        #expect(echo.headers["Content-Length"] == nil)
        #expect(echo.headers["Content-Type"] == ["text/plain; charset=utf-8"])
        #expect(echo.headers.keys.contains { $0.lowercased().hasPrefix("x-request-trailer") } == false, "not sent in the head")
    }

    @Test func computedTrailersAreMadeAfterTheWholeStreamWent() async throws {
        let server = try await conformanceServer()
        defer { Task { try? await server.shutdown() } }
        let engine = ServerSentEventsTests.engine(server)
        let taken = NIOLockedValueBox(0)
        let chunks = AsyncStream<[UInt8]> { continuation in
            for piece in ["al", "pha", "bet"] { continuation.yield(Array(piece.utf8)) }
            continuation.finish()
        }.map { chunk in
            taken.withLockedValue { $0 += chunk.count }
            return chunk
        }
        let name = HTTPField.Name("X-Bytes-Sent")!
        let body = RequestBody.stream(chunks, length: 8).trailers(announcing: [name]) {
            [name: "\(taken.withLockedValue { $0 })"]
        }
        let echo = try await engine.send(engine.operation(path: "/request", method: .post, body: body)).decode(Echo.self)
        #expect(echo.body == "alphabet")
        #expect(echo.trailers["X-Bytes-Sent"] == ["8"], "made once every chunk had been taken")
        #expect(echo.headers["Content-Length"] == nil, "a declared length gives way to chunked framing")
        #expect(echo.headers["Trailer"] == ["X-Bytes-Sent"])
    }

    @Test func fieldsThatMayNotBeTrailersFailBeforeAnythingIsSent() async throws {
        let server = try await conformanceServer()
        defer { Task { try? await server.shutdown() } }
        let engine = ServerSentEventsTests.engine(server)
        for field in [HTTPField(name: .contentLength, value: "3"), HTTPField(name: .authorization, value: "Bearer t"),
                      HTTPField(name: HTTPField.Name("Host")!, value: "elsewhere"), HTTPField(name: .transferEncoding, value: "chunked")] {
            let body = RequestBody.text("abc").trailers(HTTPFields([field]))
            let error = await #expect(throws: NetworkError.self) {
                try await engine.send(engine.operation(path: "/request", method: .post, body: body))
            }
            #expect(error?.code == .invalidHeader, "\(field.name)")
        }
        let announced = RequestBody.text("abc").trailers(announcing: [.cookie]) { [:] }
        let error = await #expect(throws: NetworkError.self) {
            try await engine.send(engine.operation(path: "/request", method: .post, body: announced))
        }
        #expect(error?.code == .invalidHeader)
        #expect(server.requests.isEmpty, "nothing reached the server")
        // CR and LF in a value cannot start a field of their own: the value goes as one line.
        let injected = RequestBody.text("abc").trailers([HTTPField.Name("X-Note")!: "a\r\nInjected: yes"])
        let echo = try await engine.send(engine.operation(path: "/request", method: .post, body: injected)).decode(Echo.self)
        #expect(echo.trailers["Injected"] == nil)
        #expect(echo.trailers["X-Note"]?.count == 1)
    }

    @Test func aRefusedOrFailingComputedTrailerAbortsTheExchange() async throws {
        let server = try await conformanceServer()
        defer { Task { try? await server.shutdown() } }
        let engine = ServerSentEventsTests.engine(server)
        struct Broken: Error {}
        let failing = RequestBody.text("abc").trailers { throw Broken() }
        let failed = await #expect(throws: NetworkError.self) {
            try await engine.send(engine.operation(path: "/request", method: .post, body: failing))
        }
        #expect(failed?.code == .encodingFailed)
        #expect(failed?.underlying is Broken)
        let refused = RequestBody.text("abc").trailers { [.setCookie: "a=b"] }
        let invalid = await #expect(throws: NetworkError.self) {
            try await engine.send(engine.operation(path: "/request", method: .post, body: refused))
        }
        #expect(invalid?.code == .invalidHeader)
        #expect(server.requests.isEmpty, "the server never took a body without its trailers as complete")
        // The engine goes on: the next request is answered.
        #expect(try await engine.send(engine.operation(path: "/trailers")).string == "Response body")
    }

    @Test func aRedirectThatKeepsTheBodyResendsItsTrailersAndOneThatDropsItDoesNot() async throws {
        let server = try await EventStreamServer.start { request, _ in
            switch request.uri {
            case "/307": return [.head(307, [("Location", "/landing"), ("Content-Length", "0")]), .end]
            case "/303": return [.head(303, [("Location", "/landing"), ("Content-Length", "0")]), .end]
            default:
                let text = (request.trailers ?? []).map { "\($0.0)=\($0.1)" }.joined(separator: ",")
                return [.head(200, [("Content-Length", "\(text.utf8.count)")]), .send(text), .end]
            }
        }
        defer { Task { try? await server.shutdown() } }
        let engine = ServerSentEventsTests.engine(server)
        let calls = NIOLockedValueBox(0)
        let name = HTTPField.Name("X-Attempt")!
        let body = RequestBody.data(Data("payload".utf8)).trailers(announcing: [name]) {
            [name: "\(calls.withLockedValue { $0 += 1; return $0 })"]
        }
        let kept = try await engine.send(engine.operation(path: "/307", method: .post, body: body))
        #expect(kept.string == "X-Attempt=2", "made again for the hop that sent the body again")
        #expect(server.requests.map(\.body) == ["payload", "payload"])
        let dropped = try await engine.send(engine.operation(path: "/303", method: .post, body: body))
        #expect(dropped.string == "", "the GET after a 303 has no body and no trailers")
        #expect(server.requests.last?.header("Trailer") == nil)
    }

    @Test func aTrailerNamedLikeACredentialIsRefusedSoNoRedirectCanCarryIt() async throws {
        // Review 18: a 307 to another origin dropped the `X-API-Key` header but not the same trailer.
        let other = try await conformanceServer()
        defer { Task { try? await other.shutdown() } }
        let origin = try await EventStreamServer.start { _, _ in
            [.head(307, [("Location", "http://localhost:\(other.port)/request"), ("Content-Length", "0")]), .end]
        }
        defer { Task { try? await origin.shutdown() } }
        let engine = ServerSentEventsTests.engine(origin)
        let key = HTTPField.Name("X-API-Key")!
        // Given as they are, or announced: refused before anything is sent.
        for body in [RequestBody.data(Data("payload".utf8)).trailers([key: "secret-key-123"]),
                     RequestBody.data(Data("payload".utf8)).trailers(announcing: [key]) { [key: "secret-key-123"] }] {
            let error = await #expect(throws: NetworkError.self) {
                try await engine.send(engine.operation(path: "/upload", method: .post, body: body))
            }
            #expect(error?.code == .invalidHeader)
        }
        #expect(origin.requests.isEmpty)
        // Made after the body without being announced: refused then, and the exchange is aborted.
        let late = RequestBody.data(Data("payload".utf8)).trailers { [key: "secret-key-123"] }
        let error = await #expect(throws: NetworkError.self) {
            try await engine.send(engine.operation(path: "/upload", method: .post, body: late))
        }
        #expect(error?.code == .invalidHeader)
        #expect(origin.requests.isEmpty && other.requests.isEmpty, "no server took the body, nor the key")
    }

    @Test func aBodyCutShortByCancellationNeverHasItsTrailersMade() async throws {
        // Review 18: the closure ran over a partial body once the caller's task was cancelled.
        let server = try await conformanceServer()
        defer { Task { try? await server.shutdown() } }
        let engine = ServerSentEventsTests.engine(server)
        let calls = NIOLockedValueBox(0)
        let (chunks, continuation) = AsyncStream<[UInt8]>.makeStream()
        continuation.yield(Array("first part of a longer body".utf8))   // more would follow
        let name = HTTPField.Name("X-Digest")!
        let body = RequestBody.stream(chunks).trailers(announcing: [name]) {
            calls.withLockedValue { $0 += 1 }
            return [name: "digest-of-a-partial-body"]
        }
        let task = Task { try await engine.send(engine.operation(path: "/request", method: .post, body: body)) }
        try await Task.sleep(for: .milliseconds(300))
        task.cancel()
        let outcome = await task.result
        try await Task.sleep(for: .milliseconds(300))
        #expect((try? outcome.get()) == nil)
        #expect(calls.withLockedValue { $0 } == 0, "the body never ended")
        #expect(server.requests.isEmpty)
        continuation.finish()
    }

    @Test func aBodyWithTrailersIsNeverFrozen() async throws {
        let server = try await conformanceServer()
        defer { Task { try? await server.shutdown() } }
        let engine = ServerSentEventsTests.engine(server)
        let op = engine.operation(path: "/request", method: .post, body: RequestBody.text("abc").trailers([HTTPField.Name("X-A")!: "1"]))
        op.isFreezable = true
        let error = await #expect(throws: NetworkError.self) { try await engine.send(op) }
        #expect(error?.code == .bodyNotReplayable)
        #expect(server.requests.isEmpty)
    }
}
