import Courier
import CourierTestServer
import Foundation

/// Scenario 2: many identical GETs against a slow endpoint share one origin request.
enum Coalescing {
    static func scenario(server: TestServer, count: Int) -> Scenario {
        let base = server.baseURL
        return Scenario(
            name: "Coalescing",
            details: "\(count) concurrent GETs of a 50 ms endpoint through the shared queue (6 in flight), identical vs distinct URLs; in-process CourierTestServer counts origin requests",
            metrics: [
                Metric(name: "wall ms", unit: "milliseconds until every operation finished", higherIsBetter: false),
                Metric(name: "origin requests", unit: "requests the server received", higherIsBetter: false),
            ],
            baseline: "one request",
            contenders: [
                Contender("one request") { try await run(server, urls: ["\(base)/delay/50"]) },
                Contender("\(count) identical (coalesced)") {
                    try await run(server, urls: Array(repeating: "\(base)/delay/50", count: count))
                },
                Contender("\(count) distinct") {
                    try await run(server, urls: (0..<count).map { "\(base)/delay/50?n=\($0)" })
                },
            ],
            notes: ["targets: exactly 1 origin request for the identical GETs, and wall time within 2x of one request"])
    }

    static func run(_ server: TestServer, urls: [String]) async throws -> Figures {
        NetworkQueue.shared.maximumConcurrentOperations = 6
        server.resetStatistics()
        let engine = NetworkEngine(baseURL: server.baseURL)
        let started = Machine.now
        let operations = urls.map { engine.operation(url: $0) }
        for operation in operations { engine.enqueue(operation) }
        for operation in operations { _ = try await operation.response() }
        let wall = Machine.now - started
        return ["wall ms": wall * 1000, "origin requests": Double(server.requestCount)]
    }
}
