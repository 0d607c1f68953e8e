import Foundation
import NIOConcurrencyHelpers
import Testing
@testable import Courier

/// Tier 2 (issue 18 A, B, 5, 6b, 6d): what the user asked to keep in the outbox is removed only by an
/// explicit cancel or drop: not by a cancelled task, not by the engine going away, and nothing the
/// server answered is reported as cancelled.
@Suite("Outbox: kept until an explicit cancel")
struct OutboxKeepingTests {
    /// An origin that can be down (refusing), and answers after a delay it is told.
    final class Origin: Sendable {
        let isUp = NIOLockedValueBox(false)
        let delay = NIOLockedValueBox<Duration>(.zero)
        let received = Recorder<String>()   // Idempotency-Keys, in arrival order
        let answered = Recorder<String>()
        let transport: FakeTransport

        init() {
            let (isUp, delay, received, answered) = (isUp, delay, received, answered)
            transport = FakeTransport { request in
                guard isUp.withLockedValue({ $0 }) else { throw NetworkError(.cannotConnect, "refused") }
                let key = request.headers[.idempotencyKey] ?? ""
                received.append(key)
                let wait = delay.withLockedValue { $0 }
                // The server takes its time; the answer comes whether or not the client still listens.
                if wait > .zero { try? await Task.sleep(for: wait) }
                answered.append(key)
                return FakeTransport.reply(status: 201, body: "{\"saved\":true}")
            }
        }

        func up(after delay: Duration = .zero) {
            self.delay.withLockedValue { $0 = delay }
            isUp.withLockedValue { $0 = true }
        }
    }

    static func directory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("courier-keep-\(UUID().uuidString)")
    }

    static func engine(
        _ origin: Origin, _ directory: URL, _ reachability: ManualReachability, queue: NetworkQueue = NetworkQueue(),
        lease: Duration = .seconds(120), _ configure: (inout NetworkEngine.Configuration) -> Void = { _ in }
    ) -> NetworkEngine {
        NetworkEngine.fake(origin.transport, queue: queue) {
            $0.reachability = reachability
            $0.dataDirectory = directory
            $0.outboxRetry = OutboxRetry(initialDelay: .milliseconds(20), maximumDelay: .milliseconds(200), lease: lease)
            configure(&$0)
        }
    }

    /// A freezable POST, enqueued; returns once its row is committed.
    static func frozenPost(_ engine: NetworkEngine, _ text: String = "a comment") async throws -> NetworkOperation {
        let post = engine.operation(path: "comments", method: .post, body: .text(text))
        post.isFreezable = true
        let events = post.events
        engine.enqueue(post)
        for await event in events {
            if case .frozen = event { return post }
            if case .failure(let error) = event { throw error }
        }
        throw NetworkError(.transport, "no outcome")
    }

    // MARK: A

    @Test func cancellingTheTaskThatAwaitsAFrozenSendKeepsTheRowAndTheRequestIsDelivered() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let reachability = ManualReachability(.reachable(via: .wifi))
        let origin = Origin()   // the API is down: connections refused
        let engine = Self.engine(origin, directory, reachability)
        let post = engine.operation(path: "comments", method: .post, body: .text("offline comment"))
        post.isFreezable = true
        let completions = Recorder<Int>()
        post.onCompletion { completions.append($0.statusCode) }
        // The screen's task: `try await engine.send(post)`, cancelled when the screen goes away.
        let screen = Task { () -> NetworkError.Code? in
            do throws(NetworkError) {
                _ = try await engine.send(post)
                return nil
            } catch {
                return error.code
            }
        }
        #expect(await eventually { post.state == .frozen })
        #expect(try #require(engine.outbox).entries.count == 1)
        screen.cancel()
        #expect(await screen.value == .stillFrozen, "the waiting stopped, and says why")
        #expect(post.state == .frozen, "the request is kept")
        #expect(try #require(engine.outbox).entries.count == 1, "its row is kept")

        origin.up()
        await engine.flushOutbox()
        #expect(await eventually { post.isFinished })
        #expect(post.response?.statusCode == 201)
        await drain(engine.configuration.callbackQueue)
        #expect(completions.all == [201], "the handlers still hear the outcome")
        #expect(origin.received.all.count == 1, "the server got the comment once")
        #expect(try #require(engine.outbox).entries.isEmpty)
    }

    @Test func aTaskCancelledBeforeTheRequestFrozeCancelsItAsBefore() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = Origin()
        origin.up(after: .seconds(30))   // a slow answer: the request is on the wire, not frozen
        let engine = Self.engine(origin, directory, ManualReachability(.reachable(via: .wifi)))
        let post = engine.operation(path: "comments", method: .post, body: .text("x"))
        post.isFreezable = true
        let task = Task { await failure(of: post) }
        #expect(await eventually { origin.received.all.count == 1 })
        task.cancel()
        #expect(await task.value?.code == .cancelled)
        #expect(post.state == .finished)
        #expect(try #require(engine.outbox).entries.isEmpty)
    }

    @Test func aTaskCancelledWhileItsRequestIsBeingWrittenToTheOutboxKeepsIt() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let reachability = ManualReachability(.unreachable)
        let origin = Origin()
        let engine = Self.engine(origin, directory, reachability)
        OutboxLocation.sqlite(directory: directory).io.suspend()   // a slow disk: the row is not written yet
        let post = engine.operation(path: "comments", method: .post, body: .text("being frozen"))
        post.isFreezable = true
        let screen = Task { await failure(of: post)?.code }
        #expect(await eventually { post.isKept }, "decided to go to the outbox")
        screen.cancel()
        let code = await screen.value
        OutboxLocation.sqlite(directory: directory).io.resume()
        #expect(code == .stillFrozen)
        #expect(await eventually { post.state == .frozen }, "written, not dropped")
        origin.up()
        reachability.setStatus(.reachable(via: .wifi))
        #expect(try await post.response().statusCode == 201)
    }

    // MARK: B

    @Test func aFrozenOperationIsDeliveredAfterItsEngineIsReleased() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let reachability = ManualReachability(.unreachable)
        let origin = Origin()
        let queue = NetworkQueue()
        var engine: NetworkEngine? = Self.engine(origin, directory, reachability, queue: queue)
        var post: NetworkOperation? = try await Self.frozenPost(try #require(engine))
        weak let released = engine
        engine = nil
        #expect(released == nil, "nothing else keeps the engine")
        origin.up()
        reachability.setStatus(.reachable(via: .wired))
        let response = try await #require(post).response()
        #expect(response.statusCode == 201)
        #expect(origin.received.all.count == 1)
        #expect(try Outbox(directory: directory).entries.isEmpty)
        // Once nothing needs it (no engine, no operation), the engine's width leaves the queue.
        post = nil
        #expect(await eventually { queue.state.withLockedValue { $0.machine.groupLimits.isEmpty } })
    }

    // MARK: 5

    @Test func cancellingAFrozenOperationWhoseReplayIsOnTheWireReportsWhatTheServerDid() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let reachability = ManualReachability(.unreachable)
        let origin = Origin()
        let engine = Self.engine(origin, directory, reachability)
        let events = engine.outboxEvents
        let post = try await Self.frozenPost(engine)
        origin.up(after: .milliseconds(600))   // answers 200-ish after a while
        reachability.setStatus(.reachable(via: .wifi))
        #expect(await eventually { origin.received.all.count == 1 }, "the replay reached the origin")
        post.cancel()
        let outcome = await failure(of: post)
        #expect(outcome == nil, "not cancelled: the server answered \(String(describing: outcome))")
        #expect(post.response?.statusCode == 201)
        #expect(origin.answered.all.count == 1)
        var iterator = events.makeAsyncIterator()
        var delivered = false
        while let event = await iterator.next() {
            if case .delivered = event { delivered = true; break }
        }
        #expect(delivered, "outboxEvents and the operation tell the same story")
        #expect(try #require(engine.outbox).entries.isEmpty)
    }

    @Test func cancellingAFrozenOperationWhoseReplayHasNotGoneOutDropsIt() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let reachability = ManualReachability(.unreachable)
        let origin = Origin()
        let queue = NetworkQueue(isSuspended: true)   // the replay waits in the queue
        let engine = Self.engine(origin, directory, reachability, queue: queue)
        let post = try await Self.frozenPost(engine)
        origin.up()
        reachability.setStatus(.reachable(via: .wifi))
        #expect(await eventually { queue.operationCount == 1 }, "the replay is queued")
        post.cancel()
        #expect(await failure(of: post)?.code == .cancelled)
        queue.go()
        try await Task.sleep(for: .milliseconds(100))
        #expect(origin.received.all.isEmpty, "nothing was sent")
        #expect(try #require(engine.outbox).entries.isEmpty)
    }

    @Test func droppingARowWhoseReplayIsOnTheWireWaitsForItsAnswer() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let reachability = ManualReachability(.unreachable)
        let origin = Origin()
        let engine = Self.engine(origin, directory, reachability)
        let post = try await Self.frozenPost(engine)
        let outbox = try #require(engine.outbox)
        let id = try #require(post.outboxID)
        origin.up(after: .milliseconds(400))
        reachability.setStatus(.reachable(via: .wifi))
        #expect(await eventually { origin.received.all.count == 1 })
        #expect(outbox.drop(id))
        #expect(try await post.response().statusCode == 201, "delivered: the drop came too late, and that is what is reported")
    }

    // MARK: 6b

    @Test func aSlowReplayKeepsItsLeaseSoASecondEngineNeverSendsItAgain() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let reachability = ManualReachability(.unreachable)
        let origin = Origin()
        let first = Self.engine(origin, directory, reachability, lease: .seconds(1))
        let post = try await Self.frozenPost(first)
        origin.up(after: .milliseconds(3000))   // answers after three times the lease
        reachability.setStatus(.reachable(via: .wifi))
        #expect(await eventually { origin.received.all.count == 1 })
        // A second engine on the same outbox and host comes while the first replay waits for its answer.
        let secondReachability = ManualReachability(.reachable(via: .wifi))
        let second = Self.engine(origin, directory, secondReachability, lease: .seconds(1))
        #expect(try await post.response().statusCode == 201)
        try await Task.sleep(for: .milliseconds(300))
        #expect(origin.received.all.count == 1, "sent once: \(origin.received.all)")
        withExtendedLifetime(second) {}
    }

    // MARK: 13

    @Test func enqueueNeverWaitsForTheOutboxDisk() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let engine = Self.engine(Origin(), directory, ManualReachability(.unreachable))
        OutboxLocation.sqlite(directory: directory).io.suspend()   // the disk is "slow": nothing is written until resumed
        let post = engine.operation(path: "comments", method: .post, body: .text("x"))
        post.isFreezable = true
        engine.enqueue(post)
        #expect(post.state == .waiting, "enqueue returned before the row was written")
        OutboxLocation.sqlite(directory: directory).io.resume()
        #expect(await eventually { post.state == .frozen })
        post.cancel()
    }

    // MARK: 6d

    @Test func anAttemptThatNeverWentOutIsNotCountedAgainstMaximumAttempts() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let reachability = ManualReachability(.unreachable)
        let origin = Origin()
        let queue = NetworkQueue(isSuspended: true)
        let engine = Self.engine(origin, directory, reachability, queue: queue)
        let post = engine.operation(path: "comments", method: .post, body: .text("once"))
        post.isFreezable = true
        post.maximumAttempts = 1
        let events = post.events
        engine.enqueue(post)
        for await event in events { if case .frozen = event { break } }
        // The link flaps: each time the replay is claimed, waits in the (suspended) queue, and the host goes.
        for _ in 0..<3 {
            reachability.setStatus(.reachable(via: .cellular))
            #expect(await eventually { queue.operationCount == 1 })
            reachability.setStatus(.unreachable)
            #expect(await eventually { queue.operationCount == 0 })
        }
        #expect(try #require(engine.outbox).entries.first?.attempts == 0)
        #expect(try #require(engine.outbox).entries.first?.state == .pending, "not dead-lettered")
        origin.up()
        queue.go()
        reachability.setStatus(.reachable(via: .wifi))
        #expect(try await post.response().statusCode == 201)
        #expect(origin.received.all.count == 1)
    }
}
