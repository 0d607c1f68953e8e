import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import Testing
@testable import Courier

/// Tiers 1 and 2: what a resumed download trusts in a server's answer (issue 23, part B): validators of
/// a 206 from a server that ignores `If-Range`, weak entity tags, a caller's own `Range`, a body that
/// ends at the wrong length.
@Suite("Resumed downloads and what the server says")
struct TransferResumeTrustTests {
    static let oldDate = "Mon, 02 Nov 2026 10:00:00 GMT"
    static let newDate = "Thu, 26 Nov 2026 10:00:00 GMT"
    static let sent = "Fri, 27 Nov 2026 10:00:00 GMT"

    /// An origin without entity tags whose file changes; it answers every `Range` with 206, ignoring `If-Range`.
    final class IgnoringOrigin: Sendable {
        struct State {
            var content = Data(repeating: 0x6F, count: 100_000)   // "o": old
            var lastModified = TransferResumeTrustTests.oldDate
            var dropAfter: Int? = 40_000
        }
        let state = NIOLockedValueBox(State())

        var transport: FakeTransport {
            FakeTransport { [state] request in
                let current = state.withLockedValue { $0 }
                var headers: HTTPFields = [.lastModified: current.lastModified, .date: TransferResumeTrustTests.sent]
                var status = 200
                var body = current.content
                if let range = CachePartialContent.requestedRange(request.headers), let bytes = range.resolved(completeLength: current.content.count) {
                    status = 206   // If-Range ignored
                    headers[.contentRange] = "bytes \(bytes.lowerBound)-\(bytes.upperBound)/\(current.content.count)"
                    body = current.content.subdata(in: bytes.lowerBound..<(bytes.upperBound + 1))
                }
                headers[.contentLength] = String(body.count)
                if let drop = current.dropAfter {
                    state.withLockedValue { $0.dropAfter = nil }
                    return FakeTransport.reply(status: status, headers: headers, data: body.prefix(drop), parts: 4,
                                               failure: NetworkError(.connectionLost, "dropped"))
                }
                return FakeTransport.reply(status: status, headers: headers, data: body, parts: 4)
            }
        }
    }

    // MARK: B3: a 206 of a changed representation

    @Test func a206WithAnotherLastModifiedIsNeverSpliced() async throws {
        try await TransferTestSupport.withTemporaryDirectory { (folder: URL) async throws in
            let origin = IgnoringOrigin()
            let transport = origin.transport
            let engine = NetworkEngine.fake(transport)
            let file = folder.appendingPathComponent("data.bin")
            #expect(await failure(of: engine.operation(path: "data").download(to: file, resumable: true))?.code == .connectionLost)
            origin.state.withLockedValue { state in
                state.content = Data(repeating: 0x6E, count: 100_000)   // "n": new
                state.lastModified = TransferResumeTrustTests.newDate
            }
            let response = try await engine.send(engine.operation(path: "data").download(to: file, resumable: true))
            #expect(response.statusCode == 200)
            #expect(try Data(contentsOf: file) == Data(repeating: 0x6E, count: 100_000), "the new file whole, no old bytes")
            #expect(transport.requests[1].headers[.ifRange] == Self.oldDate)
            #expect(transport.requests.last?.headers[.range] == nil, "started over from zero")
        }
    }

    @Test func partialMatchesComparesEveryValidatorTheRecordHolds() {
        let both = ResumeRecord(url: "u", entityTag: "\"a\"", lastModified: Self.oldDate, completeLength: 10, bytesOnDisk: 5)
        #expect(ResumeValidators.partialMatches(both, [.eTag: "\"a\"", .lastModified: Self.oldDate]))
        #expect(!ResumeValidators.partialMatches(both, [.eTag: "\"a\"", .lastModified: Self.newDate]))
        #expect(!ResumeValidators.partialMatches(both, [.eTag: "\"b\""]))
        #expect(ResumeValidators.partialMatches(both, [.eTag: "\"a\""]))
        let dateOnly = ResumeRecord(url: "u", entityTag: nil, lastModified: Self.oldDate, completeLength: 10, bytesOnDisk: 5)
        #expect(ResumeValidators.partialMatches(dateOnly, [:]), "nothing contradicts it")
        #expect(!ResumeValidators.partialMatches(dateOnly, [.lastModified: Self.newDate]))
        var machine = DownloadResumeStateMachine(url: "u")
        _ = machine.start(partialLength: 5, record: dateOnly)
        #expect(machine.receivedHead(status: 206, headers: [.contentRange: "bytes 5-9/10", .lastModified: Self.newDate]) == .startOver(.validatorChanged))
    }

    // MARK: B4: a weak entity tag and a date

    @Test func aWeakEntityTagWithADateIsNotResumable() async throws {
        #expect(ResumeValidators.record(url: "u", headers: [.eTag: "W/\"w\"", .lastModified: Self.oldDate, .date: Self.sent]) == nil)
        #expect(ResumeValidators.record(url: "u", headers: [.eTag: "\"s\"", .lastModified: Self.oldDate, .date: Self.sent])?.ifRangeValue == "\"s\"")
        try await TransferTestSupport.withTemporaryDirectory { (folder: URL) async throws in
            let dropped = NIOLockedValueBox(false)
            let transport = FakeTransport { _ in
                let headers: HTTPFields = [.eTag: "W/\"w\"", .lastModified: Self.oldDate, .date: Self.sent, .contentLength: "100000"]
                let body = Data(repeating: 1, count: 100_000)
                let first = dropped.withLockedValue { wasDropped in
                    defer { wasDropped = true }
                    return !wasDropped
                }
                if first {
                    return FakeTransport.reply(status: 200, headers: headers, data: body.prefix(30_000), parts: 2, failure: NetworkError(.connectionLost, "dropped"))
                }
                return FakeTransport.reply(status: 200, headers: headers, data: body, parts: 2)
            }
            let engine = NetworkEngine.fake(transport)
            let file = folder.appendingPathComponent("weak.bin")
            #expect(await failure(of: engine.operation(path: "weak").download(to: file, resumable: true))?.code == .connectionLost)
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty, "nothing kept to resume")
            _ = try await engine.send(engine.operation(path: "weak").download(to: file, resumable: true))
            #expect(transport.requests.last?.headers[.ifRange] == nil && transport.requests.last?.headers[.range] == nil)
            #expect(try Data(contentsOf: file).count == 100_000)
        }
    }

    // MARK: B9: a caller's own Range

    @Test func aCallersRangeIsMeasuredByItsOwnLength() async throws {
        try await TransferTestSupport.withTemporaryDirectory { (folder: URL) async throws in
            let transport = FakeTransport { request in
                #expect(request.headers[.range] == "bytes=0-99")
                return FakeTransport.reply(status: 206, headers: [.contentRange: "bytes 0-99/2097152", .contentLength: "100"],
                                           data: Data(repeating: 7, count: 100))
            }
            let engine = NetworkEngine.fake(transport) { $0.maximumDownloadSize = 1 << 20 }
            let file = folder.appendingPathComponent("head.bin")
            let progress = ProgressLog()
            let op = engine.operation(path: "big").download(to: file)
            op.appendHeader("bytes=0-99", forName: "Range")
            op.onDownloadProgress { progress.append($0) }
            let response = try await engine.send(op)
            #expect(response.statusCode == 206)
            #expect(try Data(contentsOf: file).count == 100)
            #expect(await eventually { progress.last.map { $0.completedBytes == 100 && $0.totalBytes == 100 } ?? false },
                    "\(String(describing: progress.last))")
        }
    }

    // MARK: B13: the message says what happened to the partial file

    @Test func aBodyThatCannotBeContinuedSaysThePartialWasRemoved() async throws {
        try await TransferTestSupport.withTemporaryDirectory { (folder: URL) async throws in
            let requests = NIOLockedValueBox(0)
            let transport = FakeTransport { _ in
                let count = requests.withLockedValue { $0 += 1; return $0 }
                if count == 1 {
                    return FakeTransport.reply(status: 200, headers: [.eTag: "\"v\"", .contentLength: "100000"],
                                               data: Data(repeating: 1, count: 40_000), parts: 2, failure: NetworkError(.connectionLost, "dropped"))
                }
                // A 206 that brings nothing of what it announces.
                return FakeTransport.reply(status: 206, headers: [.eTag: "\"v\"", .contentRange: "bytes 40000-99999/100000"], data: Data())
            }
            let engine = NetworkEngine.fake(transport)
            let file = folder.appendingPathComponent("short.bin")
            #expect(await failure(of: engine.operation(path: "f").download(to: file, resumable: true))?.code == .connectionLost)
            let error = await failure(of: engine.operation(path: "f").download(to: file, resumable: true))
            #expect(error?.message.contains("the partial file was removed") == true, "\(String(describing: error))")
            #expect(error?.message.contains("resumes from there") == false)
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty, "as the message says")
        }
    }

    // MARK: a 416 of a shorter, changed representation

    @Test func a416OfAChangedRepresentationIsNotTakenAsComplete() async throws {
        try await TransferTestSupport.withTemporaryDirectory { (folder: URL) async throws in
            let version = NIOLockedValueBox(1)
            let transport = FakeTransport { request in
                if version.withLockedValue({ $0 }) == 1 {   // v1: 1000 bytes of "o", dropped after 400
                    return FakeTransport.reply(status: 200, headers: [.eTag: "\"v1\"", .contentLength: "1000"],
                                               data: Data(repeating: 0x6F, count: 400), parts: 4, failure: NetworkError(.connectionLost, "dropped"))
                }
                // v2 is 400 bytes of "n"; this server ignores If-Range and answers the range with 416.
                if request.headers[.range] != nil {
                    return FakeTransport.reply(status: 416, headers: [.eTag: "\"v2\"", .contentRange: "bytes */400", .contentLength: "0"], data: Data())
                }
                return FakeTransport.reply(status: 200, headers: [.eTag: "\"v2\"", .contentLength: "400"], data: Data(repeating: 0x6E, count: 400))
            }
            let engine = NetworkEngine.fake(transport)
            let file = folder.appendingPathComponent("data.bin")
            #expect(await failure(of: engine.operation(path: "data").download(to: file, resumable: true))?.code == .connectionLost)
            version.withLockedValue { $0 = 2 }
            _ = try await engine.send(engine.operation(path: "data").download(to: file, resumable: true))
            #expect(try Data(contentsOf: file) == Data(repeating: 0x6E, count: 400), "v2, not 400 bytes of v1 passed off as complete")
            #expect(transport.requests.map { $0.headers[.range] } == [nil, "bytes=400-", nil])
        }
    }

    // MARK: another download holds the partial file

    /// A download that finds the partial file held by another (its `flock`) leaves that download's
    /// record alone, whether the record is one it could resume from (the server would answer 200: it used
    /// to remove the record to write from the start) or not (0: it used to start over at once): the record
    /// is what the other resumes from after a crash. It sends nothing (``TransferLockTests``).
    @Test(arguments: [200, 0])
    func aBusyDownloadLeavesTheOthersRecord(_ status: Int) async throws {
        try await TransferTestSupport.withTemporaryDirectory { (folder: URL) async throws in
            let file = folder.appendingPathComponent("big.iso")
            let store = ResumeRecordStore(destination: file)
            let body = Data(repeating: 0x41, count: 1000)
            let transport = FakeTransport { _ in
                FakeTransport.reply(status: 200, headers: [.eTag: "\"v1\"", .contentLength: "1000"], data: body)
            }
            let engine = NetworkEngine.fake(transport)
            let url = try #require(URL(string: "https://api.example.com/big"))
            // The other download: it holds the partial (a lock on its own descriptor) and wrote its record
            // (status 0: a record this download cannot use, so it starts over from its first request).
            try Data(repeating: 0x41, count: 500).write(to: store.partialURL)
            let holder = open(store.partialURL.path, O_RDWR)
            defer { close(holder) }
            #expect(flock(holder, LOCK_EX | LOCK_NB) == 0)
            let recorded = ResumeRecord(url: status == 0 ? "https://elsewhere.example/big" : url.absoluteString, entityTag: "\"v1\"",
                                        lastModified: nil, completeLength: 1000, bytesOnDisk: 500)
            try await store.write(recorded)
            let error = await failure(of: engine.operation(url: url).download(to: file, resumable: true))
            #expect(error?.code == .fileUnavailable && error?.message.contains("busy") == true, "\(String(describing: error))")
            #expect(transport.requests.isEmpty)
            #expect(await store.read() == recorded, "the other download's record is intact")
            #expect(try Data(contentsOf: store.partialURL).count == 500, "and its bytes")
            #expect(!FileManager.default.fileExists(atPath: file.path))
        }
    }
}
