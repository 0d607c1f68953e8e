import Foundation
import Testing
@testable import Courier

/// Tier 2: the resume sidecar on disk, next to the partial file.
@Suite("ResumeRecordStore")
struct ResumeRecordStoreTests {
    private typealias Support = TransferTestSupport

    private func sample(_ bytes: Int64 = 10) -> ResumeRecord {
        ResumeRecord(url: "https://x/file.zip", entityTag: "\"e\"", lastModified: nil, completeLength: 100, bytesOnDisk: bytes)
    }

    @Test func namesLiveNextToTheDestination() {
        let store = ResumeRecordStore(destination: URL(fileURLWithPath: "/downloads/movie.mp4"))
        #expect(store.partialURL.path == "/downloads/.movie.mp4.courier-partial")
        #expect(store.recordURL.path == "/downloads/.movie.mp4.courier-partial.json")
    }

    @Test func aRecordRoundTripsWithOwnerOnlyPermissionsAndNoTemporaryLeft() async throws {
        try await Support.withTemporaryDirectory { folder in
            let store = ResumeRecordStore(destination: folder.appendingPathComponent("file.zip"))
            #expect(await store.read() == nil)
            try await store.write(sample(10))
            try await store.write(sample(20))
            #expect(await store.read() == sample(20))
            let attributes = try FileManager.default.attributesOfItem(atPath: store.recordURL.path)
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
            let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            #expect(names == [".file.zip.courier-partial.json"])
        }
    }

    @Test func aDamagedRecordReadsAsNothingAndThePartialStays() async throws {
        try await Support.withTemporaryDirectory { folder in
            let store = ResumeRecordStore(destination: folder.appendingPathComponent("file.zip"))
            try Data(repeating: 1, count: 123).write(to: store.partialURL)
            for damage in [Data("{not json".utf8), Data(), Data("{\"version\":99,\"url\":\"u\",\"bytesOnDisk\":1}".utf8),
                           Data(repeating: 32, count: ResumeRecordStore.maximumRecordSize + 1)] {
                try damage.write(to: store.recordURL)
                #expect(await store.read() == nil)
            }
            #expect(await store.partialLength() == 123)
            #expect(FileManager.default.fileExists(atPath: store.partialURL.path))
        }
    }

    @Test func removingIsExplicit() async throws {
        try await Support.withTemporaryDirectory { folder in
            let store = ResumeRecordStore(destination: folder.appendingPathComponent("file.zip"))
            try Data(repeating: 1, count: 5).write(to: store.partialURL)
            try await store.write(sample())
            await store.removeRecord()
            #expect(await store.read() == nil)
            #expect(await store.partialLength() == 5)
            try await store.write(sample())
            await store.removePartial()
            #expect(await store.partialLength() == 0)
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
        }
    }

    @Test func aMissingFolderIsAFileError() async throws {
        let store = ResumeRecordStore(destination: URL(fileURLWithPath: "/nonexistent-\(UUID().uuidString)/f"))
        let error = await #expect(throws: NetworkError.self) { try await store.write(sample()) }
        #expect(error?.code == .fileUnavailable)
        #expect(await store.partialLength() == 0)
    }
}
