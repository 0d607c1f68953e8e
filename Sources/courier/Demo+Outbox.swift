import Courier
import CourierTestServer
import Foundation

extension Demo {
    /// Scene 7: the server goes away, freezable posts are frozen in a durable outbox, the server comes
    /// back, the outbox delivers them, and the server shows each Idempotency-Key exactly once. A second
    /// engine of the host, with another pipeline (no credentials), shares the outbox and sends none of them.
    nonisolated func offlineOutbox() async throws {
        say("7. Freezing: an outbox that survives the server going away")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-demo-outbox-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let port = try await TestServer.vacantPort()
        say("   the server on port \(port) went away")
        let engine = NetworkEngine(host: "127.0.0.1", port: port, isSecure: false, configuration: .init {
            $0.dataDirectory = directory
            $0.outboxRetry = OutboxRetry(initialDelay: .milliseconds(100), maximumDelay: .milliseconds(300))
            $0.credentialProvider = { _ in [.authorization: "Bearer demo-token"] }   // never written to the outbox
        }, queue: NetworkQueue())
        // The app's sign-in engine: same host, same outbox, another pipeline (no credentials).
        let auth = NetworkEngine(host: "127.0.0.1", port: port, isSecure: false, configuration: .init {
            $0.dataDirectory = directory
        }, queue: NetworkQueue())
        let events = engine.outboxEvents
        let posts = (1...3).map { n in
            let op = engine.operation(path: "/anything/notes", method: .post, body: .json(["note": "note \(n)"]))
            op.isFreezable = true
            return op
        }
        for op in posts.prefix(2) { engine.enqueue(op) }
        // The third is sent by a screen's task, as a SwiftUI `.task { try await engine.send(post) }` would.
        let screen = Task { () -> String in
            do throws(NetworkError) { return "\(try await engine.send(posts[2]).statusCode)" } catch { return "\(error.code)" }
        }
        var frozen = 0
        var delivered = 0
        var server: TestServer?
        for await event in events {
            switch event {
            case .frozen(let entry):
                frozen += 1
                say("   frozen \(entry.id.prefix(8)): committed to the outbox, Idempotency-Key \(entry.idempotencyKey.prefix(8))…")
                if frozen == posts.count {
                    screen.cancel()
                    say("   the screen awaiting note 3 went away (its task was cancelled): \(await screen.value); the note stays in the outbox")
                    server = try await TestServer.start(port: port)
                    say("   the server is back on port \(port); the outbox retries with backoff")
                    let sentByAuth = await auth.flushOutbox().count
                    say("   the sign-in engine (same host and outbox, no token) flushed too: \(sentByAuth) sent; only the pipeline that froze a note replays it")
                }
            case .delivered(let entry, let response):
                delivered += 1
                say("   delivered \(entry.id.prefix(8)) on replay attempt \(entry.attempts): \(response.statusCode)")
            case .retryScheduled, .failedPermanently, .deadLettered:
                break
            }
            if delivered == posts.count { break }
        }
        for op in posts { _ = try await op.response() }
        if let server {
            var counts: [String: Int] = [:]
            for request in server.recordedRequests { counts[request.header("idempotency-key") ?? "none", default: 0] += 1 }
            let summary = counts.values.allSatisfy { $0 == 1 } ? "each exactly once" : "duplicates: \(counts.filter { $0.value > 1 })"
            let signed = server.recordedRequests.allSatisfy { $0.header("authorization") == "Bearer demo-token" }
            say("   the server saw \(counts.count) Idempotency-Keys, \(summary), \(signed ? "every one with the token" : "SOME WITHOUT THE TOKEN")\n")
            try await server.shutdown()
        }
    }
}
