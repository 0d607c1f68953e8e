import Courier
import Foundation

/// Scenario 5: what a cache hit costs next to a network round trip. One caller, one request at a time,
/// so wall time per request is latency.
enum CacheHits {
    static func scenario(server: ServerProcess, count: Int) -> Scenario {
        let url = "\(server.baseURL)/cache/3600"
        return Scenario(
            name: "Cache hits",
            details: "\(count) sequential GETs of \(url) (max-age=3600) on \(server.name): no cache, memory hits, disk hits (memory tier of 0 bytes, so every hit reads SQLite and the body file and checks its SHA-256)",
            metrics: [
                Metric(name: "requests/s", unit: "answers per second, one caller", higherIsBetter: true),
                Metric(name: "latency us", unit: "microseconds per answer", higherIsBetter: false),
            ],
            baseline: "network round trip (no cache)",
            contenders: [
                Contender("network round trip (no cache)") { try await run(url: url, count: count, cache: nil) },
                Contender("memory hit") { try await run(url: url, count: count, cache: ResponseCache(directory: nil)) },
                Contender("disk hit") {
                    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-bench-cache-\(UUID().uuidString)")
                    defer { try? FileManager.default.removeItem(at: directory) }
                    return try await run(url: url, count: count, cache: ResponseCache(memoryCapacity: 0, directory: directory))
                },
            ])
    }

    static func run(url: String, count: Int, cache: ResponseCache?) async throws -> Figures {
        let engine = NetworkEngine(baseURL: "http://127.0.0.1", configuration: .init { $0.cache = cache }, queue: NetworkQueue())
        _ = try await engine.send(engine.operation(url: url))
        let started = Machine.now
        for _ in 0..<count {
            let response = try await engine.send(engine.operation(url: url))
            if cache != nil, response.cacheOutcome != .hit { throw BenchError("expected a cache hit, got \(String(describing: response.cacheOutcome))") }
        }
        let seconds = Machine.now - started
        return ["requests/s": Double(count) / seconds, "latency us": seconds * 1e6 / Double(count)]
    }
}
