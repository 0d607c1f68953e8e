import Courier
import CourierTestServer
import Foundation

extension Demo {
    /// Scene 9: the cache answers for a server that went away (a stale response, marked as such), and
    /// answers an app's own conditional request with a 304 without asking anyone.
    nonisolated func offlineCache() async throws {
        say("9. The cache when the server is gone")
        let server = try await TestServer.start()
        let engine = NetworkEngine(host: "127.0.0.1", port: server.port, isSecure: false, configuration: .init {
            $0.cache = ResponseCache(directory: nil)
            $0.dataDirectory = nil
        }, queue: NetworkQueue())
        let fresh = try await engine.send(engine.operation(path: "/cache/60"))
        let stale = try await engine.send(engine.operation(path: "/cache/0"))
        say("   stored /cache/60 (fresh for a minute) and /cache/0 (stale at once), \(fresh.body.count + stale.body.count) bytes")
        try await server.shutdown()
        say("   the server went away")
        let offline = try await engine.send(engine.operation(path: "/cache/0"))
        say("   GET /cache/0 → \(offline.statusCode), cacheOutcome \(offline.cacheOutcome.map { "\($0)" } ?? "-"), isCachedResponse \(offline.isCachedResponse): served stale while disconnected")
        let strict = engine.operation(path: "/cache/0")
        strict.servesStaleWhenDisconnected = false
        do throws(NetworkError) {
            _ = try await engine.send(strict)
        } catch {
            say("   the same with servesStaleWhenDisconnected = false → \(error.code)")
        }
        let conditional = try await engine.send(engine.operation(path: "/cache/60").setHeader(#""v1""#, forName: "If-None-Match"))
        say("   GET /cache/60 with the app's own If-None-Match: \"v1\" → \(conditional.statusCode) from the cache, no server needed\n")
    }
}
