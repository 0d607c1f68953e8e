import AsyncHTTPClient
import Courier
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Scenario 1: many small GETs, a fixed number in flight.
enum SmallGets {
    static func scenario(server: ServerProcess, requests: Int, inFlight: Int) -> Scenario {
        let urls = (0..<requests).map { "\(server.baseURL)\(server.smallPath)?n=\($0)" }
        let curl = which("curl")
        return Scenario(
            name: "Small GETs",
            details: "\(requests) GETs of a 1 KiB body, \(inFlight) in flight, from \(server.name); every URL distinct (no coalescing)",
            metrics: [
                Metric(name: "requests/s", unit: "requests per second", higherIsBetter: true),
                Metric(name: "CPU us/request", unit: "client CPU microseconds (user+system) per request", higherIsBetter: false),
                Metric(name: "mallocs/request", unit: "malloc + calloc + realloc calls per request, every thread of the client", higherIsBetter: false),
            ],
            baseline: "async-http-client (raw)",
            contenders: [
                Contender("async-http-client (raw)") { try await rawAHC(urls, inFlight: inFlight) },
                Contender("Courier (6 callers)") { try await courierCallers(urls, inFlight: inFlight) },
                Contender("Courier (all enqueued)") { try await courier(urls, inFlight: inFlight) },
                Contender("Courier + interceptors") { try await courier(urls, inFlight: inFlight, withPipeline: true) },
                Contender("Courier + event monitor") { try await courier(urls, inFlight: inFlight, withMonitor: true) },
                Contender("URLSession (Foundation)") { try await urlSession(urls, inFlight: inFlight) },
                Contender("curl --parallel", unavailable: curl == nil ? "curl is not installed" : nil) {
                    try curlParallel(curl ?? "curl", urls, inFlight: inFlight)
                },
            ])
    }

    /// Measures a run of the in-process work: wall time, this process's CPU time and its malloc calls
    /// (counting costs one relaxed atomic add per call, paid alike by every in-process contender).
    static func measure(_ count: Int, _ work: () async throws -> Void) async rethrows -> Figures {
        let cpu = Machine.cpuMicroseconds
        let started = Machine.now
        let (_, mallocs) = try await Machine.mallocCalls(work)
        let seconds = Machine.now - started
        var figures = ["requests/s": Double(count) / seconds, "CPU us/request": (Machine.cpuMicroseconds - cpu) / Double(count)]
        if let mallocs { figures["mallocs/request"] = Double(mallocs) / Double(count) }
        return figures
    }

    /// The baseline: async-http-client configured as Courier configures it, `inFlight` workers, through its
    /// async API; with `futureBased`, through `execute(request:delegate:)` and its accumulator instead (the
    /// profile mode `ahcdelegate`: on this version both cost the same per request).
    ///
    /// With `inATask` (the profile mode `ahctask`, a diagnosis), each request runs in a task of its own that
    /// the worker awaits, as Courier runs each flight: what that hop alone costs.
    static func rawAHC(_ urls: [String], inFlight: Int, futureBased: Bool = false, inATask: Bool = false) async throws -> Figures {
        try await measure(urls.count) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for worker in 0..<inFlight {
                    group.addTask {
                        for index in stride(from: worker, to: urls.count, by: inFlight) {
                            let url = urls[index]
                            let (status, bytes) = inATask ? try await Task { try await asyncGet(url) }.value
                                : futureBased ? try await futureGet(url) : try await asyncGet(url)
                            guard status == .ok, bytes == 1024 else { throw BenchError("bad answer \(status)") }
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
    }

    private static func asyncGet(_ url: String) async throws -> (HTTPResponseStatus, Int) {
        let response = try await BenchClients.ahc.execute(HTTPClientRequest(url: url), deadline: .distantFuture)
        return (response.status, try await response.body.collect(upTo: 1 << 20).readableBytes)
    }

    private static func futureGet(_ url: String) async throws -> (HTTPResponseStatus, Int) {
        let request = try HTTPClient.Request(url: url)
        let response = try await BenchClients.ahc.execute(request: request, delegate: ResponseAccumulator(request: request)).futureResult.get()
        return (response.status, response.body?.readableBytes ?? 0)
    }

    /// Courier as an app uses it: every operation enqueued on the shared queue, which keeps `inFlight` running.
    /// With `withPipeline`, through a typical pipeline: an in-memory cookie jar, a retry policy and a bearer
    /// token (what each request pays for the interceptors; nothing is retried or refreshed). With
    /// `withMonitor`, one event monitor that counts every event (what a metrics monitor pays).
    static func courier(_ urls: [String], inFlight: Int, withPipeline: Bool = false, withMonitor: Bool = false) async throws -> Figures {
        let monitor = CountingMonitor()
        NetworkQueue.shared.maximumConcurrentOperations = inFlight
        let engine = NetworkEngine(baseURL: "http://127.0.0.1", configuration: .init {
            if withPipeline {
                $0.cookieJar = CookieJar()
                $0.interceptors = [RetryPolicy(), BearerTokenAuthenticator(token: "bench-token") { _ in "bench-token" }]
            }
            if withMonitor { $0.eventMonitors = [monitor] }
        })
        return try await measure(urls.count) {
            let operations = urls.map { engine.operation(url: $0) }
            for operation in operations { engine.enqueue(operation) }
            for operation in operations {
                let response = try await operation.response()
                guard response.body.count == 1024 else { throw BenchError("bad answer \(response.statusCode)") }
            }
        }
    }

    /// Counts every event it hears, as a metrics monitor would (a few atomic adds per request).
    final class CountingMonitor: EventMonitor {
        let events = Atomic<Int>(0)
        func operationDidEnqueue(_ operation: NetworkOperation) { events.add(1, ordering: .relaxed) }
        func operation(_ operation: NetworkOperation, didStartRequest request: HTTPRequest) { events.add(1, ordering: .relaxed) }
        func operation(_ operation: NetworkOperation, didReceiveResponseHead response: HTTPResponse) { events.add(1, ordering: .relaxed) }
        func operation(_ operation: NetworkOperation, didReceiveBody progress: TransferProgress) { events.add(1, ordering: .relaxed) }
        func operation(
            _ operation: NetworkOperation, didFinish result: Result<NetworkResponse, NetworkError>, metrics: OperationMetrics
        ) {
            events.add(1, ordering: .relaxed)
        }
    }

    /// Courier used like the baseline: `inFlight` callers, each awaiting `send` in turn, through the shared queue.
    static func courierCallers(_ urls: [String], inFlight: Int, transport: (any HTTPTransport)? = nil) async throws -> Figures {
        NetworkQueue.shared.maximumConcurrentOperations = inFlight
        let engine = transport.map { NetworkEngine(baseURL: "http://127.0.0.1", transport: $0) } ?? NetworkEngine(baseURL: "http://127.0.0.1")
        return try await measure(urls.count) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for worker in 0..<inFlight {
                    group.addTask {
                        for index in stride(from: worker, to: urls.count, by: inFlight) {
                            let response = try await engine.send(engine.operation(url: urls[index]))
                            guard response.body.count == 1024 else { throw BenchError("bad answer \(response.statusCode)") }
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
    }

    static func urlSession(_ urls: [String], inFlight: Int) async throws -> Figures {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = inFlight
        let session = URLSession(configuration: configuration)
        defer { session.finishTasksAndInvalidate() }
        return try await measure(urls.count) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for worker in 0..<inFlight {
                    group.addTask {
                        for index in stride(from: worker, to: urls.count, by: inFlight) {
                            let data: Data = try await withCheckedThrowingContinuation { continuation in
                                session.dataTask(with: URL(string: urls[index])!) { data, _, error in
                                    if let error { continuation.resume(throwing: error) } else { continuation.resume(returning: data ?? Data()) }
                                }.resume()
                            }
                            guard data.count == 1024 else { throw BenchError("bad URLSession answer") }
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
    }

    static func curlParallel(_ curl: String, _ urls: [String], inFlight: Int) throws -> Figures {
        let config = FileManager.default.temporaryDirectory.appendingPathComponent("courier-bench-curl-\(getpid()).txt")
        try urls.map { "url = \"\($0)\"\noutput = \"/dev/null\"\n" }.joined().write(to: config, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: config) }
        let run = try ChildRun.run(curl, ["--silent", "--fail", "--parallel", "--parallel-max", "\(inFlight)", "--config", config.path])
        guard run.status == 0 else { throw BenchError("curl exited with \(run.status)") }
        return ["requests/s": Double(urls.count) / run.wallSeconds, "CPU us/request": run.cpuMicroseconds / Double(urls.count)]
    }
}

/// Clients shared by the scenarios, configured as Courier configures its own.
/// A transport that answers every request at once with nginx's head and 1 KiB, without a network: under
/// the profile mode `fake`, what Courier's own path costs per request, with no socket and no event loop.
struct NginxLikeTransport: HTTPTransport {
    static let body = ByteBuffer(repeating: UInt8(ascii: "x"), count: 1024)
    static let headers: HTTPFields = [
        .server: "nginx/1.22.1", .date: "Sun, 29 Nov 2026 09:00:00 GMT", .contentType: "application/octet-stream",
        .contentLength: "1024", .lastModified: "Sun, 29 Nov 2026 08:00:00 GMT", .connection: "keep-alive",
        HTTPField.Name("ETag")!: "\"6929b5c0-400\"", .acceptRanges: "bytes",
    ]

    func execute(_ request: TransportRequest) async throws -> TransportResponse {
        TransportResponse(status: .ok, headers: Self.headers, body: OnePart(part: Self.body), version: .init(major: 1, minor: 1))
    }
}

/// A body of one part.
struct OnePart: AsyncSequence, Sendable {
    let part: ByteBuffer
    struct AsyncIterator: AsyncIteratorProtocol {
        var part: ByteBuffer?
        mutating func next() async throws -> ByteBuffer? {
            defer { part = nil }
            return part
        }
    }
    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(part: part) }
}

enum BenchClients {
    static let ahc: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow
        configuration.timeout = .init(connect: .seconds(10), read: .seconds(60))
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 64
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.decompression = .enabled(limit: .ratio(100))
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }()
}
