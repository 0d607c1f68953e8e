import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import Testing
@testable import Courier

#if canImport(Glibc)
import Glibc
#endif

/// A resumable download holds its partial file's lock from before it measures it to its end (issue 23):
/// another process's download of the same file can neither finish, rewrite nor clean up under it, and a
/// download that finds the file held fails before it sends anything. "Another process" is played here by
/// code that does what another `courier download --continue` does to the files, under the same `flock`
/// (one taken on another descriptor conflicts within a process too).
@Suite("Resumable downloads hold their partial file")
struct TransferLockTests {
    /// Recognisable bytes: "ABC...Z" repeated.
    static let body = Data((0..<1000).map { UInt8(0x41 + $0 % 26) })
    static let url = URL(string: "https://api.example.com/big")!

    /// The first half of ``body`` under a strong validator, then a lost connection: a resumable download
    /// keeps those 500 bytes and its record.
    static func halfThenDropped() -> TransportResponse {
        FakeTransport.reply(status: 200, headers: [.eTag: "\"v1\"", .contentLength: "1000"], data: Data(body.prefix(500)), parts: 2,
                            failure: NetworkError(.connectionLost, "dropped"))
    }

    /// Bytes on disk and a record of "v1": what a paused or killed `--continue` leaves.
    static func plantPartial(_ store: ResumeRecordStore, bytes: Int) async throws {
        try body.prefix(bytes).write(to: store.partialURL)
        try await store.write(ResumeRecord(url: url.absoluteString, entityTag: "\"v1\"", lastModified: nil, completeLength: 1000, bytesOnDisk: Int64(bytes)))
    }

    /// Runs `work` on the partial file as another process's download would: only once it holds the
    /// partial's lock. `false` when it is refused ("busy").
    @discardableResult
    static func asAnotherDownload(_ store: ResumeRecordStore, _ work: (Int32) async throws -> Void) async rethrows -> Bool {
        let descriptor = open(store.partialURL.path, O_RDWR)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else { return false }
        try await work(descriptor)
        return true
    }

    /// Another download finishes the file: appends the rest, renames the partial into place, removes the record.
    static func anotherDownloadFinishes(_ store: ResumeRecordStore, file: URL) async -> Bool {
        await asAnotherDownload(store) { descriptor in
            let onDisk = Int(lseek(descriptor, 0, SEEK_END))
            let rest = body.suffix(from: onDisk)
            _ = rest.withUnsafeBytes { write(descriptor, $0.baseAddress!, rest.count) }
            #expect(rename(store.partialURL.path, file.path) == 0)
            unlink(store.recordURL.path)
        }
    }

    /// Whether some download holds the partial file beside `store`'s destination.
    static func isHeld(_ store: ResumeRecordStore) -> Bool {
        let descriptor = open(store.partialURL.path, O_RDONLY)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        return flock(descriptor, LOCK_EX | LOCK_NB) != 0
    }

    // MARK: another download cannot finish under this one

    @Test(arguments: [416, 206])
    func anotherDownloadCannotFinishWhileThisOneHoldsThePartial(_ status: Int) async throws {
        try await TransferTestSupport.withTemporaryDirectory { (folder: URL) async throws in
            let file = folder.appendingPathComponent("big.iso")
            let store = ResumeRecordStore(destination: file)
            // 416: killed after the last byte, before the rename; 206: half of it.
            let onDisk = status == 416 ? 1000 : 500
            try await Self.plantPartial(store, bytes: onDisk)
            let otherFinished = NIOLockedValueBox(false)
            let transport = FakeTransport { request in
                #expect(request.headers[.range] == "bytes=\(onDisk)-")
                // While this request is in flight, another download of the file tries to finish it.
                let finished = await Self.anotherDownloadFinishes(store, file: file)
                otherFinished.withLockedValue { $0 = finished }
                if status == 416 {
                    return FakeTransport.reply(status: 416, headers: [.eTag: "\"v1\"", .contentRange: "bytes */1000", .contentLength: "0"], data: Data())
                }
                return FakeTransport.reply(status: 206, headers: [.eTag: "\"v1\"", .contentRange: "bytes 500-999/1000", .contentLength: "500"],
                                           data: Data(Self.body.suffix(500)))
            }
            let engine = NetworkEngine.fake(transport)
            _ = await failure(of: engine.operation(url: Self.url).download(to: file, resumable: true))
            #expect(!otherFinished.withLockedValue { $0 }, "the other download was refused: this one held the partial")
            #expect(try Data(contentsOf: file) == Self.body, "the file whole, no zeros where a vanished partial was")
            #expect(!FileManager.default.fileExists(atPath: store.partialURL.path))
            #expect(!FileManager.default.fileExists(atPath: store.recordURL.path))
        }
    }

    @Test func anotherDownloadCannotRewriteThePartialThisOneContinues() async throws {
        try await TransferTestSupport.withTemporaryDirectory { (folder: URL) async throws in
            let file = folder.appendingPathComponent("big.iso")
            let store = ResumeRecordStore(destination: file)
            try await Self.plantPartial(store, bytes: 500)
            let v2 = Data(repeating: 0x6E, count: 1000)
            let transport = FakeTransport { request in
                // Another download got a 200 of a new version, wrote 800 bytes of it and its record, and paused.
                try await Self.asAnotherDownload(store) { descriptor in
                    _ = ftruncate(descriptor, 0)
                    _ = v2.prefix(800).withUnsafeBytes { pwrite(descriptor, $0.baseAddress!, 800, 0) }
                    try await store.write(ResumeRecord(url: Self.url.absoluteString, entityTag: "\"v2\"", lastModified: nil,
                                                       completeLength: 1000, bytesOnDisk: 800))
                }
                // This server still answers this download's `If-Range: "v1"` with v1's rest.
                return FakeTransport.reply(status: 206, headers: [.eTag: "\"v1\"", .contentRange: "bytes 500-999/1000", .contentLength: "500"],
                                           data: Data(Self.body.suffix(500)))
            }
            let engine = NetworkEngine.fake(transport)
            _ = await failure(of: engine.operation(url: Self.url).download(to: file, resumable: true))
            let onDisk = (try? Data(contentsOf: file)) ?? Data()
            #expect(!onDisk.contains(0x6E), "no bytes of v2 spliced with v1's")
            #expect(onDisk == Self.body)
        }
    }

    // MARK: a busy download does nothing

    @Test func aBusyDownloadSendsNothingAndLeavesTheOthersRecordTemporary() async throws {
        try await TransferTestSupport.withTemporaryDirectory { (folder: URL) async throws in
            let file = folder.appendingPathComponent("big.iso")
            let store = ResumeRecordStore(destination: file)
            try await Self.plantPartial(store, bytes: 500)
            // The other download holds the partial and is writing its new record: the temporary exists,
            // not yet renamed over the record.
            let holder = open(store.partialURL.path, O_RDWR)
            defer { close(holder) }
            #expect(flock(holder, LOCK_EX | LOCK_NB) == 0)
            let temporary = PartialFileNames.recordTemporaryURL(for: file, random: "abcdefghijkl").path
            let newRecord = ResumeRecord(url: Self.url.absoluteString, entityTag: "\"v1\"", lastModified: nil, completeLength: 1000, bytesOnDisk: 900)
            #expect(FileManager.default.createFile(atPath: temporary, contents: try JSONEncoder().encode(newRecord), attributes: [.posixPermissions: 0o600]))
            let transport = FakeTransport { _ in FakeTransport.reply(status: 200, headers: [.eTag: "\"v1\"", .contentLength: "1000"], data: Self.body) }
            let engine = NetworkEngine.fake(transport)
            let error = await failure(of: engine.operation(url: Self.url).download(to: file, resumable: true))
            #expect(error?.code == .fileUnavailable && error?.message.contains("busy") == true, "\(String(describing: error))")
            #expect(transport.requests.isEmpty, "refused before any request went out")
            #expect(FileManager.default.fileExists(atPath: temporary), "the other download's record temporary is intact")
            #expect(rename(temporary, store.recordURL.path) == 0)   // the other download's next step
            #expect(await store.read() == newRecord)
            #expect(try Data(contentsOf: store.partialURL) == Self.body.prefix(500))
            #expect(!FileManager.default.fileExists(atPath: file.path))
        }
    }

    // MARK: the lock lasts the whole download

    /// Held at the first request already, still held at a further exchange after a short 206, let go at the end.
    @Test func thePartialIsHeldFromTheFirstRequestToTheEnd() async throws {
        try await TransferTestSupport.withTemporaryDirectory { (folder: URL) async throws in
            let file = folder.appendingPathComponent("big.iso")
            let store = ResumeRecordStore(destination: file)
            try await Self.plantPartial(store, bytes: 200)
            let heldAtEachRequest = NIOLockedValueBox<[Bool]>([])
            let transport = FakeTransport { request in
                heldAtEachRequest.withLockedValue { $0.append(Self.isHeld(store)) }
                // A server that sends at most 400 bytes of a range (RFC 9110 §14.1.2 allows it).
                let first = Int(request.headers[.range]?.dropFirst("bytes=".count).dropLast() ?? "0") ?? 0
                let last = min(first + 399, 999)
                return FakeTransport.reply(status: 206, headers: [.eTag: "\"v1\"", .contentRange: "bytes \(first)-\(last)/1000"],
                                           data: Self.body.subdata(in: first..<(last + 1)))
            }
            let engine = NetworkEngine.fake(transport)
            _ = try await engine.send(engine.operation(url: Self.url).download(to: file, resumable: true))
            #expect(transport.requests.map { $0.headers[.range] } == ["bytes=200-", "bytes=600-"])
            #expect(heldAtEachRequest.withLockedValue { $0 } == [true, true])
            #expect(try Data(contentsOf: file) == Self.body)
            #expect(!FileManager.default.fileExists(atPath: store.recordURL.path))
        }
    }

    /// A download that ends without a body to keep lets go of the partial it created (and removes it),
    /// and keeps one that holds bytes, with its record.
    @Test(arguments: [0, 500])
    func anAnswerWithoutBodyLeavesThePartialAsItWas(_ bytes: Int) async throws {
        try await TransferTestSupport.withTemporaryDirectory { (folder: URL) async throws in
            let file = folder.appendingPathComponent("big.iso")
            let store = ResumeRecordStore(destination: file)
            if bytes > 0 { try await Self.plantPartial(store, bytes: bytes) }
            let before = await store.read()
            let transport = FakeTransport { _ in FakeTransport.reply(status: 404, headers: [.contentLength: "0"], data: Data()) }
            let engine = NetworkEngine.fake(transport)
            #expect(await failure(of: engine.operation(url: Self.url).download(to: file, resumable: true)) != nil)
            #expect(!Self.isHeld(store))
            if bytes == 0 {
                #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty, "no empty partial left behind")
            } else {
                #expect(try Data(contentsOf: store.partialURL) == Self.body.prefix(bytes))
                #expect(await store.read() == before)
            }
        }
    }

    // MARK: limits

    @Test func a416ObeysMaximumDownloadSize() async throws {
        try await TransferTestSupport.withTemporaryDirectory { (folder: URL) async throws in
            let file = folder.appendingPathComponent("big.iso")
            let store = ResumeRecordStore(destination: file)
            try await Self.plantPartial(store, bytes: 1000)
            let transport = FakeTransport { _ in
                FakeTransport.reply(status: 416, headers: [.eTag: "\"v1\"", .contentRange: "bytes */1000", .contentLength: "0"], data: Data())
            }
            let engine = NetworkEngine.fake(transport) { $0.maximumDownloadSize = 500 }
            let error = await failure(of: engine.operation(url: Self.url).download(to: file, resumable: true))
            #expect(error?.code == .bodyTooLarge, "a 1000-byte file under maximumDownloadSize 500: \(String(describing: error))")
            #expect(!FileManager.default.fileExists(atPath: file.path))
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty, "nothing kept, as for a 200 or 206 too large")
        }
    }

    // MARK: an explicit cancel while a retry waits

    @Test func cancelWhileARetryWaitsDiscardsTheResumeData() async throws {
        try await TransferTestSupport.withTemporaryDirectory { (folder: URL) async throws in
            let file = folder.appendingPathComponent("big.iso")
            let store = ResumeRecordStore(destination: file)
            let transport = FakeTransport { _ in
                Self.halfThenDropped()
            }
            let engine = NetworkEngine.fake(transport) {
                // A backoff long enough that a loaded machine cannot reach the retry before the check below.
                $0.interceptors = [RetryPolicy(maximumAttempts: 3, maximumTotalTime: .seconds(900), backoff: RetryBackoff(base: .seconds(300), maximum: .seconds(300)))]
            }
            let operation = engine.operation(url: Self.url).download(to: file, resumable: true)
            let outcome = Task { await failure(of: operation) }
            // The first attempt kept its bytes and record; the retry waits out its backoff, holding nothing.
            #expect(await eventually {
                FileManager.default.fileExists(atPath: store.recordURL.path) && !Self.isHeld(store) && transport.requests.count == 1
            }, "record \(FileManager.default.fileExists(atPath: store.recordURL.path)), held \(Self.isHeld(store)), requests \(transport.requests.count), \(operation.state)")
            operation.cancel()
            #expect(await outcome.value?.code == .cancelled)
            #expect(await eventually {
                !FileManager.default.fileExists(atPath: store.partialURL.path) && !FileManager.default.fileExists(atPath: store.recordURL.path)
            }, "cancel() gives up the resume data: \((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? [])")
            #expect(transport.requests.count == 1)
        }
    }

    /// The window the test above leaves to chance: the attempt has kept its partial file (a lost
    /// connection) and let go of it, and `cancel()` comes before the queue hears of the failure. No flight
    /// holds the files then; the cancel removes them itself.
    @Test func cancelRightAfterAnAttemptKeptItsPartialDiscardsIt() async throws {
        try await TransferTestSupport.withTemporaryDirectory { (folder: URL) async throws in
            let file = folder.appendingPathComponent("big.iso")
            let store = ResumeRecordStore(destination: file)
            let transport = FakeTransport { _ in
                Self.halfThenDropped()
            }
            let target = Recorder<NetworkOperation>()
            // Logged by the flight's task right after its attempt returned, before the retry machinery runs.
            let recorder = LogRecorder { record in
                if record.message == "courier request failed" { target.all.first?.cancel() }
            }
            let engine = NetworkEngine.fake(transport) {
                $0.logger = recorder.logger(level: .debug)
                $0.interceptors = [RetryPolicy(maximumAttempts: 3, backoff: RetryBackoff(base: .zero, maximum: .zero))]
            }
            let operation = engine.operation(url: Self.url).download(to: file, resumable: true)
            target.append(operation)
            #expect(await failure(of: operation)?.code == .cancelled)
            #expect(await eventually {
                !FileManager.default.fileExists(atPath: store.partialURL.path) && !FileManager.default.fileExists(atPath: store.recordURL.path)
            }, "cancel() gives up the resume data: \((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? [])")
            #expect(transport.requests.count == 1, "the retry never starts")
        }
    }

    /// A retry that waits for a slot (the queue's only one is busy) holds no files and has no task: a
    /// cancel meanwhile removes the resume data its first attempt kept.
    @Test func cancelWhileARetryWaitsForASlotDiscardsTheResumeData() async throws {
        try await TransferTestSupport.withTemporaryDirectory { (folder: URL) async throws in
            let file = folder.appendingPathComponent("big.iso")
            let store = ResumeRecordStore(destination: file)
            let busy = NIOLockedValueBox(true)
            let transport = FakeTransport { request in
                if request.url.path.hasSuffix("/busy") {
                    while busy.withLockedValue({ $0 }) { try await Task.sleep(for: .milliseconds(5)) }
                    return FakeTransport.reply()
                }
                return Self.halfThenDropped()
            }
            let deciding = NIOLockedValueBox(false)
            let decide = NIOLockedValueBox(false)
            let gate = GatedRetry(deciding: deciding, decide: decide)
            let engine = NetworkEngine.fake(transport, queue: NetworkQueue(maximumConcurrentOperations: 1)) { $0.interceptors = [gate] }
            let operation = engine.operation(url: Self.url).download(to: file, resumable: true)
            let outcome = Task { await failure(of: operation) }
            #expect(await eventually { deciding.withLockedValue { $0 } })
            // The download gave up its slot while its interceptors decide: another operation takes it.
            let other = engine.operation(path: "/busy")
            let otherOutcome = Task { await failure(of: other) }
            #expect(await eventually { transport.requests.count == 2 })
            decide.withLockedValue { $0 = true }
            #expect(await eventually { operation.state == .executing && gate.decided })
            try await Task.sleep(for: .milliseconds(50))   // the flight is back in line, behind the busy one
            #expect(FileManager.default.fileExists(atPath: store.recordURL.path))
            operation.cancel()
            #expect(await outcome.value?.code == .cancelled)
            #expect(await eventually {
                !FileManager.default.fileExists(atPath: store.partialURL.path) && !FileManager.default.fileExists(atPath: store.recordURL.path)
            }, "cancel() gives up the resume data: \((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? [])")
            busy.withLockedValue { $0 = false }
            #expect(await otherOutcome.value == nil)
            #expect(transport.requests.count == 2, "the download's retry never started")
        }
    }

    // MARK: a whole body that cannot be put in place

    @Test func aWholeBodyThatCannotBePutInPlaceIsKeptAndFinishedNextTime() async throws {
        try await TransferTestSupport.withTemporaryDirectory { (folder: URL) async throws in
            let file = folder.appendingPathComponent("big.iso")
            let store = ResumeRecordStore(destination: file)
            try FileManager.default.createDirectory(at: file, withIntermediateDirectories: false)   // in the way
            try Data("x".utf8).write(to: file.appendingPathComponent("inside"))
            let transport = FakeTransport { request in
                if request.headers[.range] == "bytes=1000-" {
                    return FakeTransport.reply(status: 416, headers: [.eTag: "\"v1\"", .contentRange: "bytes */1000"], data: Data())
                }
                return FakeTransport.reply(status: 200, headers: [.eTag: "\"v1\"", .contentLength: "1000"], data: Self.body, parts: 4)
            }
            let engine = NetworkEngine.fake(transport)
            let error = await failure(of: engine.operation(url: Self.url).download(to: file, resumable: true))
            #expect(error?.code == .fileUnavailable)
            #expect(try Data(contentsOf: store.partialURL) == Self.body, "the whole body is kept")
            #expect(await store.read()?.bytesOnDisk == 1000)
            #expect(!Self.isHeld(store))
            try FileManager.default.removeItem(at: file)
            _ = try await engine.send(engine.operation(url: Self.url).download(to: file, resumable: true))
            #expect(try Data(contentsOf: file) == Self.body)
            #expect(transport.requests.map { $0.headers[.range] } == [nil, "bytes=1000-"], "finished without the bytes again")
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["big.iso"])
        }
    }
}

/// Retries once, immediately, when the test says so (`decide`), and tells the test it is deciding.
private struct GatedRetry: RequestInterceptor {
    let deciding: NIOLockedValueBox<Bool>
    let decide: NIOLockedValueBox<Bool>
    private let done = NIOLockedValueBox(false)

    init(deciding: NIOLockedValueBox<Bool>, decide: NIOLockedValueBox<Bool>) {
        self.deciding = deciding
        self.decide = decide
    }

    var decided: Bool { done.withLockedValue { $0 } }

    func retry(_ request: HTTPRequest, after failure: NetworkError, attempt: Int) async -> RetryDecision {
        guard attempt == 1 else { return .doNotRetry }
        deciding.withLockedValue { $0 = true }
        while !decide.withLockedValue({ $0 }) { try? await Task.sleep(for: .milliseconds(5)) }
        done.withLockedValue { $0 = true }
        return .retry(after: .zero)
    }
}
