import ArgumentParser
import Courier
import CourierTestServer
import Foundation
import NIOConcurrencyHelpers
import Synchronization

/// `courier demo`: the shared queue at work against an in-process server on 127.0.0.1.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Start a local server and show the shared queue at work: limits, priorities, coalescing, cancellation, progress, errors, freezing, a fleet on PostgreSQL, the cache, files, interceptors, images, trust.")

    func run() async throws {
        try await Demo().run()
    }
}

/// The scenes of the demo, each a few seconds at most.
struct Demo {
    nonisolated func run() async throws {
        let server = try await TestServer.start()
        say("Courier demo: a test server is listening on \(server.baseURL)\n")
        let queue = NetworkQueue.shared
        let engine = NetworkEngine(host: "127.0.0.1", port: server.port, isSecure: false, queue: queue)
        do {
            try await concurrencyLimit(engine, server)
            try await priorities(engine, server)
            try await coalescing(server)
            try await cancellation(engine, server)
            try await downloadProgress(engine, server)
            await typedErrors(engine, server)
            try await offlineOutbox()
            try await fleet()
            try await offlineCache()
            try await files(engine, server)
            try await pipeline(server)
            try await liveEvents(server)
            try await images(server)
            try await trust()
        } catch {
            try? await server.shutdown()
            throw error
        }
        try await server.shutdown()
        say("Done. Every scene ran against 127.0.0.1 only.")
    }

    func say(_ line: String) {
        StandardStream.standardOutput.line(line)
    }

    private func concurrencyLimit(_ engine: NetworkEngine, _ server: TestServer) async throws {
        say("1. One queue, one limit")
        engine.queue.maximumConcurrentOperations = 2
        server.resetStatistics()
        let ops = (1...12).map { engine.operation(path: "/delay/150", params: ["n": .int($0)]) }
        for op in ops { engine.enqueue(op) }
        for op in ops.prefix(4) { _ = try await op.response() }
        say("   12 slow requests with maximumConcurrentOperations = 2: the server saw at most \(server.maxInFlight) at once")
        engine.queue.maximumConcurrentOperations = 6
        for op in ops { _ = try await op.response() }
        say("   raised to 6 mid-way: the server then saw up to \(server.maxInFlight) at once\n")
    }

    private func priorities(_ engine: NetworkEngine, _ server: TestServer) async throws {
        say("2. Priorities")
        let queue = engine.queue
        queue.maximumConcurrentOperations = 1
        queue.suspend()
        let order = NIOLockedValueBox<[String]>([])
        var ops: [NetworkOperation] = []
        for (name, priority) in [("low-1", NetworkOperation.Priority.low), ("low-2", .low), ("high-1", .high), ("veryHigh-1", .veryHigh), ("high-2", .high)] {
            let op = engine.operation(path: "/get", params: ["name": .string(name)])
            op.priority = priority
            op.onStateChange { state in if state == .executing { order.withLockedValue { $0.append(name) } } }
            engine.enqueue(op)
            ops.append(op)
        }
        say("   queued on a suspended queue: low-1, low-2, high-1, veryHigh-1, high-2")
        queue.go()
        for op in ops { _ = try await op.response() }
        await drainCallbacks(engine)
        say("   after go(), they started in this order: \(order.withLockedValue { $0 }.joined(separator: ", "))\n")
        queue.maximumConcurrentOperations = 6
    }

    private func coalescing(_ server: TestServer) async throws {
        say("3. Coalescing identical GETs")
        server.resetStatistics()
        let engines = (0..<5).map { _ in NetworkEngine(host: "127.0.0.1", port: server.port, isSecure: false) }
        let calls = Atomic<Int>(0)
        let ops = (0..<200).map { i in
            engines[i % 5].operation(path: "/delay/200").onCompletion { _ in calls.add(1, ordering: .relaxed) }
        }
        for (i, op) in ops.enumerated() { engines[i % 5].enqueue(op) }
        for op in ops { _ = try await op.response() }
        for engine in engines { await drainCallbacks(engine) }
        say("   200 GETs of /delay/200 through 5 engines: the server answered \(server.requestCount(path: "/delay/200")) request; \(calls.load(ordering: .relaxed)) completion handlers ran, once each\n")
    }

    private func cancellation(_ engine: NetworkEngine, _ server: TestServer) async throws {
        say("4. Cancellation")
        server.resetStatistics()
        let waiting = engine.operation(path: "/get", params: ["never": "sent"])
        engine.queue.suspend()
        engine.enqueue(waiting)
        waiting.cancel()
        engine.queue.go()
        let running = engine.operation(path: "/stall")
        engine.enqueue(running)
        _ = await server.waitForRequests(count: 1, timeout: .seconds(5))
        running.cancel()
        let error = await errorOf(running)
        let closed = await server.waitForAbortedRequests(count: 1, timeout: .seconds(5))
        say("   cancelled while waiting: \(waiting.error?.code.description ?? "?"), and the server never saw it (\(server.requestCount(path: "/get")) requests for /get)")
        say("   cancelled while running: \(error?.code.description ?? "?"); the server saw the connection closed: \(closed ? "yes" : "no")\n")
    }

    private func downloadProgress(_ engine: NetworkEngine, _ server: TestServer) async throws {
        say("5. Download progress")
        let op = engine.operation(path: "/bytes/2097152", params: ["chunkSize": 131072, "delayMs": 15])
        let events = op.events
        engine.enqueue(op)
        var nextMark = 0.25
        for await event in events {
            switch event {
            case .downloadProgress(let progress):
                if let fraction = progress.fractionCompleted, fraction >= nextMark {
                    let bar = String(repeating: "#", count: Int(fraction * 20)).padding(toLength: 20, withPad: ".", startingAt: 0)
                    say("   [\(bar)] \(Int(fraction * 100))%  \(progress.completedBytes) of \(progress.totalBytes ?? 0) bytes")
                    nextMark += 0.25
                }
            case .response(let response):
                say("   finished: \(response.statusCode), \(response.body.count) bytes\n")
            case .failure(let error):
                say("   failed: \(error)\n")
            case .uploadProgress, .cached, .frozen:
                break
            }
        }
    }

    private func typedErrors(_ engine: NetworkEngine, _ server: TestServer) async {
        say("6. Typed errors, never a crash")
        let impatient = NetworkEngine(host: "127.0.0.1", port: server.port, isSecure: false, configuration: .init { $0.timeouts.read = .milliseconds(500) })
        let cases: [(String, NetworkOperation)] = [
            ("GET /status/404", engine.operation(path: "/status/404")),
            ("a header value with CR/LF", engine.operation(path: "/get").setHeader("x\r\nInjected: 1", forName: "X-Demo")),
            ("a malformed URL", engine.operation(url: "http://exa mple.com/")),
            ("a server that stalls past a 0.5 s read timeout", impatient.operation(path: "/stall")),
            ("a connection dropped mid-body", engine.operation(path: "/drop-mid-body")),
        ]
        for (label, op) in cases {
            let error = await errorOf(op)
            say("   \(label): \(error.map { "\($0.code): \($0.message)" } ?? "no error?")")
        }
        let json = engine.operation(path: "/invalid-json")
        _ = try? await json.response()
        struct Model: Decodable { var name: String }
        do {
            _ = try json.decode(Model.self)
            say("   invalid JSON decoded?")
        } catch {
            say("   decoding invalid JSON: \(error.code)")
        }
        say("")
    }

    private func errorOf(_ op: NetworkOperation) async -> NetworkError? {
        do {
            _ = try await op.response()
            return nil
        } catch {
            return error
        }
    }

    func drainCallbacks(_ engine: NetworkEngine) async {
        await withCheckedContinuation { continuation in
            engine.configuration.callbackQueue.async { continuation.resume() }
        }
    }
}
