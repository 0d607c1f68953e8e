@testable import CourierImages
import CourierTestServer
import Dispatch
import Foundation
import Synchronization
import Testing

/// Tier 3: the image pipeline against an in-process server on 127.0.0.1, with a test decoder (the
/// codecs have tests of their own): coalescing, the memory cache, cancellation, errors, engines.
@Suite("Image pipeline end to end")
struct ImagePipelineTests {
    /// Counts the operations an engine enqueues.
    final class Enqueues: EventMonitor {
        let count = Atomic<Int>(0)
        func operationDidEnqueue(_ operation: NetworkOperation) { count.add(1, ordering: .relaxed) }
    }

    struct Fixture {
        let server: TestServer
        let decoder = RawDecoder()
        let enqueues = Enqueues()
        let pipeline: ImagePipeline
        let engine: NetworkEngine

        init(delay: Duration? = .milliseconds(300)) async throws {
            server = try await TestServer.start()
            server.serve(RawDecoder.encode(width: 40, height: 20), at: "/img/a.raw", contentType: "image/x-raw", delay: delay)
            server.serve(Array("<html><body>Not found</body></html>".utf8), at: "/img/page.png", contentType: "image/png")
            let decoder = decoder
            pipeline = ImagePipeline(configuration: .init { $0.decoders = [decoder] })
            let enqueues = enqueues
            engine = NetworkEngine(baseURL: server.baseURL, configuration: .init { $0.eventMonitors = [enqueues] })
        }

        var decodes: Int { decoder.decodes.load(ordering: .relaxed) }
    }

    @Test func aHundredCallersForOneThumbnailMakeOneRequestAndOneDecodeThenHitMemory() async throws {
        let f = try await Fixture()
        defer { Task { try? await f.server.shutdown() } }
        let url = f.server.url("/img/a.raw")
        let images = try await withThrowingTaskGroup(of: CourierImage.self) { group in
            for _ in 0..<100 {
                group.addTask { try await f.engine.image(url: url, thumbnail: Thumbnail(maxPixelSize: 16), pipeline: f.pipeline) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(images.count == 100 && Set(images).count == 1)
        #expect(f.server.requestCount(path: "/img/a.raw") == 1)
        #expect(f.decodes == 1)
        let enqueued = f.enqueues.count.load(ordering: .relaxed)
        #expect(enqueued == 1, "one task, one operation")
        // The memory cache answers before the queue: no request, no decode, no operation enqueued.
        let again = try await f.engine.image(url: url, thumbnail: Thumbnail(maxPixelSize: 16), pipeline: f.pipeline)
        #expect(again == images[0])
        #expect(f.server.requestCount(path: "/img/a.raw") == 1 && f.decodes == 1)
        #expect(f.enqueues.count.load(ordering: .relaxed) == enqueued)
        #expect(f.pipeline.cachedImage(url: url, engine: f.engine, thumbnail: Thumbnail(maxPixelSize: 16)) == again)
        #expect(f.pipeline.memoryCacheUsage.count == 1)
    }

    @Test func twoSizesOfOneImageShareTheRequestButDecodeEach() async throws {
        let f = try await Fixture()
        defer { Task { try? await f.server.shutdown() } }
        let url = f.server.url("/img/a.raw")
        async let small = f.engine.image(url: url, thumbnail: Thumbnail(maxPixelSize: 8), pipeline: f.pipeline)
        async let full = f.engine.image(url: url, pipeline: f.pipeline)
        let (a, b) = try await (small, full)
        #expect(b.width == 40 && b.height == 20)
        #expect(a.width <= 8 && a.height <= 8 || a == b, "scaled when the codecs' thumbnail is there")
        #expect(f.server.requestCount(path: "/img/a.raw") == 1, "the queue coalesced the identical GETs")
        #expect(f.decodes == 2)
    }

    @Test func cancellingEveryCallerCancelsTheRequestAndOneCallerLeavesTheOthersAlone() async throws {
        let f = try await Fixture(delay: .seconds(30))
        defer { Task { try? await f.server.shutdown() } }
        let url = f.server.url("/img/a.raw")
        let first = Task { try await f.engine.image(url: url, pipeline: f.pipeline) }
        let second = Task { try await f.engine.image(url: url, pipeline: f.pipeline) }
        #expect(await eventually { f.pipeline.waiting(url: url, engine: f.engine).callers == 2 })
        #expect(await f.server.waitForRequests(count: 1, timeout: .seconds(10)))
        first.cancel()
        let firstError = await #expect(throws: NetworkError.self) { try await first.value }
        #expect(firstError?.code == .cancelled)
        try await Task.sleep(for: .milliseconds(100))
        #expect(f.server.abortedRequestCount == 0, "the second caller still waits")
        #expect(f.pipeline.waiting(url: url, engine: f.engine).callers == 1)
        second.cancel()
        let error = await #expect(throws: NetworkError.self) { try await second.value }
        #expect(error?.code == .cancelled)
        #expect(await f.server.waitForAbortedRequests(count: 1, timeout: .seconds(10)), "the request was cancelled")
        #expect(f.server.requestCount(path: "/img/a.raw") == 1)
        #expect(f.decodes == 0)
        #expect(f.pipeline.memoryCacheUsage.count == 0)
        #expect(f.pipeline.waiting(url: url, engine: f.engine).callers == 0)
        // A new caller starts afresh (it never joins the cancelled task).
        let third = Task { try await f.engine.image(url: url, pipeline: f.pipeline) }
        #expect(await f.server.waitForRequests(count: 2, timeout: .seconds(10)))
        third.cancel()
        _ = try? await third.value
    }

    @Test func aPrefetchJoinedByAVisibleRequestRunsAtItsPriorityAndDropsBackWhenItLeaves() async throws {
        let f = try await Fixture(delay: .seconds(30))
        defer { Task { try? await f.server.shutdown() } }
        let url = f.server.url("/img/a.raw")
        let prefetch = f.pipeline.prefetch(urls: [url], engine: f.engine)
        #expect(await eventually { f.pipeline.waiting(url: url, engine: f.engine).callers == 1 })
        let operation = try #require(f.pipeline.waiting(url: url, engine: f.engine).operation)
        #expect(operation.priority == .veryLow)
        let visible = Task { try await f.engine.image(url: url, priority: .high, pipeline: f.pipeline) }
        #expect(await eventually { operation.priority == .high }, "the task runs at its most urgent caller's priority")
        visible.cancel()
        _ = try? await visible.value
        #expect(await eventually { operation.priority == .veryLow }, "and drops back when that caller leaves")
        prefetch.cancel()
        await prefetch.wait()
        #expect(await eventually { operation.state == .finished && operation.error?.code == .cancelled }, "the last caller gone, the request is cancelled")
    }

    @Test func aCallerCancelledBeforeItAsksGetsCancelledEvenWhenTheImageIsCached() async throws {
        let f = try await Fixture(delay: nil)
        defer { Task { try? await f.server.shutdown() } }
        let url = f.server.url("/img/a.raw")
        _ = try await f.engine.image(url: url, pipeline: f.pipeline)
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await f.engine.image(url: url, pipeline: f.pipeline)
        }
        let error = await #expect(throws: NetworkError.self) { try await task.value }
        #expect(error?.code == .cancelled)
    }

    @Test func anHTMLPageServedAsAnImageIsATypedErrorAndSoIsA404() async throws {
        let f = try await Fixture()
        defer { Task { try? await f.server.shutdown() } }
        let html = await #expect(throws: NetworkError.self) {
            try await f.engine.image(url: f.server.url("/img/page.png"), pipeline: f.pipeline)
        }
        #expect(html?.code == .unsupportedImageFormat)
        let missing = await #expect(throws: NetworkError.self) {
            try await f.engine.image(url: f.server.url("/status/404"), pipeline: f.pipeline)
        }
        #expect(missing?.code == .unacceptableStatus)
        let invalid = await #expect(throws: NetworkError.self) { try await f.engine.image(url: "not a url", pipeline: f.pipeline) }
        #expect(invalid?.code == .invalidURL)
        #expect(f.pipeline.memoryCacheUsage.count == 0, "failures are not cached")
    }

    @Test func imagesAreCachedPerEngine() async throws {
        let f = try await Fixture(delay: nil)
        defer { Task { try? await f.server.shutdown() } }
        let url = f.server.url("/img/a.raw")
        let other = NetworkEngine(baseURL: f.server.baseURL, headers: ["Authorization": "Bearer other-user"])
        _ = try await f.engine.image(url: url, pipeline: f.pipeline)
        #expect(f.pipeline.cachedImage(url: url, engine: f.engine) != nil)
        #expect(f.pipeline.cachedImage(url: url, engine: other) == nil, "another engine's credentials, another entry")
        _ = try await other.image(url: url, pipeline: f.pipeline)
        #expect(f.server.requestCount(path: "/img/a.raw") == 2)
        // The other user signs out: their images go, the first engine's stay.
        f.pipeline.removeCachedImages(for: other)
        #expect(f.pipeline.cachedImage(url: url, engine: other) == nil)
        #expect(f.pipeline.cachedImage(url: url, engine: f.engine) != nil)
    }

    @Test func theClosureFormCallsBackOnTheEngineQueueAndPrefetchFillsTheCache() async throws {
        let f = try await Fixture(delay: nil)
        defer { Task { try? await f.server.shutdown() } }
        let url = f.server.url("/img/a.raw")
        let key = DispatchSpecificKey<Bool>()
        let queue = DispatchQueue(label: "test.images.callbacks")
        queue.setSpecific(key: key, value: true)
        let engine = NetworkEngine(baseURL: f.server.baseURL, configuration: .init { $0.callbackQueue = queue })
        await f.pipeline.prefetch(urls: [url], engine: engine).wait()
        #expect(f.pipeline.cachedImage(url: url, engine: engine) != nil)
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<(Bool, Int?), Never>) in
            engine.image(url: url, pipeline: f.pipeline) { result in
                continuation.resume(returning: (DispatchQueue.getSpecific(key: key) == true, try? result.get().width))
            }
        }
        #expect(result.0, "on the engine's callback queue")
        #expect(result.1 == 40)
        #expect(f.server.requestCount(path: "/img/a.raw") == 1, "the prefetched image served it")
    }

    @Test func aCancelledClosureLoadReportsCancelled() async throws {
        let f = try await Fixture(delay: .seconds(30))
        defer { Task { try? await f.server.shutdown() } }
        let code = await withCheckedContinuation { (continuation: CheckedContinuation<NetworkError.Code?, Never>) in
            let task = f.engine.image(url: f.server.url("/img/a.raw"), pipeline: f.pipeline) { result in
                if case .failure(let error) = result { continuation.resume(returning: error.code) } else { continuation.resume(returning: nil) }
            }
            Task {
                _ = await f.server.waitForRequests(count: 1, timeout: .seconds(10))
                task.cancel()
            }
        }
        #expect(code == .cancelled)
    }
}
