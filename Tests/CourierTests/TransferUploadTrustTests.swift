import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import Testing
@testable import Courier

/// Tier 2: uploads whose source changes while they are sent (issue 23 B10), over a fake transport
/// that reads the streamed body as a server would.
@Suite("Uploads of files that change")
struct TransferUploadTrustTests {
    @Test func aFileThatGrowsWhileSentIsDeliveredAsMeasuredAndSucceeds() async throws {
        try await TransferTestSupport.withTemporaryDirectory { (folder: URL) async throws in
            let file = folder.appendingPathComponent("growing.log")
            try Data(repeating: 0x61, count: 200_000).write(to: file)
            let received = NIOLockedValueBox<[UInt8]>([])
            let transport = FakeTransport { request in
                // The file grows once the request (and its Content-Length) is on its way.
                let handle = try FileHandle(forWritingTo: file)
                try handle.seekToEnd()
                try handle.write(contentsOf: Data(repeating: 0x62, count: 50_000))
                try handle.close()
                let body = try #require(request.streamedBody)
                #expect(body.length == 200_000)
                for try await part in body.parts() { received.withLockedValue { $0.append(contentsOf: part.readableBytesView) } }
                return FakeTransport.reply(status: 201, headers: [:], data: Data())
            }
            let engine = NetworkEngine.fake(transport)
            let response = try await engine.send(engine.operation(path: "upload", method: .post, body: .file(file)))
            #expect(response.statusCode == 201, "delivered whole: not reported as a failure (a retry would send it twice)")
            #expect(received.withLockedValue { $0 } == [UInt8](repeating: 0x61, count: 200_000), "every declared byte, nothing more")
        }
    }

    @Test func aFileThatShrinksWhileSentFailsBeforeTheRequestCompletes() async throws {
        try await TransferTestSupport.withTemporaryDirectory { (folder: URL) async throws in
            let file = folder.appendingPathComponent("shrinking.bin")
            try Data(repeating: 0x61, count: 200_000).write(to: file)
            let transport = FakeTransport { request in
                #expect(truncate(file.path, 50_000) == 0)
                for try await _ in try #require(request.streamedBody).parts() {}
                return FakeTransport.reply(status: 201, headers: [:], data: Data())
            }
            let engine = NetworkEngine.fake(transport)
            let error = await failure(of: engine.operation(path: "upload", method: .post, body: .file(file)))
            #expect(error?.code == .fileUnavailable && error?.message.contains("shrank") == true, "\(String(describing: error))")
        }
    }
}
