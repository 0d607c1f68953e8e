import CourierTestServer
import Foundation
import Testing
@testable import Courier

/// Review of issue 23: another user's partial file or resume record, planted beside a destination in a
/// shared folder, is neither written nor read; a bandwidth limit of `Int.max` ("no limit") never traps.
@Suite("transfers: other users' files, huge limits")
struct TransferOwnershipTests {
    static var isRoot: Bool { geteuid() == 0 }

    @Test(.enabled(if: isRoot)) func anotherUsersPartialFileIsNeitherWrittenNorResumed() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-owner-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent("payroll.csv")
        let partial = DownloadWriter.partialURL(for: destination)
        let planted = Data(repeating: 0x45, count: 500)
        _ = FileManager.default.createFile(atPath: partial.path, contents: planted, attributes: [.posixPermissions: 0o666])
        #expect(chown(partial.path, 65534, 65534) == 0)
        let engine = NetworkEngine(host: "127.0.0.1", port: server.port, isSecure: false, configuration: .init { $0.dataDirectory = nil; $0.reachability = ManualReachability() })
        let op = engine.operation(path: "/bytes/100000").download(to: destination, resumable: true)
        await #expect { try await op.response() } throws: { ($0 as? NetworkError)?.code == .fileUnavailable }
        #expect(try Data(contentsOf: partial) == planted, "the other user's file is left as it was")
        #expect(!FileManager.default.fileExists(atPath: destination.path))
    }

    @Test func aLimitOfIntMaxIsNoTrap() async throws {
        let throttle = Throttle(bytesPerSecond: .max)
        #expect(throttle.bytesPerSecond == .max)
        #expect(throttle.delay(for: 1 << 20) == .zero)
        let queue = NetworkQueue()
        queue.maximumBytesPerSecond = .max
        #expect(queue.maximumBytesPerSecond == .max)
        let engine = NetworkEngine.fake(FakeTransport(), queue: queue)
        let post = engine.operation(path: "notes", method: .post, body: .data(Data(repeating: 1, count: 100_000)))
        post.maximumBytesPerSecond = .max
        _ = try await engine.send(post)
    }
}
