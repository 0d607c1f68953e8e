import Courier
import Foundation

/// Sustained small GETs in one process: does malloc'd memory stay flat once warmed up? The run is
/// cut into segments; the growth is what is allocated at the end minus what was allocated after the
/// warm-up segments. With `timeouts.total` set, each request's deadline timer must be freed when the
/// request ends, not when the deadline passes (30 s is longer than the run).
enum Soak {
    static func scenario(server: ServerProcess, segments: Int, perSegment: Int, warmup: Int, inFlight: Int) -> Scenario {
        let base = "\(server.baseURL)\(server.smallPath)"
        return Scenario(
            name: "Soak",
            details: "\(segments) segments of \(perSegment) GETs of a 1 KiB body (\(segments * perSegment) in all) from \(server.name), all of a segment enqueued at once, \(inFlight) in flight, every URL distinct; malloc'd bytes (mallinfo2) after \(warmup) warm-up segment(s) against the end",
            metrics: [
                Metric(name: "growth KiB", unit: "KiB of malloc'd memory gained after the warm-up", higherIsBetter: false),
                Metric(name: "growth B/request", unit: "bytes gained per request after the warm-up", higherIsBetter: false),
                Metric(name: "requests/s", unit: "requests per second after the warm-up", higherIsBetter: true),
            ],
            baseline: "no total timeout",
            contenders: [
                Contender("no total timeout") {
                    try await run(base: base, segments: segments, perSegment: perSegment, warmup: warmup, inFlight: inFlight, total: nil)
                },
                Contender("timeouts.total 30 s") {
                    try await run(base: base, segments: segments, perSegment: perSegment, warmup: warmup, inFlight: inFlight, total: .seconds(30))
                },
            ],
            notes: ["growth is an absolute figure: read it against 0 (flat), not as a ratio to the baseline"])
    }

    static func run(
        base: String, segments: Int, perSegment: Int, warmup: Int, inFlight: Int, total: Duration?
    ) async throws -> Figures {
        let token = UUID().uuidString.prefix(8)
        let engine = NetworkEngine(
            baseURL: "http://127.0.0.1", configuration: .init { $0.timeouts.total = total },
            queue: NetworkQueue(maximumConcurrentOperations: inFlight))
        var afterWarmup = 0
        var started = 0.0
        for segment in 0..<segments {
            if segment == warmup {
                afterWarmup = Machine.allocatedBytes
                started = Machine.now
            }
            let operations = (0..<perSegment).map {
                engine.operation(url: "\(base)?soak=\(token)-\(segment)-\($0)")
            }
            for operation in operations { engine.enqueue(operation) }
            for operation in operations {
                let response = try await operation.response()
                guard response.body.count == 1024 else { throw BenchError("bad answer \(response.statusCode)") }
            }
        }
        let seconds = Machine.now - started
        let growth = Double(Machine.allocatedBytes - afterWarmup)
        let measured = Double((segments - warmup) * perSegment)
        return ["growth KiB": growth / 1024, "growth B/request": growth / measured, "requests/s": measured / seconds]
    }
}
