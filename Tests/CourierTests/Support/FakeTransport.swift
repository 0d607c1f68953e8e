import Foundation
import NIOCore
import NIOConcurrencyHelpers
@testable import Courier

/// Tier 2's transport: answers with a closure, records every request, counts concurrency.
final class FakeTransport: HTTPTransport {
    typealias Handler = @Sendable (TransportRequest) async throws -> TransportResponse

    private let handler: Handler
    private let log = NIOLockedValueBox<[TransportRequest]>([])
    private let concurrency = NIOLockedValueBox<(now: Int, max: Int)>((0, 0))

    init(_ handler: @escaping Handler = { _ in FakeTransport.reply() }) {
        self.handler = handler
    }

    var requests: [TransportRequest] { log.withLockedValue { $0 } }
    var requestCount: Int { log.withLockedValue { $0.count } }
    var maxConcurrent: Int { concurrency.withLockedValue { $0.max } }

    func execute(_ request: TransportRequest) async throws -> TransportResponse {
        log.withLockedValue { $0.append(request) }
        concurrency.withLockedValue { $0.now += 1; $0.max = max($0.max, $0.now) }
        defer { concurrency.withLockedValue { $0.now -= 1 } }
        return try await handler(request)
    }

    /// A response with the body in `parts` pieces.
    static func reply(
        status: Int = 200, headers: HTTPFields = [.contentType: "application/json"], body: String = "{}",
        parts: Int = 1, failure: (any Error)? = nil
    ) -> TransportResponse {
        reply(status: status, headers: headers, data: Data(body.utf8), parts: parts, failure: failure)
    }

    static func reply(
        status: Int, headers: HTTPFields, data: Data, parts: Int = 1, failure: (any Error)? = nil,
        delay: Duration? = nil, onEnd: (@Sendable () -> Void)? = nil
    ) -> TransportResponse {
        let size = max(1, (data.count + parts - 1) / max(1, parts))
        let chunks = stride(from: 0, to: data.count, by: size).map {
            ByteBuffer(bytes: data[$0 ..< min($0 + size, data.count)])
        }
        return TransportResponse(
            status: HTTPResponse.Status(code: status), headers: headers,
            body: Chunks(chunks: chunks, failure: failure, delay: delay, onEnd: onEnd))
    }

    struct Chunks: AsyncSequence, Sendable {
        typealias Element = ByteBuffer
        let chunks: [ByteBuffer]
        let failure: (any Error)?
        /// A pause before each chunk (a slow server); cancellation ends it with an error.
        var delay: Duration? = nil
        /// Called once when the body ends, however it ends.
        var onEnd: (@Sendable () -> Void)? = nil

        struct AsyncIterator: AsyncIteratorProtocol {
            var remaining: [ByteBuffer]
            let failure: (any Error)?
            let delay: Duration?
            let onEnd: (@Sendable () -> Void)?
            var ended = false

            mutating func next() async throws -> ByteBuffer? {
                do {
                    if remaining.isEmpty {
                        if let failure { throw failure }
                        end()
                        return nil
                    }
                    if let delay { try await Task.sleep(for: delay) }
                    return remaining.removeFirst()
                } catch {
                    end()
                    throw error
                }
            }

            private mutating func end() {
                guard !ended else { return }
                ended = true
                onEnd?()
            }
        }

        func makeAsyncIterator() -> AsyncIterator { AsyncIterator(remaining: chunks, failure: failure, delay: delay, onEnd: onEnd) }
    }
}

/// Counts calls from any thread.
final class Counter: Sendable {
    private let value = NIOLockedValueBox<[String: Int]>([:])
    func hit(_ key: String = "") { value.withLockedValue { $0[key, default: 0] += 1 } }
    func count(_ key: String = "") -> Int { value.withLockedValue { $0[key, default: 0] } }
    var all: [String: Int] { value.withLockedValue { $0 } }
}

/// Records values in arrival order from any thread.
final class Recorder<Value: Sendable>: Sendable {
    private let values = NIOLockedValueBox<[Value]>([])
    func append(_ value: Value) { values.withLockedValue { $0.append(value) } }
    var all: [Value] { values.withLockedValue { $0 } }
}

/// Waits until every block already dispatched on `queue` has run.
func drain(_ queue: DispatchQueue) async {
    await withCheckedContinuation { continuation in queue.async { continuation.resume() } }
}

/// Polls a condition without a fixed sleep: yields until it holds or the time runs out.
func eventually(timeout: Duration = .seconds(20), _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    // Polls quickly at first, then backs off to 25 ms: hundreds of tests polling every 2 ms at once
    // were themselves a load that starved the pool's two threads under the thread sanitizer.
    var pause = Duration.milliseconds(1)
    while !condition() {
        if ContinuousClock.now > deadline { return false }
        try? await Task.sleep(for: pause)
        pause = min(pause * 2, .milliseconds(25))
    }
    return true
}

extension NetworkEngine {
    /// An engine over a fake transport, its own queue and its own callback queue.
    static func fake(
        _ transport: FakeTransport, queue: NetworkQueue = NetworkQueue(), baseURL: String = "https://api.example.com/v1",
        headers: [String: String] = [:], _ configure: (inout Configuration) -> Void = { _ in }
    ) -> NetworkEngine {
        var configuration = Configuration()
        configuration.callbackQueue = DispatchQueue(label: "test.callbacks")
        // Independent of the machine: always reachable, no outbox, unless a test says otherwise.
        configuration.reachability = ManualReachability()
        configuration.dataDirectory = nil
        configure(&configuration)
        return NetworkEngine(baseURL: baseURL, headers: headers, configuration: configuration, queue: queue, transport: transport)
    }
}
