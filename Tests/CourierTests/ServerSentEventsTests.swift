import Foundation
import Testing
@testable import Courier

/// Tier 3: server-sent event streams against a scripted server on 127.0.0.1.
@Suite("Server-sent events", .timeLimit(.minutes(2)))
struct ServerSentEventsTests {
    typealias Step = EventStreamServer.Step

    static func engine(_ server: EventStreamServer, reachability: ManualReachability = ManualReachability(), width: Int = 6) -> NetworkEngine {
        NetworkEngine(
            host: "127.0.0.1", port: server.port, isSecure: false,
            configuration: .init { $0.dataDirectory = nil; $0.reachability = reachability },
            queue: NetworkQueue(maximumConcurrentOperations: width))
    }

    /// An engine that takes every status as an answer and retries 408, 429 and 5xx quickly.
    static func retryingEngine(_ server: EventStreamServer) -> NetworkEngine {
        NetworkEngine(
            host: "127.0.0.1", port: server.port, isSecure: false,
            configuration: .init {
                $0.dataDirectory = nil
                $0.reachability = ManualReachability()
                $0.acceptableStatusCodes = Set(200..<600)
                $0.interceptors = [RetryPolicy(maximumAttempts: 3, backoff: RetryBackoff(base: .milliseconds(5)))]
            }, queue: NetworkQueue())
    }

    /// Enqueues `operation` and reads its body stream to the end.
    static func readStream(of operation: NetworkOperation, on engine: NetworkEngine) async throws -> String {
        let stream = operation.bodyStream
        engine.enqueue(operation)
        var body = Data()
        for try await chunk in stream { body += chunk }
        return String(decoding: body, as: UTF8.self)
    }

    private func collect(_ events: ServerSentEvents) async throws(NetworkError) -> [ServerSentEvent] {
        var all: [ServerSentEvent] = []
        for try await event in events { all.append(event) }
        return all
    }

    @Test func everyEventArrivesOnceInOrderAcrossADropAndTheReconnectSendsLastEventIDAfterTheServersRetry() async throws {
        // The server keeps five events and resumes after the client's Last-Event-ID, as a real one does: the
        // first connection sends three (the last one's blank line in the next piece, then half an event) and
        // drops; a drop may lose what was on the wire, and Last-Event-ID gets it back.
        let feed = (1...5).map { "id: \($0)\n\($0 == 2 ? "event: update\n" : "")data: \(["one", "two", "three", "four", "five"][$0 - 1])\n\n" }
        let server = try await EventStreamServer.start { request, index in
            let after = request.header("Last-Event-ID").flatMap(Int.init) ?? 0
            if index == 0 {
                let first = "retry: 300\n\n: keep-alive\n\n" + feed[0] + feed[1].dropLast()
                return [.head(200), .send(first), .pause(milliseconds: 20), .send("\n" + feed[2] + "data: half an event"), .pause(milliseconds: 20), .drop]
            }
            guard after < 5 else { return [.head(204, [("Content-Length", "0")]), .end] }
            return [.head(200, [("Content-Type", "text/event-stream; charset=utf-8")]), .send(feed[after...].joined()), .end]
        }
        defer { Task { try? await server.shutdown() } }
        let engine = Self.engine(server)
        let events = try await collect(engine.events(path: "/feed", options: .init(reconnectionTime: .seconds(30))))
        #expect(events.map(\.data) == ["one", "two", "three", "four", "five"])
        #expect(events.map(\.id) == ["1", "2", "3", "4", "5"])
        #expect(events[1].event == "update")
        let requests = server.requests
        #expect(requests.count == 3)
        #expect(requests.last?.header("Last-Event-ID") == "5")
        #expect(["1", "3"].contains(requests[1].header("Last-Event-ID")), "what the first connection delivered")
        #expect(requests[0].header("Last-Event-ID") == nil)
        #expect(requests.allSatisfy { $0.header("Accept") == "text/event-stream" && $0.uri == "/feed" })
        // The server's `retry: 300` replaced the 30 s of the options.
        let wait = requests[1].at - requests[0].at
        #expect(wait >= .milliseconds(300) && wait < .seconds(20), "\(wait)")
        #expect(engine.queue.operationCount == 0)
    }

    @Test func a204EndsTheStreamAndAnAnswerThatIsNoStreamFailsItWithoutReconnecting() async throws {
        let server = try await EventStreamServer.start { request, _ in
            switch request.uri {
            case "/empty": [.head(204, [("Content-Length", "0")]), .end]
            case "/json": [.head(200, [("Content-Type", "application/json")]), .send("{}"), .end]
            case "/gone": [.head(404, [("Content-Type", "text/plain"), ("Content-Length", "4")]), .send("gone"), .end]
            default: [.head(401, [("Content-Length", "0")]), .end]
            }
        }
        defer { Task { try? await server.shutdown() } }
        let engine = Self.engine(server)
        #expect(try await collect(engine.events(path: "/empty")).isEmpty)
        for (path, code) in [("/json", NetworkError.Code.unacceptableContentType), ("/gone", .unacceptableStatus), ("/private", .unacceptableStatus)] {
            do {
                _ = try await collect(engine.events(path: path, options: .init(reconnectionTime: .milliseconds(10))))
                Issue.record("\(path) did not fail")
            } catch {
                #expect(error.code == code, "\(path)")
            }
        }
        #expect(server.requests.map(\.uri) == ["/empty", "/json", "/gone", "/private"], "nothing reconnected")
    }

    @Test func unavailableAnswersBackOffThenTheStreamOpensAndMaximumAttemptsFailsIt() async throws {
        let server = try await EventStreamServer.start { request, index in
            if request.uri == "/down" || index < 2 { return [.head(503, [("Content-Length", "0")]), .end] }
            return request.header("Last-Event-ID") == nil ? [.head(200), .send("id: a\ndata: up\n\n"), .end] : [.head(204, [("Content-Length", "0")]), .end]
        }
        defer { Task { try? await server.shutdown() } }
        let engine = Self.engine(server)
        let options = ServerSentEvents.Options(reconnectionTime: .milliseconds(100), maximumDelay: .milliseconds(150))
        #expect(try await collect(engine.events(path: "/up", options: options)).map(\.data) == ["up"])
        let requests = server.requests
        #expect(requests.count == 4)
        #expect(requests[1].at - requests[0].at >= .milliseconds(100))
        #expect(requests[2].at - requests[1].at >= .milliseconds(150), "the second wait doubled, up to the maximum")
        do {
            _ = try await collect(engine.events(path: "/down", options: .init(reconnectionTime: .milliseconds(10), maximumAttempts: 2)))
            Issue.record("a server that is always down did not fail the stream")
        } catch {
            #expect(error.code == .unacceptableStatus)
            #expect(error.message.contains("503"))
        }
        #expect(server.requests.count == 4 + 3, "the first attempt and two more")
    }

    @Test func anOpenStreamLeavesTheQueueToOtherWorkAndBreakingOutClosesIt() async throws {
        let server = try await EventStreamServer.start { request, _ in
            request.uri == "/stream" ? [.head(200), .send("data: hello\n\n"), .hang] : [.head(200, [("Content-Length", "2")]), .send("ok"), .end]
        }
        defer { Task { try? await server.shutdown() } }
        let engine = Self.engine(server, width: 1)
        var iterator = engine.events(path: "/stream", options: .init(idleTimeout: .seconds(30))).makeAsyncIterator()
        #expect(try await iterator.next()?.data == "hello")
        #expect(engine.queue.operationCount == 1, "the stream is still the queue's")
        // The queue is one wide and the stream is open: a GET still runs (at once, not when the stream's
        // connection times out).
        let start = ContinuousClock.now
        let response = try await engine.send(engine.operation(path: "/plain"))
        #expect(response.string == "ok")
        #expect(ContinuousClock.now - start < .seconds(10))
        #expect(iterator.connectionCount == 1)
        _ = consume iterator
        var waited = 0
        while engine.queue.operationCount > 0, waited < 200 {
            try await Task.sleep(for: .milliseconds(10))
            waited += 1
        }
        #expect(engine.queue.operationCount == 0, "dropping the iterator cancelled the stream's operation")
    }

    @Test func whileTheHostIsUnreachableTheStreamWaitsThenConnects() async throws {
        let server = try await EventStreamServer.start { _, _ in [.head(200), .send("data: back\n\n"), .hang] }
        defer { Task { try? await server.shutdown() } }
        let reachability = ManualReachability(.unreachable)
        let engine = Self.engine(server, reachability: reachability)
        let first = Task { () throws(NetworkError) -> String? in
            var iterator = engine.events(path: "/live").makeAsyncIterator()
            return try await iterator.next()?.data
        }
        try await Task.sleep(for: .milliseconds(300))
        #expect(server.requests.isEmpty, "nothing is sent while the host is unreachable")
        reachability.setStatus(.reachable(via: .wifi))
        #expect(try await first.value == "back")
        #expect(server.requests.count == 1)
    }

    @Test func cancellingTheReadersTaskEndsTheLoopWithoutAnError() async throws {
        let server = try await EventStreamServer.start { _, _ in [.head(200), .send("data: one\n\n"), .hang] }
        defer { Task { try? await server.shutdown() } }
        let engine = Self.engine(server)
        let (started, continuation) = AsyncStream<Void>.makeStream()
        let reader = Task { () throws(NetworkError) -> Int in
            var count = 0
            for try await _ in engine.events(path: "/s") {
                count += 1
                continuation.yield()
            }
            return count
        }
        for await _ in started { break }
        reader.cancel()
        #expect(try await reader.value == 1)
        var waited = 0
        while engine.queue.operationCount > 0, waited < 200 {
            try await Task.sleep(for: .milliseconds(10))
            waited += 1
        }
        #expect(engine.queue.operationCount == 0)
    }

    @Test func aHundredThousandEventsArriveInOrder() async throws {
        let server = try await EventStreamServer.start { _, index in
            guard index == 0 else { return [.head(204, [("Content-Length", "0")]), .end] }
            var steps: [Step] = [.head(200)]
            for block in 0..<100 {
                steps.append(.send((0..<1000).map { "id: \(block * 1000 + $0)\ndata: {\"n\":\(block * 1000 + $0)}\n\n" }.joined()))
            }
            steps.append(.end)
            return steps
        }
        defer { Task { try? await server.shutdown() } }
        let engine = Self.engine(server)
        var expected = 0
        for try await event in engine.events(path: "/many", options: .init(reconnectionTime: .milliseconds(10))) {
            guard event.id == String(expected) else {
                Issue.record("event \(expected) arrived as \(event.id ?? "-")")
                break
            }
            expected += 1
        }
        #expect(expected == 100_000)
        #expect(server.requests.last?.header("Last-Event-ID") == "99999")
    }
}
