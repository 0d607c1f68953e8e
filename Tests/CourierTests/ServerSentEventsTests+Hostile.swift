import Foundation
import Testing
@testable import Courier

/// Tier 3: server-sent event streams against servers that misbehave (review 16's findings).
extension ServerSentEventsTests {
    @Test func aServerThatSaysRetryZeroAndHangsUpGetsNoReconnectionStorm() async throws {
        let server = try await EventStreamServer.start { _, _ in [.head(200), .send("retry: 0\n\n"), .drop] }
        defer { Task { try? await server.shutdown() } }
        let engine = Self.engine(server)
        let reader = Task { () -> NetworkError? in
            do {
                for try await _ in engine.events(path: "/storm", options: .init(maximumDelay: .seconds(1))) {}
                return nil
            } catch {
                return error as? NetworkError
            }
        }
        try await Task.sleep(for: .milliseconds(1600))
        reader.cancel()
        _ = await reader.value
        // 0 ms, then at least 500 ms, then 1 s (doubled, capped): three connections, not hundreds.
        #expect(server.requests.count <= 4, "\(server.requests.count) connections in 1.6 s")
        // Hang-ups without an event count as failed attempts: maximumAttempts ends them.
        do {
            for try await _ in engine.events(path: "/storm", options: .init(maximumAttempts: 1, minimumDelay: .milliseconds(10))) {}
            Issue.record("a server that only hangs up did not fail the stream")
        } catch {
            #expect(error.code == .connectionLost)
        }
    }

    @Test func theLastEventIDIsThatOfTheLastEventHandedOutAndAControlCharacterIDIsIgnored() async throws {
        let server = try await EventStreamServer.start { request, index in
            switch index {
            case 0: [.head(200), .send("id: 1\ndata: one\n\nid: 2\ndata: two\n\nid: 3\ndata: three\n\nid: a\u{1}b\ndata: four\n\n"), .drop]
            default: [.head(204, [("Content-Length", "0")]), .end]
            }
        }
        defer { Task { try? await server.shutdown() } }
        let engine = Self.engine(server)
        var iterator = engine.events(path: "/three", options: .init(minimumDelay: .milliseconds(10))).makeAsyncIterator()
        #expect(try await iterator.next()?.id == "1")
        #expect(iterator.lastEventID == "1", "not the id of events parsed but not handed out yet")
        #expect(try await iterator.next()?.id == "2")
        #expect(iterator.lastEventID == "2")
        #expect(try await iterator.next()?.id == "3")
        // An id with a control character could not go back as Last-Event-ID: ignored, the stream goes on.
        #expect(try await iterator.next()?.data == "four")
        #expect(iterator.lastEventID == "3")
        #expect(try await iterator.next() == nil)
        #expect(server.requests.last?.header("Last-Event-ID") == "3")
    }

    @Test func eventsBeforeALineOverTheLimitAreDeliveredThenTheStreamFails() async throws {
        let server = try await EventStreamServer.start { _, _ in
            [.head(200), .send("id: 1\ndata: a\n\ndata: " + String(repeating: "x", count: 200) + "\n\n"), .hang]
        }
        defer { Task { try? await server.shutdown() } }
        let engine = Self.engine(server)
        var options = ServerSentEvents.Options()
        options.maximumEventSize = 64
        var iterator = engine.events(path: "/long", options: options).makeAsyncIterator()
        #expect(try await iterator.next()?.data == "a")
        do {
            _ = try await iterator.next()
            Issue.record("the long line was taken")
        } catch {
            #expect(error.code == .bodyTooLarge)
        }
        #expect(iterator.lastEventID == "1")
        #expect(server.requests.count == 1, "no reconnection after a stream over the limit")
    }
}

/// Tier 3: body streams and retries, and freezing (review 16's findings).
@Suite("Body streams: retries and freezing", .timeLimit(.minutes(1)))
struct BodyStreamRetryTests {
    @Test func anAcceptedEmptyAnswerThatIsRetriedLeavesTheReaderTheFinalBody() async throws {
        let server = try await EventStreamServer.start { _, index in
            index == 0 ? [.head(503, [("Content-Length", "0")]), .end] : [.head(200, [("Content-Length", "5")]), .send("hello"), .end]
        }
        defer { Task { try? await server.shutdown() } }
        let engine = ServerSentEventsTests.retryingEngine(server)
        let op = engine.operation(path: "/r503")
        #expect(try await ServerSentEventsTests.readStream(of: op, on: engine) == "hello")
        #expect(try await op.response().statusCode == 200)
        #expect(server.requests.count == 2)
    }

    @Test func aBodyStreamOfAnOperationThatFreezesEndsAtOnceAndTheRequestStaysFrozen() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("frozen-stream-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let engine = NetworkEngine(
            host: "127.0.0.1", port: 1, isSecure: false,
            configuration: .init { $0.dataDirectory = directory; $0.replaysOutbox = false; $0.reachability = ManualReachability() },
            queue: NetworkQueue())
        let op = engine.operation(path: "notes", method: .post, body: .text("keep me"))
        op.isFreezable = true
        let stream = op.bodyStream
        engine.enqueue(op)
        let started = ContinuousClock.now
        do {
            for try await _ in stream {}
            Issue.record("the stream of a frozen request ended as if answered")
        } catch {
            #expect((error as? NetworkError)?.code == .stillFrozen)
        }
        #expect(ContinuousClock.now - started < .seconds(10))
        var waited = 0
        while op.state != .frozen, waited < 100 {
            try await Task.sleep(for: .milliseconds(20))
            waited += 1
        }
        #expect(op.state == .frozen, "the reader's end did not cancel it")
        #expect(try Outbox(directory: directory).entries.count == 1)
    }
}
