import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import Testing
@testable import Courier

/// Tier 2: bandwidth limits and upload progress (issue 23 B12), over a fake transport that reads
/// request bodies as a server would. Bounds are generous: they tell "throttled" from "not throttled"
/// (seconds against milliseconds), not exact rates.
@Suite("Throttling and upload progress")
struct TransferThrottleTests {
    /// A transport that reads the whole request body (streamed or in memory), then answers 200.
    static func reading(_ received: NIOLockedValueBox<Int>) -> FakeTransport {
        FakeTransport { request in
            if let body = request.streamedBody {
                for try await part in body.parts() { received.withLockedValue { $0 += part.readableBytes } }
            } else if let body = request.body {
                received.withLockedValue { $0 += body.count }
            }
            return FakeTransport.reply(status: 200, headers: [:], data: Data())
        }
    }

    @Test(arguments: ["data", "json", "form"])
    func inMemoryBodiesObeyTheLimit(_ kind: String) async throws {
        let received = NIOLockedValueBox(0)
        let engine = NetworkEngine.fake(Self.reading(received))
        let text = String(repeating: "x", count: 512 * 1024)
        let body: RequestBody = switch kind {
        case "json": .json(["text": text])
        case "form": .form(["text": .string(text)])
        default: .data(Data(text.utf8))
        }
        let op = engine.operation(path: "up", method: .post, body: body)
        op.maximumBytesPerSecond = 256 * 1024
        let started = ContinuousClock.now
        _ = try await engine.send(op)
        let elapsed = ContinuousClock.now - started
        #expect(received.withLockedValue { $0 } >= 512 * 1024)
        // 512 KiB at 256 KiB/s is about 1.9 s; unthrottled it took milliseconds.
        #expect(elapsed > .seconds(1), "\(elapsed)")
    }

    @Test func aSmallBodyIsNotReportedSentBeforeTheServerHasIt() async throws {
        let progress = ProgressLog()
        let reportedBeforeServer = NIOLockedValueBox<Int?>(nil)
        let transport = FakeTransport { request in
            reportedBeforeServer.withLockedValue { $0 = progress.all.count }
            #expect(request.body?.count == 10)
            return FakeTransport.reply(status: 200, headers: [:], data: Data())
        }
        let engine = NetworkEngine.fake(transport)
        let op = engine.operation(path: "up", method: .post, body: .data(Data(repeating: 1, count: 10)))
        op.onUploadProgress { progress.append($0) }
        _ = try await engine.send(op)
        #expect(reportedBeforeServer.withLockedValue { $0 } == 0, "nothing reported before the transport had the request")
        #expect(await eventually { progress.last.map { $0.completedBytes == 10 && $0.totalBytes == 10 } ?? false })
    }

    @Test func aQueueLimitSetAfterEnqueueingApplies() async throws {
        let queue = NetworkQueue(isSuspended: true)
        let transport = FakeTransport { _ in
            FakeTransport.reply(status: 200, headers: [.contentLength: String(512 * 1024)], data: Data(repeating: 1, count: 512 * 1024), parts: 32)
        }
        let engine = NetworkEngine.fake(transport, queue: queue)
        let op = engine.operation(path: "down")
        engine.enqueue(op)
        #expect(await eventually { queue.operationCount == 1 })
        queue.maximumBytesPerSecond = 256 * 1024   // set while the operation waits
        let started = ContinuousClock.now
        queue.go()
        _ = try await op.response()
        let elapsed = ContinuousClock.now - started
        #expect(elapsed > .seconds(1), "512 KiB at 256 KiB/s: \(elapsed)")
        queue.maximumBytesPerSecond = nil
        #expect(queue.maximumBytesPerSecond == nil)
    }

    @Test func aLowLimitBurstsATenthOfASecond() {
        var bucket = TokenBucket(bytesPerSecond: 1024)
        let now = ContinuousClock.now
        #expect(bucket.available(at: now) == 102)
        // 16 KiB at 1 KiB/s: about 16 s of waiting, not a free burst.
        #expect(bucket.take(16 * 1024, at: now) > .seconds(15))
    }
}
