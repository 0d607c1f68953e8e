import AsyncHTTPClient
import Courier
import Foundation
import NIOCore

/// Scenario 3: a very long queue. What does a waiting operation cost, and what does the queue add
/// to each request?
enum QueueScale {
    static func scenario(server: ServerProcess, count: Int) -> Scenario {
        let url = "\(server.baseURL)\(server.emptyPath)"
        return Scenario(
            name: "Queue scale",
            details: "\(count) operations enqueued on a suspended queue, then released (6 in flight) against \(url) on \(server.name)",
            metrics: [
                Metric(name: "create us/op", unit: "microseconds to build one operation", higherIsBetter: false),
                Metric(name: "enqueue us/op", unit: "microseconds to enqueue one operation on a suspended queue", higherIsBetter: false),
                Metric(name: "bytes/waiting op", unit: "malloc'd bytes held per waiting operation (operation included)", higherIsBetter: false),
                Metric(name: "dispatch us/op", unit: "microseconds of queue work per operation, with an instant transport (enqueue to outcome)", higherIsBetter: false),
                Metric(name: "wall us/request", unit: "microseconds per request, all of them, over the network", higherIsBetter: false),
            ],
            baseline: "async-http-client (raw)",
            contenders: [
                Contender("async-http-client (raw)") { try await raw(url: url, count: count) },
                Contender("Courier") { try await courier(url: url, count: count) },
            ],
            notes: ["targets: under 2 KiB per waiting operation; enqueue and dispatch each under 20 us per operation"])
    }

    static func raw(url: String, count: Int) async throws -> Figures {
        let started = Machine.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<6 {
                group.addTask {
                    for _ in stride(from: worker, to: count, by: 6) {
                        let response = try await BenchClients.ahc.execute(HTTPClientRequest(url: url), deadline: .distantFuture)
                        _ = try await response.body.collect(upTo: 1 << 20)
                    }
                }
            }
            try await group.waitForAll()
        }
        return ["wall us/request": (Machine.now - started) * 1e6 / Double(count)]
    }

    /// Profile mode: malloc'd bytes per operation built, then per operation enqueued on a suspended queue.
    static func waitingBytes(url: String, count: Int) -> Figures {
        let queue = NetworkQueue(maximumConcurrentOperations: 6, isSuspended: true)
        let engine = NetworkEngine(baseURL: "http://127.0.0.1", configuration: .init { $0.coalescesRequests = false }, queue: queue)
        var operations: [NetworkOperation] = []
        operations.reserveCapacity(count)
        let before = Machine.allocatedBytes
        for _ in 0..<count { operations.append(engine.operation(url: url)) }
        let built = Machine.allocatedBytes
        for operation in operations { engine.enqueue(operation) }
        let enqueued = Machine.allocatedBytes
        for operation in operations { operation.cancel() }
        return ["bytes/built op": Double(built - before) / Double(count), "bytes/enqueue": Double(enqueued - built) / Double(count)]
    }

    static func courier(url: String, count: Int) async throws -> Figures {
        var figures = Figures()
        // Over the network.
        do {
            let queue = NetworkQueue(maximumConcurrentOperations: 6, isSuspended: true)
            let engine = NetworkEngine(baseURL: "http://127.0.0.1", configuration: .init { $0.coalescesRequests = false }, queue: queue)
            let allocatedBefore = Machine.allocatedBytes
            var started = Machine.now
            let operations = (0..<count).map { _ in engine.operation(url: url) }
            figures["create us/op"] = (Machine.now - started) * 1e6 / Double(count)
            started = Machine.now
            for operation in operations { engine.enqueue(operation) }
            figures["enqueue us/op"] = (Machine.now - started) * 1e6 / Double(count)
            figures["bytes/waiting op"] = Double(Machine.allocatedBytes - allocatedBefore) / Double(count)
            started = Machine.now
            queue.go()
            for operation in operations { _ = try await operation.response() }
            figures["wall us/request"] = (Machine.now - started) * 1e6 / Double(count)
        }
        // The queue alone: a transport that answers at once.
        do {
            let queue = NetworkQueue(maximumConcurrentOperations: 6)
            let engine = NetworkEngine(
                baseURL: "http://127.0.0.1", configuration: .init { $0.coalescesRequests = false }, queue: queue,
                transport: InstantTransport())
            let operations = (0..<count).map { _ in engine.operation(url: url) }
            let started = Machine.now
            for operation in operations { engine.enqueue(operation) }
            for operation in operations { _ = try await operation.response() }
            figures["dispatch us/op"] = (Machine.now - started) * 1e6 / Double(count)
        }
        return figures
    }
}

/// A transport that answers 204 at once: what remains is Courier's own work.
struct InstantTransport: HTTPTransport {
    struct NoBody: AsyncSequence, Sendable {
        typealias Element = ByteBuffer
        struct AsyncIterator: AsyncIteratorProtocol {
            mutating func next() async throws -> ByteBuffer? { nil }
        }
        func makeAsyncIterator() -> AsyncIterator { AsyncIterator() }
    }

    func execute(_ request: TransportRequest) async throws -> TransportResponse {
        TransportResponse(status: .noContent, headers: [:], body: NoBody())
    }
}
