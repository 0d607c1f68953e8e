import AsyncHTTPClient
import Courier
import Foundation

/// Per-request latency of small GETs at a fixed concurrency: p50 and p99 of the time from the call to
/// the whole body, raw async-http-client against Courier used like it (callers awaiting `send`).
enum Latency {
    static func scenario(server: ServerProcess, requests: Int, callers: Int) -> Scenario {
        let urls = (0..<requests).map { "\(server.baseURL)\(server.smallPath)?latency=\(callers)-\($0)" }
        return Scenario(
            name: "Latency, \(callers) caller\(callers == 1 ? "" : "s")",
            details: "\(requests) GETs of a 1 KiB body from \(server.name), \(callers) caller(s) each awaiting one request at a time; every URL distinct; each request timed from the call to its whole body",
            metrics: [
                Metric(name: "p50 us", unit: "median microseconds per request", higherIsBetter: false),
                Metric(name: "p99 us", unit: "99th percentile microseconds per request", higherIsBetter: false),
            ],
            baseline: "async-http-client (raw)",
            contenders: [
                Contender("async-http-client (raw)") {
                    try await run(urls, callers: callers) { url in
                        let response = try await BenchClients.ahc.execute(HTTPClientRequest(url: url), deadline: .distantFuture)
                        let body = try await response.body.collect(upTo: 1 << 20)
                        guard response.status == .ok, body.readableBytes == 1024 else { throw BenchError("bad answer \(response.status)") }
                    }
                },
                Contender("Courier (callers)") {
                    NetworkQueue.shared.maximumConcurrentOperations = max(callers, 6)
                    let engine = NetworkEngine(baseURL: "http://127.0.0.1")
                    return try await run(urls, callers: callers) { url in
                        let response = try await engine.send(engine.operation(url: url))
                        guard response.body.count == 1024 else { throw BenchError("bad answer \(response.statusCode)") }
                    }
                },
            ])
    }

    /// `callers` workers share the URLs; every request's latency is kept, then the percentiles taken.
    static func run(_ urls: [String], callers: Int, _ request: @escaping @Sendable (String) async throws -> Void) async throws -> Figures {
        let latencies = try await withThrowingTaskGroup(of: [Double].self) { group in
            for worker in 0..<callers {
                group.addTask {
                    var mine: [Double] = []
                    mine.reserveCapacity(urls.count / callers + 1)
                    for index in stride(from: worker, to: urls.count, by: callers) {
                        let started = Machine.now
                        try await request(urls[index])
                        mine.append((Machine.now - started) * 1e6)
                    }
                    return mine
                }
            }
            return try await group.reduce(into: [Double]()) { $0 += $1 }
        }.sorted()
        return ["p50 us": percentile(latencies, 0.50), "p99 us": percentile(latencies, 0.99)]
    }

    /// Nearest-rank percentile of sorted values.
    static func percentile(_ sorted: [Double], _ fraction: Double) -> Double {
        guard !sorted.isEmpty else { return 0 }
        let rank = Int((fraction * Double(sorted.count)).rounded(.up))
        return sorted[min(max(rank, 1), sorted.count) - 1]
    }
}
