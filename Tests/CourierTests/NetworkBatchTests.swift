import Foundation
import Testing
@testable import Courier

@Suite("NetworkBatch over a fake transport")
struct NetworkBatchTests {
    @Test func nothingStartsBeforeGoAndTheBatchFinishesOnceAfterAll() async throws {
        let transport = FakeTransport()
        let engine = NetworkEngine.fake(transport) { $0.coalescesRequests = false }
        let batch = NetworkBatch(callbackQueue: engine.configuration.callbackQueue)
        let ops = (0..<5).map { engine.operation(path: "item/\($0)") }
        for op in ops { batch.add(op) }
        let finishes = Counter()
        batch.onFinish { _ in finishes.hit() }
        let events = batch.events
        try await Task.sleep(for: .milliseconds(20))
        #expect(transport.requestCount == 0)
        batch.go()
        let result = await batch.result()
        #expect(result.isSuccess)
        #expect(result.succeeded.map(\.url?.lastPathComponent) == (0..<5).map { "\($0)" })
        var log: [String] = []
        for await event in events {
            switch event {
            case .started: log.append("started")
            case .finished: log.append("finished")
            case .failed: log.append("failed")
            case .queueFinished: log.append("done")
            }
        }
        #expect(log.filter { $0 == "started" }.count == 5)
        #expect(log.filter { $0 == "finished" }.count == 5)
        #expect(log.last == "done" && log.filter { $0 == "done" }.count == 1)
        await drain(engine.configuration.callbackQueue)
        #expect(finishes.count() == 1)
    }

    @Test func aFailureCancelsTheOthersByDefault() async throws {
        let transport = FakeTransport { request in
            if request.url.path.hasSuffix("bad") { return FakeTransport.reply(status: 500) }
            try await Task.sleep(for: .seconds(30))
            return FakeTransport.reply()
        }
        let engine = NetworkEngine.fake(transport)
        let batch = NetworkBatch(callbackQueue: engine.configuration.callbackQueue)
        let slow = (0..<3).map { engine.operation(path: "slow/\($0)") }
        let bad = engine.operation(path: "bad")
        for op in slow + [bad] { batch.add(op) }
        batch.go()
        let result = await batch.result()
        #expect(result.failed.map(\.url?.lastPathComponent) == ["bad"])
        #expect(result.cancelled.count == 3)
        #expect(slow.allSatisfy { $0.error?.code == .cancelled })
    }

    @Test func withoutCancelOnFailureTheOthersFinish() async throws {
        let transport = FakeTransport { request in
            FakeTransport.reply(status: request.url.path.hasSuffix("bad") ? 404 : 200)
        }
        let engine = NetworkEngine.fake(transport)
        let batch = NetworkBatch(cancelsAllOnFailure: false, callbackQueue: engine.configuration.callbackQueue)
        for path in ["a", "bad", "c"] { batch.add(engine.operation(path: path)) }
        batch.go()
        let result = await batch.result()
        #expect(result.succeeded.count == 2 && result.failed.count == 1 && result.cancelled.isEmpty)
    }

    @Test func accurateProgressAsksForEverySizeFirst() async throws {
        let transport = FakeTransport { request in
            let size = Int(request.url.lastPathComponent) ?? 0
            if request.method == .head {
                return FakeTransport.reply(status: 200, headers: [.contentLength: "\(size)"], data: Data())
            }
            return FakeTransport.reply(status: 200, headers: [.contentLength: "\(size)"], data: Data(count: size), parts: 4)
        }
        let engine = NetworkEngine.fake(transport)
        let batch = NetworkBatch(usesAccurateProgress: true, callbackQueue: engine.configuration.callbackQueue)
        for size in [100, 300] { batch.add(engine.operation(path: "bytes/\(size)")) }
        let seen = Recorder<TransferProgress>()
        batch.onProgress { seen.append($0) }
        batch.go()
        _ = await batch.result()
        await drain(engine.configuration.callbackQueue)
        let methods = transport.requests.map(\.method)
        #expect(methods.prefix(2).allSatisfy { $0 == .head }, "\(methods)")
        #expect(methods.suffix(2).allSatisfy { $0 == .get })
        let withBytes = seen.all.filter { $0.completedBytes > 0 }
        #expect(withBytes.allSatisfy { $0.totalBytes == 400 }, "\(seen.all)")
        #expect(seen.all.last == TransferProgress(completedBytes: 400, totalBytes: 400))
    }

    @Test func cancelAllAndLateFinishHandlers() async {
        let engine = NetworkEngine.fake(FakeTransport { _ in
            try await Task.sleep(for: .seconds(30))
            return FakeTransport.reply()
        })
        let batch = NetworkBatch(callbackQueue: engine.configuration.callbackQueue)
        for n in 0..<3 { batch.add(engine.operation(path: "x\(n)")) }
        batch.go()
        batch.cancelAll()
        let result = await batch.result()
        #expect(result.cancelled.count == 3)
        let late = Counter()
        batch.onFinish { _ in late.hit() }
        await drain(engine.configuration.callbackQueue)
        #expect(late.count() == 1)
    }
}
