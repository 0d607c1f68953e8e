import Courier
import CourierTestServer
import Foundation
import NIOConcurrencyHelpers

extension Demo {
    /// Scene 12: live connections. A server-sent event stream whose server drops the connection after
    /// every three events: each reconnection sends `Last-Event-ID` and picks up where the last one
    /// stopped, until the server says 204. Meanwhile a queue one request wide still runs a GET: an open
    /// stream holds no slot. Then an upload whose trailer field is made after its last chunk.
    nonisolated func liveEvents(_ server: TestServer) async throws {
        say("12. Live connections: server-sent events resumed with Last-Event-ID, a request trailer")
        let engine = NetworkEngine(host: "127.0.0.1", port: server.port, isSecure: false, configuration: .init {
            $0.dataDirectory = nil
        }, queue: NetworkQueue(maximumConcurrentOperations: 1))
        server.resetStatistics()
        var stream = engine.events(path: "/events", params: ["total": .int(9), "per": .int(3)]).makeAsyncIterator()
        var received: [String] = []
        while let event = try await stream.next() {
            received.append(event.id ?? "-")
            if received.count == 1 {
                // The stream is open and the queue is one wide: a plain GET runs all the same.
                let response = try await engine.send(engine.operation(path: "/get"))
                say("   while the stream is open, a GET on a queue one request wide: \(response.statusCode)")
            }
        }
        let resumes = server.recordedRequests.filter { $0.path == "/events" }.compactMap { $0.header("Last-Event-ID") }
        say("   events \(received.joined(separator: ", ")) over \(stream.connectionCount) connections "
            + "(Last-Event-ID sent: \(resumes.joined(separator: ", "))), then the server answered 204")
        try await uploadWithTrailer(engine)
    }

    /// A streamed upload followed by a trailer field made once its last chunk went: the byte count, which
    /// the server reads after the body (its `/anything` echo shows the trailers it received).
    private nonisolated func uploadWithTrailer(_ engine: NetworkEngine) async throws {
        let sent = NIOLockedValueBox(0)
        let lines = ["first line\n", "second line\n", "third line\n"]
        let chunks = AsyncStream<[UInt8]> { continuation in
            for line in lines { continuation.yield(Array(line.utf8)) }
            continuation.finish()
        }.map { chunk in
            sent.withLockedValue { $0 += chunk.count }
            return chunk
        }
        let count = HTTPField.Name("X-Byte-Count")!
        let body = RequestBody.stream(chunks, contentType: "text/plain").trailers(announcing: [count]) {
            [count: String(sent.withLockedValue { $0 })]
        }
        let echo = try await engine.send(engine.operation(path: "/anything", method: .post, body: body)).json() as? [String: Any]
        let trailers = echo?["trailers"] as? [String: String] ?? [:]
        say("   a streamed upload's trailer, made after its last chunk: X-Byte-Count: \(trailers["x-byte-count"] ?? "none") "
            + "(the server received \((echo?["body"] as? String)?.utf8.count ?? 0) bytes)\n")
    }
}
