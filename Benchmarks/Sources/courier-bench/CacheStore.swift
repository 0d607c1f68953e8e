import Courier
import Foundation

/// Distinct cacheable GETs: every one a miss that the cache stores. What storing costs the requests,
/// next to the same engine setup without a cache, in the same round.
enum CacheStore {
    static func scenario(server: ServerProcess, requests: Int, callers: Int) -> Scenario {
        let base = "\(server.baseURL)/cache/3600"
        return Scenario(
            name: "Cache miss-and-store",
            details: "\(requests) distinct GETs of \(server.baseURL)/cache/3600?n=… (max-age=3600, a small JSON body) on \(server.name), \(callers) callers awaiting `send`: without a cache, and with a memory + disk cache of 8 MiB each (every request a miss the cache stores; the first URL is asked again afterwards and must be a hit)",
            metrics: [
                Metric(name: "requests/s", unit: "requests per second", higherIsBetter: true),
                Metric(name: "CPU us/request", unit: "client CPU microseconds (user+system) per request", higherIsBetter: false),
            ],
            baseline: "no cache",
            contenders: [
                Contender("no cache") { try await run(base: base, requests: requests, callers: callers, cache: nil) },
                Contender("memory+disk cache 8 MiB") {
                    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-bench-store-\(UUID().uuidString)")
                    defer { try? FileManager.default.removeItem(at: directory) }
                    let cache = ResponseCache(memoryCapacity: 8 << 20, diskCapacity: 8 << 20, directory: directory)
                    return try await run(base: base, requests: requests, callers: callers, cache: cache)
                },
            ])
    }

    static func run(base: String, requests: Int, callers: Int, cache: ResponseCache?) async throws -> Figures {
        // A fresh token per run, so no round finds what an earlier one stored.
        let token = UUID().uuidString.prefix(8)
        let urls = (0..<requests).map { "\(base)?run=\(token)&n=\($0)" }
        let engine = NetworkEngine(
            baseURL: "http://127.0.0.1", configuration: .init { $0.cache = cache },
            queue: NetworkQueue(maximumConcurrentOperations: callers))
        let figures = try await SmallGets.measure(requests) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for worker in 0..<callers {
                    group.addTask {
                        for index in stride(from: worker, to: urls.count, by: callers) {
                            let response = try await engine.send(engine.operation(url: urls[index]))
                            guard response.statusCode == 200 else { throw BenchError("bad answer \(response.statusCode)") }
                            if cache != nil, response.cacheOutcome != .miss {
                                throw BenchError("expected a miss, got \(String(describing: response.cacheOutcome))")
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        if cache != nil {
            let again = try await engine.send(engine.operation(url: urls[0]))
            guard again.cacheOutcome == .hit else { throw BenchError("the cache did not store: \(String(describing: again.cacheOutcome))") }
        }
        return figures.filter { $0.key != "mallocs/request" }
    }
}
