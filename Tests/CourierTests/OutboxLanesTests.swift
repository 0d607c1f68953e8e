import Foundation
import NIOConcurrencyHelpers
import Testing
@testable import Courier

/// Issue 9 item 17: a frozen request that never gets through no longer blocks its host forever. Frozen
/// requests give up by default (10 attempts that reached the server, or 7 days), and requests with
/// different ordering keys are replayed independently.
@Suite("Outbox ordering keys and default limits")
struct OutboxLanesTests {
    /// A host that answers `/v1/stuck` with 500, anything else with 201, and records what it got.
    final class Host: Sendable {
        let received = Recorder<String>()
        let transport: FakeTransport

        init() {
            let received = received
            transport = FakeTransport { request in
                received.append(request.url.path)
                return FakeTransport.reply(status: request.url.path.hasSuffix("/stuck") ? 500 : 201, body: "{}")
            }
        }
    }

    static func directory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("courier-lanes-\(UUID().uuidString)")
    }

    static func engine(_ host: Host, _ directory: URL, _ reachability: ManualReachability) -> NetworkEngine {
        NetworkEngine.fake(host.transport) {
            $0.reachability = reachability
            $0.dataDirectory = directory
            $0.outboxRetry = OutboxRetry(initialDelay: .milliseconds(40), maximumDelay: .milliseconds(200))
        }
    }

    static func frozenPost(_ engine: NetworkEngine, _ path: String, key: String?, attempts: Int? = nil) -> NetworkOperation {
        let op = engine.operation(path: path, method: .post, body: .text(path))
        op.isFreezable = true
        op.orderingKey = key
        if let attempts { op.maximumAttempts = attempts }
        engine.enqueue(op)
        return op
    }

    @Test(.timeLimit(.minutes(1))) func aStuckRequestHoldsBackOnlyTheRequestsWithItsOrderingKey() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let reachability = ManualReachability(.unreachable)
        let host = Host()
        let engine = Self.engine(host, directory, reachability)
        let stuck = Self.frozenPost(engine, "stuck", key: "comments", attempts: 4)
        let independent = Self.frozenPost(engine, "like", key: "likes")
        let behind = Self.frozenPost(engine, "comment-2", key: "comments")
        #expect(await eventually { [stuck, independent, behind].allSatisfy { $0.state == .frozen } })
        let outbox = try #require(engine.outbox)
        #expect(outbox.entries.map(\.orderingKey) == ["comments", "likes", "comments"])

        reachability.setStatus(.reachable(via: .wifi))
        // A different key: delivered although the request frozen before it keeps getting 500.
        #expect(try await independent.response().statusCode == 201)
        #expect(stuck.state == .frozen, "still being retried")
        // The same key: waits for the stuck one, which is given up after its attempts, kept and visible.
        let error = await failure(of: stuck)
        #expect(error?.code == .deadLettered)
        #expect(try await behind.response().statusCode == 201)
        let paths = host.received.all
        #expect(paths.filter { $0 == "/v1/stuck" }.count == 4)
        #expect(paths.firstIndex(of: "/v1/like")! < paths.lastIndex(of: "/v1/stuck")!, "the other key did not wait")
        #expect(paths.last == "/v1/comment-2", "the same key waited")
        let dead = try #require(outbox.deadLetters.first)
        #expect(dead.state == .deadLettered(.tooManyAttempts))
        #expect(dead.lastStatus == 500 && dead.attempts == 4)
    }

    @Test(.timeLimit(.minutes(1))) func withoutAKeyRequestsKeepTheirHostsOrder() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let reachability = ManualReachability(.unreachable)
        let host = Host()
        let engine = Self.engine(host, directory, reachability)
        let stuck = Self.frozenPost(engine, "stuck", key: nil, attempts: 2)
        let behind = Self.frozenPost(engine, "after", key: nil)
        #expect(await eventually { [stuck, behind].allSatisfy { $0.state == .frozen } })
        reachability.setStatus(.reachable(via: .wifi))
        #expect(try await behind.response().statusCode == 201)
        #expect(host.received.all == ["/v1/stuck", "/v1/stuck", "/v1/after"])
    }

    @Test func frozenRequestsGiveUpByDefaultAndAnOperationMayChooseOtherwise() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let reachability = ManualReachability(.unreachable)
        let engine = Self.engine(Host(), directory, reachability)
        let defaults = engine.operation(path: "a", method: .post)
        #expect(defaults.maximumAttempts == 10)
        #expect(defaults.timeToLive == .seconds(7 * 86_400))
        #expect(defaults.orderingKey == nil)
        let patient = engine.operation(path: "b", method: .post)
        patient.maximumAttempts = Int.max
        patient.timeToLive = .seconds(3600)
        patient.orderingKey = ""
        #expect(patient.orderingKey == nil, "an empty key is the host's")
        for op in [defaults, patient] {
            op.isFreezable = true
            engine.enqueue(op)
        }
        #expect(await eventually { [defaults, patient].allSatisfy { $0.state == .frozen } })
        let rows = try #require(engine.outbox?.database).records()
        #expect(rows.map(\.maximumAttempts) == [10, Int.max])
        let lifetimes = rows.map { ($0.expiresAt ?? 0) - $0.createdAt }
        #expect(abs(lifetimes[0] - 7 * 86_400) < 1 && abs(lifetimes[1] - 3600) < 1)
        let unlimited = NetworkEngine.fake(Host().transport) {
            $0.outboxRetry.maximumAttempts = nil
            $0.outboxRetry.timeToLive = nil
        }.operation(path: "c", method: .post)
        #expect(unlimited.maximumAttempts == nil && unlimited.timeToLive == nil)
    }
}
