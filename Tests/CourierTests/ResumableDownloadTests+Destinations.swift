import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import Testing
@testable import Courier

/// Tier 2: one writer per destination, and what an explicit cancel removes, whenever it comes.
extension ResumableDownloadTests {
    private static func contents(of folder: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
    }

    @Test func cancelRemovesResumeDataKeptByAnEarlierRunEvenBeforeItsFlight() async throws {
        let origin = Origin()
        origin.state.withLockedValue { $0.dropAfter = 40_000 }
        let engine = NetworkEngine.fake(origin.transport)
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("data.bin")
        #expect(await failure(of: engine.operation(path: "data").download(to: file, resumable: true))?.code == .connectionLost)
        #expect(try Self.contents(of: folder).count == 2, "a partial file and its record")
        // cancelKeepingResumeData before the flight keeps them; cancel() gives them up.
        engine.operation(path: "data").download(to: file, resumable: true).cancelKeepingResumeData()
        try await Task.sleep(for: .milliseconds(100))
        #expect(try Self.contents(of: folder).count == 2)
        engine.operation(path: "data").download(to: file, resumable: true).cancel()
        #expect(await eventually { (try? Self.contents(of: folder)) == [] })
    }

    /// A download started at once after `cancel()` starts from nothing; after `cancelKeepingResumeData()`
    /// it waits for the first to close its file, then asks for exactly the rest.
    @Test(arguments: [false, true])
    func aDownloadStartedRightAfterACancelSeesWhatTheCancelDecided(_ keeping: Bool) async throws {
        let origin = Origin()
        origin.state.withLockedValue { $0.chunkDelay = .milliseconds(100) }
        let transport = origin.transport
        let engine = NetworkEngine.fake(transport)
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("data.bin")
        let progress = ProgressLog()
        let first = engine.operation(path: "data").download(to: file, resumable: true)
        first.onDownloadProgress { progress.append($0) }
        engine.enqueue(first)
        // A generous wait: under the thread sanitizer, with the whole suite sharing two cores, a flight can
        // wait many seconds for a thread.
        #expect(await eventually(timeout: .seconds(90)) { (progress.last?.completedBytes ?? 0) >= 25_000 })
        if keeping { first.cancelKeepingResumeData() } else { first.cancel() }
        origin.state.withLockedValue { $0.chunkDelay = nil }
        let response = try await engine.send(engine.operation(path: "data").download(to: file, resumable: true))
        #expect(first.error?.code == .cancelled)
        #expect(response.statusCode == 200)
        #expect(try Data(contentsOf: file) == origin.state.withLockedValue { $0.content })
        if keeping {
            let range = try #require(transport.requests.last?.headers[.range])
            let resumedAt = try #require(Int(range.dropFirst("bytes=".count).dropLast()))
            #expect(resumedAt >= 25_000 && resumedAt < 100_000 && resumedAt % 12_500 == 0, "whole chunks of 12,500 bytes were on disk")
        } else {
            #expect(transport.requests.last?.headers[.range] == nil, "the cancelled download's bytes were given up")
        }
        #expect(await eventually { (try? Self.contents(of: folder)) == ["data.bin"] })
    }

    @Test func twoDownloadsToOneFileRunOneAfterTheOther() async throws {
        let origin = Origin()
        origin.state.withLockedValue { $0.chunkDelay = .milliseconds(5) }
        let transport = origin.transport
        let engine = NetworkEngine.fake(transport)
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("data.bin")
        // Not identical (a header differs), so they do not share a transfer: two writers of data.bin.
        async let first = engine.send(engine.operation(path: "data").download(to: file))
        async let second = engine.send(engine.operation(path: "data").setHeader("2", forName: "X-Copy")
            .download(to: [folder.appendingPathComponent("copy.bin"), file]))
        let (a, b) = try await (first, second)
        #expect(a.statusCode == 200 && b.statusCode == 200)
        #expect(origin.state.withLockedValue { $0.mostActiveBodies } == 1, "never two writers of data.bin at once")
        #expect(transport.requests.count == 2, "two transfers, one after the other")
        let content = origin.state.withLockedValue { $0.content }
        #expect(try Data(contentsOf: file) == content)
        #expect(try Data(contentsOf: folder.appendingPathComponent("copy.bin")) == content)
        #expect(try Self.contents(of: folder) == ["copy.bin", "data.bin"])
    }
}
