import Courier
import Foundation

/// Distinct cacheable GETs: every one a miss that the cache stores. What storing costs the requests,
/// next to the same engine setup without a cache, in the same round; and what the cache holds in
/// malloc'd memory against its memory limit once the run is over.
enum CacheStore {
    static let memoryLimit = 8 << 20

    /// The number of GETs per run: `COURIER_BENCH_STORE_REQUESTS` when set (enough to fill the memory
    /// tier, to read the malloc'd figure against the limit), else `fallback`.
    static func requestCount(default fallback: Int) -> Int {
        ProcessInfo.processInfo.environment["COURIER_BENCH_STORE_REQUESTS"].flatMap { Int($0) } ?? fallback
    }

    static func scenario(server: ServerProcess, requests: Int, callers: Int) -> Scenario {
        let base = "\(server.baseURL)/cache/3600"
        return Scenario(
            name: "Cache miss-and-store",
            details: "\(requests) distinct GETs of \(server.baseURL)/cache/3600?n=… (max-age=3600, a small JSON body) on \(server.name), \(callers) callers awaiting `send`: without a cache, and with a memory + disk cache of 8 MiB each (every request a miss the cache stores; the first URL is asked again afterwards and must be a hit). The cache's malloc'd memory is what freeing it gives back once its disk writes are done",
            metrics: [
                Metric(name: "requests/s", unit: "requests per second", higherIsBetter: true),
                Metric(name: "CPU us/request", unit: "client CPU microseconds (user+system) per request", higherIsBetter: false),
                Metric(name: "cache MiB malloc'd", unit: "MiB of malloc'd memory the cache held after the run", higherIsBetter: false),
                Metric(name: "malloc'd / counted", unit: "malloc'd bytes per byte the memory tier counts (statistics.memoryBytes)", higherIsBetter: false),
            ],
            baseline: "no cache",
            contenders: [
                Contender("no cache") { try await run(base: base, requests: requests, callers: callers, cache: nil) },
                Contender("memory+disk cache 8 MiB") {
                    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-bench-store-\(UUID().uuidString)")
                    defer { try? FileManager.default.removeItem(at: directory) }
                    var cache: ResponseCache? = ResponseCache(memoryCapacity: memoryLimit, diskCapacity: 8 << 20, directory: directory)
                    var figures = try await run(base: base, requests: requests, callers: callers, cache: cache)
                    await cache?.synchronize()
                    let counted = cache?.statistics.memoryBytes ?? 0
                    weak let released = cache
                    let held = Machine.allocatedBytes
                    cache = nil
                    // The engine is gone with `run`; if anything still holds the cache, there is no figure.
                    if released == nil {
                        let bytes = Double(held - Machine.allocatedBytes)
                        figures["cache MiB malloc'd"] = bytes / Double(1 << 20)
                        if counted > 0 { figures["malloc'd / counted"] = bytes / Double(counted) }
                    }
                    return figures
                },
            ],
            notes: ["the memory figures have no baseline: read `cache MiB malloc'd` against the 8 MiB memory limit (the disk tier's index and SQLite's caches included)"])
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
