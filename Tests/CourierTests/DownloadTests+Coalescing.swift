import CourierTestServer
import Foundation
import Testing
@testable import Courier

/// Tier 3: identical downloads to files share one transfer; each destination is written.
@Suite("Downloads: coalescing")
struct DownloadCoalescingTests {
    @Test func identicalDownloadsShareOneTransferAndEachDestinationIsWritten() async throws {
        try await withServer(isSuspended: true) { server, engine in
            try await TransferTestSupport.withTemporaryDirectory { folder in
                let files = (0..<3).map { folder.appendingPathComponent("copy-\($0).bin") }
                let ops = [
                    engine.operation(path: "/bytes/300000").download(to: files[0]),
                    engine.operation(path: "/bytes/300000").download(to: files[1]),
                    engine.operation(path: "/bytes/300000").download(to: [files[2], files[0]]),
                ]
                for op in ops { engine.enqueue(op) }
                engine.queue.go()
                var delivered: [[URL]] = []
                for op in ops { delivered.append(try await op.response().fileURLs) }
                #expect(server.requestCount(path: "/bytes/300000") == 1, "one transfer for three identical downloads")
                #expect(delivered == [[files[0]], [files[1]], [files[2], files[0]]], "each response names its own files")
                for file in files { #expect(try Data(contentsOf: file) == DownloadTests.expected(300_000)) }
                #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == ["copy-0.bin", "copy-1.bin", "copy-2.bin"],
                        "no partial file left")
            }
        }
    }

    @Test func theCopiesAreMadeBeforeAnotherDownloadMayReplaceTheSharedFile() async throws {
        try await withServer { server, engine in
            try await TransferTestSupport.withTemporaryDirectory { folder in
                let (x, y) = (folder.appendingPathComponent("x.bin"), folder.appendingPathComponent("y.bin"))
                let slow: [String: ParameterValue] = ["chunkSize": 32_768, "delayMs": 20]
                let a = engine.operation(path: "/bytes/300000", params: slow).download(to: x)
                let b = engine.operation(path: "/bytes/300000", params: slow).download(to: y)
                engine.enqueue(a)
                engine.enqueue(b)
                #expect(await server.waitForRequests(count: 1, timeout: .seconds(20)))
                // Another download to x (another URL) waits for the shared one to let go of x.
                let c = engine.operation(path: "/bytes/200000").download(to: x)
                engine.enqueue(c)
                for op in [a, b, c] { _ = try await op.response() }
                #expect(server.requestCount(path: "/bytes/300000") == 1)
                #expect(try Data(contentsOf: y) == DownloadTests.expected(300_000), "b's copy is of its own URL's body")
                #expect(try Data(contentsOf: x) == DownloadTests.expected(200_000), "c wrote x after the shared download")
            }
        }
    }

    @Test func resumableDownloadsAndMemoryGetsOfTheSameURLDoNotShare() async throws {
        try await withServer(isSuspended: true) { server, engine in
            try await TransferTestSupport.withTemporaryDirectory { folder in
                let ops = [
                    engine.operation(path: "/bytes/1000").download(to: folder.appendingPathComponent("a"), resumable: true),
                    engine.operation(path: "/bytes/1000").download(to: folder.appendingPathComponent("b"), resumable: true),
                    engine.operation(path: "/bytes/1000"),   // the body in memory
                    engine.operation(path: "/bytes/1000").download(to: folder.appendingPathComponent("c")),
                ]
                for op in ops { engine.enqueue(op) }
                engine.queue.go()
                for op in ops { _ = try await op.response() }
                #expect(server.requestCount(path: "/bytes/1000") == 4)
                #expect(ops[2].response?.body == DownloadTests.expected(1000))
            }
        }
    }

    @Test func aSharedDownloadThatFailsFailsEveryoneAndWritesNothing() async throws {
        try await withServer(isSuspended: true) { server, engine in
            try await TransferTestSupport.withTemporaryDirectory { folder in
                let ops = (0..<2).map { engine.operation(path: "/drop-mid-body").download(to: folder.appendingPathComponent("f\($0)")) }
                for op in ops { engine.enqueue(op) }
                engine.queue.go()
                for op in ops { #expect(await failure(of: op) != nil) }
                #expect(server.requestCount(path: "/drop-mid-body") == 1)
                let left = try FileManager.default.contentsOfDirectory(atPath: folder.path)
                #expect(left.isEmpty, "nothing under any final name, no partial file")
            }
        }
    }
}

/// Tier 3: the optional limit on what a download may write to disk, and the decompression limit.
@Suite("Downloads: disk limit")
struct DownloadLimitTests {
    @Test func aDecompressionBombDownloadedToAFileIsStoppedAndLeavesNothing() async throws {
        try await withServer(configure: { $0.dataDirectory = nil }) { _, engine in
            try await TransferTestSupport.withTemporaryDirectory { folder in
                let error = await failure(of: engine.operation(path: "/gzip-bomb").download(to: folder.appendingPathComponent("bomb.bin")))
                #expect(error?.code == .bodyTooLarge, "the same decompression limit as in memory")
                let left = try FileManager.default.contentsOfDirectory(atPath: folder.path)
                #expect(left.isEmpty, "\(left)")
                // A gzip body within the limit arrives decompressed in the file.
                let json = folder.appendingPathComponent("data.json")
                _ = try await engine.send(engine.operation(path: "/gzip").download(to: json))
                #expect(try JSONSerialization.jsonObject(with: Data(contentsOf: json)) is [String: Any])
            }
        }
    }

    @Test(arguments: [false, true])
    func aDownloadOverMaximumDownloadSizeIsRefusedAndLeavesNothing(_ chunked: Bool) async throws {
        try await withServer(configure: { $0.maximumDownloadSize = 100_000; $0.dataDirectory = nil }) { server, engine in
            try await TransferTestSupport.withTemporaryDirectory { folder in
                let file = folder.appendingPathComponent("big.bin")
                // Declared too large (refused before writing), or chunked and growing past the limit (stopped there).
                let params: [String: ParameterValue] = chunked ? ["chunked": "1", "chunkSize": 16_384] : [:]
                let error = await failure(of: engine.operation(path: "/bytes/300000", params: params).download(to: file, resumable: true))
                #expect(error?.code == .bodyTooLarge)
                let left = try FileManager.default.contentsOfDirectory(atPath: folder.path)
                #expect(left.isEmpty, "no file, no partial, no record: \(left)")
                // Within the limit, and in memory (which maximumResponseBodySize governs), all is well.
                #expect(try await engine.send(engine.operation(path: "/bytes/100000").download(to: file)).fileURLs == [file])
                #expect(try await engine.send(engine.operation(path: "/bytes/300000")).body.count == 300_000)
            }
        }
    }
}
