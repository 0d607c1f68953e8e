import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import Testing
@testable import Courier

/// Tier 2: resumable downloads (issue 10) through engine and executor over a fake origin that honours
/// `Range` and `If-Range` (RFC 9110 §13.1.5, §14.2, §15.3.7, §15.5.17) and can drop the connection.
@Suite("Resumable downloads")
struct ResumableDownloadTests {
    /// The origin's state: its content and tag, and how many bytes of the next body it sends before dropping.
    final class Origin: Sendable {
        struct State {
            var content = Data((0..<100_000).map { UInt8($0 % 249) })
            var etag = "\"v1\""
            var dropAfter: Int?
            var ignoresRange = false
            /// At most this many bytes in a 206 (a server may send less than the open range asked for).
            var rangeCap: Int?
            /// A pause before each of a body's chunks.
            var chunkDelay: Duration?
            /// Bodies being sent now, and the most at once.
            var activeBodies = 0
            var mostActiveBodies = 0
        }
        let state = NIOLockedValueBox(State())

        var transport: FakeTransport {
            FakeTransport { [state] request in
                let current = state.withLockedValue { $0 }
                var headers: HTTPFields = [.eTag: current.etag, .contentType: "application/octet-stream"]
                var status = 200
                var body = current.content
                if !current.ignoresRange, let range = CachePartialContent.requestedRange(request.headers),
                    request.headers[.ifRange] == nil || request.headers[.ifRange] == current.etag
                {
                    guard let bytes = range.resolved(completeLength: current.content.count) else {
                        return FakeTransport.reply(status: 416, headers: [.contentRange: "bytes */\(current.content.count)", .eTag: current.etag], data: Data())
                    }
                    status = 206
                    let last = min(bytes.upperBound, bytes.lowerBound + (current.rangeCap ?? Int.max / 2) - 1)
                    headers[.contentRange] = "bytes \(bytes.lowerBound)-\(last)/\(current.content.count)"
                    body = current.content.subdata(in: bytes.lowerBound..<(last + 1))
                }
                headers[.contentLength] = String(body.count)
                if let drop = current.dropAfter {
                    state.withLockedValue { $0.dropAfter = nil }
                    return FakeTransport.reply(status: status, headers: headers, data: body.prefix(drop), parts: 4,
                                               failure: NetworkError(.connectionLost, "dropped"))
                }
                state.withLockedValue { state in
                    state.activeBodies += 1
                    state.mostActiveBodies = max(state.mostActiveBodies, state.activeBodies)
                }
                return FakeTransport.reply(status: status, headers: headers, data: body, parts: 8, delay: current.chunkDelay,
                                           onEnd: { state.withLockedValue { $0.activeBodies -= 1 } })
            }
        }
    }

    static func folder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("courier-resume-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test func anInterruptedDownloadResumesWithRangeAndIfRange() async throws {
        let origin = Origin()
        origin.state.withLockedValue { $0.dropAfter = 40_000 }
        let transport = origin.transport
        let engine = NetworkEngine.fake(transport)
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("data.bin")
        let first = await failure(of: engine.operation(path: "data").download(to: file, resumable: true))
        #expect(first?.code == .connectionLost)
        #expect(!FileManager.default.fileExists(atPath: file.path))
        let progress = ProgressLog()
        let op = engine.operation(path: "data").download(to: file, resumable: true)
        op.onDownloadProgress { progress.append($0) }
        let response = try await engine.send(op)
        #expect(response.statusCode == 200 && response.fileURLs == [file])
        #expect(try Data(contentsOf: file) == origin.state.withLockedValue { $0.content })
        let resumed = try #require(transport.requests.last)
        #expect(resumed.headers[.range] == "bytes=40000-" && resumed.headers[.ifRange] == "\"v1\"")
        #expect(await eventually { progress.all.first.map { $0.completedBytes > 40_000 && $0.totalBytes == 100_000 } ?? false },
                "progress counts from the bytes already on disk")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["data.bin"], "no partial, no record left")
    }

    @Test func a206WithLessThanTheRestIsFollowedByRequestsForWhatIsLeft() async throws {
        let origin = Origin()
        origin.state.withLockedValue { $0.dropAfter = 10_000 }
        let transport = origin.transport
        let engine = NetworkEngine.fake(transport)
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("data.bin")
        #expect(await failure(of: engine.operation(path: "data").download(to: file, resumable: true))?.code == .connectionLost)
        origin.state.withLockedValue { $0.rangeCap = 30_000 }
        let progress = ProgressLog()
        let op = engine.operation(path: "data").download(to: file, resumable: true)
        op.onDownloadProgress { progress.append($0) }
        let response = try await engine.send(op)
        #expect(response.statusCode == 200 && response.fileURLs == [file])
        #expect(response.headers[.contentLength] == "100000" && response.headers[.contentRange] == nil)
        #expect(try Data(contentsOf: file) == origin.state.withLockedValue { $0.content })
        #expect(transport.requests.dropFirst().map { $0.headers[.range] } == ["bytes=10000-", "bytes=40000-", "bytes=70000-"])
        #expect(transport.requests.dropFirst().allSatisfy { $0.headers[.ifRange] == "\"v1\"" })
        #expect(await eventually { progress.all.last?.completedBytes == 100_000 })
        #expect(progress.all.map(\.completedBytes) == progress.all.map(\.completedBytes).sorted(), "progress never goes back")
        #expect(progress.all.allSatisfy { $0.totalBytes == 100_000 }, "each short 206 still counts towards the whole file")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["data.bin"], "no partial, no record left")
    }

    @Test(arguments: ["changed", "ignoresRange"])
    func aChangedFileOrAServerThatIgnoresRangeGivesACleanFullDownload(_ situation: String) async throws {
        let origin = Origin()
        origin.state.withLockedValue { $0.dropAfter = 30_000 }
        let engine = NetworkEngine.fake(origin.transport)
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("data.bin")
        _ = await failure(of: engine.operation(path: "data").download(to: file, resumable: true))
        origin.state.withLockedValue { state in
            if situation == "changed" {
                state.etag = "\"v2\""
                state.content = Data((0..<90_000).map { UInt8(($0 * 7) % 251) })
            } else {
                state.ignoresRange = true
            }
        }
        _ = try await engine.send(engine.operation(path: "data").download(to: file, resumable: true))
        #expect(try Data(contentsOf: file) == origin.state.withLockedValue { $0.content })
    }

    @Test func a416ForAPartialThatIsAlreadyCompleteFinishesIt() async throws {
        let origin = Origin()
        // Every byte arrives, then the connection drops before the end is seen.
        origin.state.withLockedValue { $0.dropAfter = 100_000 }
        let transport = origin.transport
        let engine = NetworkEngine.fake(transport)
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("data.bin")
        _ = await failure(of: engine.operation(path: "data").download(to: file, resumable: true))
        let response = try await engine.send(engine.operation(path: "data").download(to: file, resumable: true))
        #expect(transport.requests.last?.headers[.range] == "bytes=100000-")
        #expect(response.statusCode == 200)
        #expect(try Data(contentsOf: file) == origin.state.withLockedValue { $0.content })
    }

    @Test func anAnswerAResumableDownloadCannotUseIsATypedErrorAndKeepsTheBytes() async throws {
        let origin = Origin()
        origin.state.withLockedValue { $0.dropAfter = 30_000 }
        let useful = origin.transport
        let engine = NetworkEngine.fake(FakeTransport { request in
            if request.headers[.range] != nil { return FakeTransport.reply(status: 204, headers: [:], data: Data()) }
            return try await useful.execute(request)
        })
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("data.bin")
        _ = await failure(of: engine.operation(path: "data").download(to: file, resumable: true))
        let error = await failure(of: engine.operation(path: "data").download(to: file, resumable: true))
        #expect(error?.code == .unacceptableStatus)
        let partial = folder.appendingPathComponent(".data.bin.courier-partial")
        #expect(try Data(contentsOf: partial).count == 30_000, "the bytes on disk stay for a later attempt")
    }

    @Test func aNonResumableDownloadNeverAsksForARange() async throws {
        let origin = Origin()
        origin.state.withLockedValue { $0.dropAfter = 30_000 }
        let transport = origin.transport
        let engine = NetworkEngine.fake(transport)
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("data.bin")
        _ = await failure(of: engine.operation(path: "data").download(to: file))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
        _ = try await engine.send(engine.operation(path: "data").download(to: file))
        #expect(transport.requests.last?.headers[.range] == nil)
        #expect(try Data(contentsOf: file).count == 100_000)
    }
}
