import Foundation
import NIOConcurrencyHelpers
import Testing
@testable import Courier

/// Issue 18 items 12 and 16–20: lifetimes that end, sequences that start, handlers in a defined order,
/// an API in maintenance frozen like an unreachable one, and the small helpers a REST client needs.
@Suite("Core: small fixes")
struct CoreSmallFixesTests {
    // MARK: 12

    @Test func aFlushOfAStoppedReplayerReturns() async {
        let directory = OutboxKeepingTests.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = try! OutboxDatabase.open(at: directory)
        let replayer = OutboxReplayer(
            database: database, pipeline: OutboxPipeline(origin: "https://api.example.com:443", name: "test"), retry: OutboxRetry(),
            isReachable: true) { _ in nil }
        replayer.stop()
        #expect(await replayer.flush().isEmpty, "returns at once, no continuation left behind")
    }

    @Test func aBatchTheCallerDoesNotKeepStillFinishes() async throws {
        let engine = NetworkEngine.fake(FakeTransport { _ in
            try await Task.sleep(for: .milliseconds(30))
            return FakeTransport.reply()
        })
        let finished = Recorder<Int>()
        do {
            let batch = NetworkBatch(callbackQueue: DispatchQueue(label: "test.batch"))
            for n in 0..<3 { batch.add(engine.operation(path: "item/\(n)")) }
            batch.onFinish { finished.append($0.succeeded.count) }
            batch.go()
        }
        #expect(await eventually { finished.all == [3] })
    }

    @Test func aPrivateQueueEndsItsStreamsWhenItGoesAway() async {
        var queue: NetworkQueue? = NetworkQueue()
        let activity = queue!.activity
        let events = queue!.events
        queue = nil
        var counts: [Int] = []
        for await count in activity { counts.append(count) }
        #expect(counts == [0])
        for await _ in events {}
    }

    // MARK: 16, 17

    @Test func iteratingEventsStartsTheOperationLikeResponseDoes() async throws {
        let engine = NetworkEngine.fake(FakeTransport())
        let op = engine.operation(path: "x")
        var last: NetworkOperation.Event?
        for await event in op.events { last = event }   // copied alone from the README: it must not wait forever
        guard case .response(let response)? = last else { Issue.record("no response: \(String(describing: last))"); return }
        #expect(response.statusCode == 200)
    }

    @Test func everyHandlerHasRunBeforeTheAsyncResultIsDelivered() async throws {
        let engine = NetworkEngine.fake(FakeTransport { _ in FakeTransport.reply(headers: [.contentLength: "4096"], body: String(repeating: "x", count: 4096), parts: 4) })
        for _ in 0..<20 {
            let heard = Recorder<String>()
            let op = engine.operation(path: "x")
                .onDownloadProgress { if $0.fractionCompleted == 1 { heard.append("100%") } }
                .onCompletion { _ in heard.append("completion") }
            _ = try await engine.send(op)
            #expect(heard.all == ["100%", "completion"], "handlers all ran before send returned")
        }
    }

    // MARK: 18, 19

    @Test func anAPIInMaintenanceIsFrozenLikeAnUnreachableOneAndRetryAfterIsHonoured() async throws {
        let directory = OutboxKeepingTests.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let maintenance = NIOLockedValueBox(true)
        let transport = FakeTransport { _ in
            maintenance.withLockedValue { $0 }
                ? FakeTransport.reply(status: 503, headers: [.retryAfter: "1"], body: "maintenance")
                : FakeTransport.reply(status: 201)
        }
        let engine = NetworkEngine.fake(transport) {
            $0.dataDirectory = directory
            $0.freezesWhenServerUnavailable = true
            $0.outboxRetry = OutboxRetry(initialDelay: .milliseconds(20), maximumDelay: .milliseconds(100))
        }
        let post = engine.operation(path: "notes", method: .post, body: .text("during maintenance"))
        post.isFreezable = true
        engine.enqueue(post)
        #expect(await eventually { post.state == .frozen })
        let entry = try #require(engine.outbox?.entries.first)
        #expect(entry.lastStatus == 503)
        #expect(entry.nextAttemptAt.timeIntervalSince(entry.createdAt) >= 0.99, "not before Retry-After")
        maintenance.withLockedValue { $0 = false }
        let started = ContinuousClock.now
        #expect(try await post.response().statusCode == 201)
        #expect(ContinuousClock.now - started > .milliseconds(400))
        #expect(transport.requestCount == 2)

        // Off (the default), a 503 is an answer like any other.
        let plain = NetworkEngine.fake(FakeTransport { _ in FakeTransport.reply(status: 503) }) { $0.dataDirectory = directory }
        let other = plain.operation(path: "notes", method: .post)
        other.isFreezable = true
        #expect(await failure(of: other)?.code == .unacceptableStatus)
    }

    @Test func aHostThatAnswersAgainEndsTheReplayBackoffAtOnce() async throws {
        let directory = OutboxKeepingTests.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let isUp = NIOLockedValueBox(false)
        let transport = FakeTransport { _ in
            guard isUp.withLockedValue({ $0 }) else { throw NetworkError(.cannotConnect, "refused") }
            return FakeTransport.reply(status: 201)
        }
        // Loopback never looks unreachable: only backoff would bring the replay back, here after 10 minutes.
        let engine = NetworkEngine.fake(transport) {
            $0.dataDirectory = directory
            $0.outboxRetry = OutboxRetry(initialDelay: .seconds(600), maximumDelay: .seconds(600))
        }
        let events = engine.outboxEvents
        let post = engine.operation(path: "notes", method: .post, body: .text("x"))
        post.isFreezable = true
        engine.enqueue(post)
        // Its replay is tried, refused, and scheduled ten minutes later.
        for await event in events { if case .retryScheduled = event { break } }
        isUp.withLockedValue { $0 = true }
        _ = try await engine.send(engine.operation(path: "ping"))
        #expect(await eventually(timeout: .seconds(10)) { post.isFinished }, "replayed as soon as the host answered something")
        #expect(post.response?.statusCode == 201)
    }

    // MARK: 20

    @Test func linkHeadersGiveTheNextPage() throws {
        let url = URL(string: "https://api.example.com/v1/issues?page=2")!
        let response = NetworkResponse(
            status: .ok,
            headers: [HTTPField.Name("Link")!: "<https://api.example.com/v1/issues?page=3>; rel=\"next\", </v1/issues?page=9>; rel=\"last end\", <x>; title=\"a, b\""],
            url: url)
        #expect(response.links["next"]?.absoluteString == "https://api.example.com/v1/issues?page=3")
        #expect(response.links["last"]?.absoluteString == "https://api.example.com/v1/issues?page=9")
        #expect(response.links["end"] == response.links["last"])
        #expect(response.links.count == 3)
        #expect(LinkHeader.parse("garbage, <unclosed; rel=next").isEmpty)
        // A quote followed by a combining mark still closes the quoted-string (scalars, not characters).
        let marked = LinkHeader.parse("<a>; title=\"x\"\u{0301}, <b>; rel=next")
        #expect(marked == [LinkHeader.Link(target: "b", relations: ["next"])])
    }

    @Test func outboxEntriesAndEventsPrintOneShortLine() {
        let entry = OutboxEntry(
            id: "0123456789abcdef", method: .post, url: URL(string: "https://api.example.com/notes")!, idempotencyKey: "k",
            createdAt: Date(), attempts: 2, nextAttemptAt: Date(), state: .pending, lastStatus: 503, lastError: String(repeating: "e", count: 400))
        #expect("\(entry)" == "01234567 POST https://api.example.com/notes pending, 2 attempts, last 503")
        let event = OutboxEvent.delivered(entry.with(state: .delivered), NetworkResponse(status: .created, url: entry.url))
        #expect("\(event)".count < 120)
        #expect("\(event)".contains("delivered, 2 attempts"))
    }

    @Test func cacheUpdatesThrowNetworkError() async {
        let engine = NetworkEngine.fake(FakeTransport { _ in throw NetworkError(.cannotConnect, "refused") }) {
            $0.cache = ResponseCache(directory: nil)
            $0.cachePolicy = .cachedThenFresh
        }
        do {
            for try await _ in engine.operation(path: "x").cacheUpdates() {}
            Issue.record("no error")
        } catch {
            #expect(error.code == .cannotConnect, "typed: no cast needed")
        }
    }
}
