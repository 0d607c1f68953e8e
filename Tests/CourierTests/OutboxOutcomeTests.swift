import Foundation
import HTTPTypes
import Testing
@testable import Courier

/// Issue 23 D2 and D3: a replay refused for want of credentials is kept for the app to retry after it
/// signs in again; what was delivered while nobody listened can be asked for.
extension FreezingTests {
    @Test func aReplayRefusedWith401IsKeptAsADeadLetterAndSentAgainWhenRetried() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let reachability = ManualReachability(.unreachable)
        let origin = Origin()
        let engine = engine(origin, directory, reachability: reachability)
        let events = engine.outboxEvents
        let op = engine.operation(path: "comments", method: .post, body: .text("offline comment"))
        op.isFreezable = true
        engine.enqueue(op)
        #expect(await eventually { op.state == .frozen })

        origin.statuses.withLockedValue { $0 = [401] }
        origin.isUp.withLockedValue { $0 = true }
        reachability.setStatus(.reachable(via: .wifi))
        await #expect { try await op.response() } throws: { ($0 as? NetworkError)?.code == .deadLettered }
        let outbox = try Outbox(directory: directory)
        let entry = try #require(outbox.deadLetters.first)
        #expect(entry.state == .deadLettered(.unauthorized))
        #expect(entry.lastStatus == 401)
        #expect(outbox.entries.count == 1, "kept, not dropped")
        var heard: [String] = []
        for await event in events {
            heard.append("\(event)")
            if case .deadLettered(let lettered) = event {
                #expect(lettered.state == .deadLettered(.unauthorized))
                break
            }
        }

        // The user signs in again; the app puts it back in line.
        #expect(outbox.retry(entry.id))
        #expect(!outbox.retry(entry.id), "no longer a dead letter")
        #expect(outbox.entries.first?.state == .pending)
        let flushed = await engine.flushOutbox()
        #expect(flushed.contains { if case .delivered = $0 { true } else { false } }, "\(flushed)")
        #expect(origin.received.all.count == 2)
        #expect(Set(origin.received.all.map(\.key)).count == 1, "the same Idempotency-Key both times")
        #expect(outbox.entries.isEmpty)
    }

    @Test func outcomesTellWhatWasDeliveredWhileNobodyListened() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let reachability = ManualReachability(.unreachable)
        let origin = Origin()
        let engine = engine(origin, directory, reachability: reachability)
        var ops: [NetworkOperation] = []
        for index in 1...3 {
            let op = engine.operation(path: "likes/\(index)", method: .post, body: .text("\(index)"))
            op.isFreezable = true
            engine.enqueue(op)
            ops.append(op)
        }
        #expect(await eventually { ops.allSatisfy { $0.state == .frozen } })
        origin.statuses.withLockedValue { $0 = [201, 404, 201] }
        origin.isUp.withLockedValue { $0 = true }
        reachability.setStatus(.reachable(via: .wifi))
        #expect(await eventually { (try? Outbox(directory: directory).outcomes.count) == 3 })

        // A listener that comes late, or an app launched after the replay, asks.
        let outcomes = try Outbox(directory: directory).outcomes
        #expect(outcomes.map(\.url.path) == ["/v1/likes/1", "/v1/likes/2", "/v1/likes/3"])
        #expect(outcomes.map(\.state) == [.delivered, .failedPermanently, .delivered])
        #expect(outcomes.map(\.lastStatus) == [201, 404, 201])
        #expect(outcomes.allSatisfy { $0.finishedAt != nil })
        #expect(try Outbox(directory: directory).entries.isEmpty, "entries are what is still to send")
    }
}

extension FreezingTests {
    /// Issue 23 D4: with a `RetryPolicy`, a freezable request whose host refuses connections goes to the
    /// outbox after its first attempt (the outbox's backoff takes over); a request that is not freezable
    /// is still retried by the policy.
    @Test func freezingWinsOverTheRetryPolicyWhenTheHostCannotBeReached() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = Origin()   // down: every attempt fails with cannotConnect
        let engine = engine(origin, directory, reachability: ManualReachability(.reachable(via: .wifi))) {
            $0.interceptors = [RetryPolicy(maximumAttempts: 3)]
            $0.replaysOutbox = false
        }
        let put = engine.operation(path: "profile", method: .put, body: .text("name=Ada"))
        put.isFreezable = true
        engine.enqueue(put)
        #expect(await eventually { put.state == .frozen })
        #expect(origin.transport.requestCount == 1, "frozen after one attempt, not after the policy's retries")

        let plain = engine.operation(path: "profile", method: .put, body: .text("name=Ada"))
        await #expect(throws: NetworkError.self) { try await engine.send(plain) }
        #expect(origin.transport.requestCount == 4, "the policy still retries what cannot freeze (three attempts)")
    }
}

extension FreezingTests {
    /// Issue 23 B13: a damaged row whose body offset plus length overflows is set aside like any other
    /// damage (it trapped in `FrozenBody(text:bytes:)` before).
    @Test func aRowWhoseBodyRangeOverflowsIsSetAsideNotATrap() async throws {
        let overflowing = FrozenBody(kind: .multipart, boundary: "b", parts: [FrozenBody.Part(name: "a", offset: Int.max, length: 1)])
        #expect(FrozenBody(text: overflowing.text, bytes: Data("abc".utf8)) == nil)
        let negative = FrozenBody(kind: .multipart, boundary: "b", parts: [FrozenBody.Part(name: "a", offset: 1, length: Int.max)])
        #expect(FrozenBody(text: negative.text, bytes: Data("abc".utf8)) == nil)

        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let reachability = ManualReachability(.unreachable)
        let origin = Origin()
        let engine = engine(origin, directory, reachability: reachability)
        let file = directory.appendingPathComponent("photo.jpg")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Data("jpeg bytes".utf8).write(to: file)
        var form = MultipartForm()
        form.addField("Ada", name: "name")
        form.addFile(file, name: "photo")
        let op = engine.operation(path: "profile", method: .post, body: .multipart(form))
        op.isFreezable = true
        engine.enqueue(op)
        #expect(await eventually { op.state == .frozen })
        let database = directory.appendingPathComponent("outbox.sqlite").path
        let layout = try sqlite(database, "SELECT bodyLayout FROM outbox")
        #expect(layout.contains("\"offset\":0"), "\(layout)")
        try sqlite(database, "UPDATE outbox SET bodyLayout = replace(bodyLayout, '\"offset\":0', '\"offset\":\(Int.max)')")
        origin.isUp.withLockedValue { $0 = true }
        reachability.setStatus(.reachable(via: .wifi))
        await #expect { try await op.response() } throws: { ($0 as? NetworkError)?.code == .outboxUnavailable }
        #expect(origin.received.all.isEmpty, "never sent with a body other than the one frozen")
        #expect(try sqlite(database, "SELECT deadReason FROM outbox") == "damaged", "set aside, kept")
    }
}
