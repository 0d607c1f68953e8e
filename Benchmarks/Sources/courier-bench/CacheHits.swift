import Courier
import Foundation

/// Scenario 5: what a cache hit costs next to a network round trip. One caller, one request at a time,
/// so wall time per request is latency.
enum CacheHits {
    static func scenario(server: ServerProcess, count: Int) -> Scenario {
        let url = "\(server.baseURL)/cache/3600"
        return Scenario(
            name: "Cache hits",
            details: "\(count) sequential GETs of \(url) (max-age=3600) on \(server.name): no cache, memory hits (plain, a Range request answered with a 206 slice, the app's own If-None-Match answered with a 304 by the cache), disk hits (memory tier of 0 bytes, so every hit reads SQLite and the body file and checks its SHA-256)",
            metrics: [
                Metric(name: "requests/s", unit: "answers per second, one caller", higherIsBetter: true),
                Metric(name: "latency us", unit: "microseconds per answer", higherIsBetter: false),
            ],
            baseline: "network round trip (no cache)",
            contenders: [
                Contender("network round trip (no cache)") { try await run(url: url, count: count, cache: nil) },
                Contender("memory hit") { try await run(url: url, count: count, cache: ResponseCache(directory: nil)) },
                Contender("memory hit, Range request (206 slice)") {
                    try await run(url: url, count: count, cache: ResponseCache(directory: nil), header: ("Range", "bytes=2-9"), expectedStatus: 206)
                },
                Contender("memory hit, app's If-None-Match (304 by the cache)") {
                    try await run(url: url, count: count, cache: ResponseCache(directory: nil), header: ("If-None-Match", #""v1""#), expectedStatus: 304)
                },
                Contender("disk hit") {
                    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-bench-cache-\(UUID().uuidString)")
                    defer { try? FileManager.default.removeItem(at: directory) }
                    return try await run(url: url, count: count, cache: ResponseCache(memoryCapacity: 0, directory: directory))
                },
            ])
    }

    /// `header` is added to every timed request (not to the one that fills the cache).
    static func run(
        url: String, count: Int, cache: ResponseCache?, header: (String, String)? = nil, expectedStatus: Int = 200
    ) async throws -> Figures {
        let engine = NetworkEngine(baseURL: "http://127.0.0.1", configuration: .init { $0.cache = cache }, queue: NetworkQueue())
        _ = try await engine.send(engine.operation(url: url))
        let started = Machine.now
        for _ in 0..<count {
            let operation = engine.operation(url: url)
            if let (name, value) = header { operation.setHeader(value, forName: name) }
            let response = try await engine.send(operation)
            if cache != nil, response.cacheOutcome != .hit || response.statusCode != expectedStatus {
                throw BenchError("expected a cache hit with \(expectedStatus), got \(response.statusCode) \(String(describing: response.cacheOutcome))")
            }
        }
        let seconds = Machine.now - started
        return ["requests/s": Double(count) / seconds, "latency us": seconds * 1e6 / Double(count)]
    }
}
