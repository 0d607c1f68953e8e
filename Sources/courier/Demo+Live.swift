import Courier
import CourierTestServer
import Foundation

extension Demo {
    /// Scene 12: server-sent events. A stream whose server drops the connection after every three events:
    /// each reconnection sends `Last-Event-ID` and picks up where the last one stopped, until the server
    /// says 204. Meanwhile a queue one request wide still runs a GET: an open stream holds no slot.
    nonisolated func liveEvents(_ server: TestServer) async throws {
        say("12. Server-sent events: reconnecting with Last-Event-ID")
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
            + "(Last-Event-ID sent: \(resumes.joined(separator: ", "))), then the server answered 204\n")
    }
}
