import Foundation
import NIOConcurrencyHelpers
import Testing
@testable import Courier

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// End-to-end acceptance of the transfers issue (issue 10), as a user meets it: a download killed with
/// SIGKILL and resumed by the `courier` tool, a bandwidth limit that really stops reading the socket, a
/// full or read-only disk, upload sources that change under the upload, one body to two files and a
/// stream at once, and resuming against nginx. Serialized: the throttling test's timing and the large
/// download share a two-core machine badly.
///
/// Facets: `+Disks` (full and read-only destinations, several destinations), `+Uploads`, `+Nginx`.
@Suite("TransferAcceptance: transfers end to end", .serialized)
struct TransferAcceptanceTests {
    static func folder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("courier-accept-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    static func engine(port: Int, queue: NetworkQueue = NetworkQueue()) -> NetworkEngine {
        NetworkEngine(host: "127.0.0.1", port: port, isSecure: false, configuration: .init { $0.dataDirectory = nil }, queue: queue)
    }

    /// The size of the file at `url`, `nil` when there is none.
    static func size(of url: URL) -> Int? {
        var info = stat()
        guard stat(url.path, &info) == 0 else { return nil }
        return Int(info.st_size)
    }

    static func names(in folder: URL) -> Set<String> {
        Set((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? [])
    }

    // MARK: Resume after SIGKILL

    /// The size: the debug build downloads 200 MiB in a couple of seconds, kills included.
    static let killedDownloadSize = 200 << 20

    @Test func aDownloadKilledAtRandomPointsResumesFromExactlyTheBytesOnDisk() async throws {
        let content = GeneratedContent(size: Self.killedDownloadSize)
        let server = try await TransferOriginServer.start(content: content)
        defer { Task { try? await server.shutdown() } }
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("big.bin")
        let partial = folder.appendingPathComponent(".big.bin.courier-partial")
        let record = folder.appendingPathComponent(".big.bin.courier-partial.json")
        let arguments = ["download", server.fileURL, "-o", file.path, "--continue"]

        // Seven interruptions, one at random in each seventh of 5 %...75 % of the body, so each run gets
        // further: first a Ctrl-C (SIGINT), which keeps what arrived, then six SIGKILLs. Not later: on a
        // loaded machine a run overshot a threshold near the end by the whole rest between two polls and
        // was killed while putting the finished file in place (its record removed first, by design), so
        // the next run rightly started over.
        let seed = UInt64.random(in: 0...UInt64(UInt32.max))
        var random = SplitMix64(seed: seed)
        let interruptions = 7, slice = Self.killedDownloadSize * 70 / 100 / interruptions
        let thresholds = (0..<interruptions).map { Self.killedDownloadSize * 5 / 100 + $0 * slice + Int.random(in: 0..<slice, using: &random) }
        var bytesOnDisk: [Int] = []
        for (run, threshold) in thresholds.enumerated() {
            let child = try ChildProcess(CLITests.binary, arguments, stderr: folder.appendingPathComponent("stderr.log"))
            // Past its threshold, past what the last run left (a fast run may overshoot the next threshold
            // between two polls), and with its own request made.
            let previous = bytesOnDisk.last ?? 0
            let reached = await eventually(timeout: .seconds(60)) {
                let size = Self.size(of: partial) ?? 0
                return (size >= threshold && size > previous && server.requests.filter { $0.path == "/file" }.count > run) || !child.isRunning
            }
            try #require(reached && child.isRunning, "the download ended before its kill at \(threshold) (seed \(seed)): \(child.stderr)")
            if run == 0 {
                child.kill(SIGINT)
                #expect(await child.exit() == .exit(130), "Ctrl-C: \(child.stderr)")
                #expect(child.stderr.contains("run again with --continue"), "\(child.stderr)")
            } else {
                child.kill(SIGKILL)
                #expect(await child.exit() == .signal(SIGKILL))
            }
            bytesOnDisk.append(Self.size(of: partial) ?? -1)
            #expect(FileManager.default.fileExists(atPath: record.path), "the resume record survives the kill")
            #expect(!FileManager.default.fileExists(atPath: file.path), "nothing under the final name before the end")
        }
        let last = try ChildProcess(CLITests.binary, arguments, stderr: folder.appendingPathComponent("stderr.log"))
        #expect(await last.exit() == .exit(0), "\(last.stderr)")

        let requests = server.requests.filter { $0.path == "/file" }
        try #require(requests.count == interruptions + 1, "one request per run: \(requests)")
        #expect(requests[0].range == nil && requests[0].status == 200)
        for (run, offset) in bytesOnDisk.enumerated() {
            let request = requests[run + 1]
            #expect(offset > (run == 0 ? 0 : bytesOnDisk[run - 1]), "each run added bytes: \(bytesOnDisk)")
            #expect(request.range == "bytes=\(offset)-", "restart \(run + 1) asks from the \(offset) bytes on disk (seed \(seed))")
            #expect(request.ifRange == server.etag && request.status == 206)
        }
        #expect(try await content.mismatch(in: file) == nil)
        #expect(Self.names(in: folder) == ["big.bin", "stderr.log"], "no partial file or record left")
    }

    @Test func aCancelledDownloadKeepsItsBytesForLaterOrRemovesThemAsAsked() async throws {
        let content = GeneratedContent(size: 8 << 20)
        let server = try await TransferOriginServer.start(content: content)
        defer { Task { try? await server.shutdown() } }
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let engine = Self.engine(port: server.port)
        for keeping in [true, false] {
            let file = folder.appendingPathComponent(keeping ? "kept.bin" : "removed.bin")
            let op = engine.operation(path: "/file").download(to: file, resumable: true)
            op.maximumBytesPerSecond = 4 << 20
            let progress = ProgressLog()
            op.onDownloadProgress { progress.append($0) }
            engine.enqueue(op)
            #expect(await eventually { (progress.last?.completedBytes ?? 0) >= 1 << 20 })
            if keeping { op.cancelKeepingResumeData() } else { op.cancel() }
            #expect(await failure(of: op)?.code == .cancelled)
            let partial = DownloadWriter.partialURL(for: file)
            let store = ResumeRecordStore(destination: file)
            if keeping {
                // The flight's clean-up ends after the operation reported its cancellation: it is done when
                // the record counts the bytes on disk.
                var kept = 0
                for _ in 0..<500 where kept == 0 {
                    if let record = await store.read(), record.bytesOnDisk >= 1 << 20, record.bytesOnDisk == Self.size(of: partial) ?? -1 {
                        kept = Int(record.bytesOnDisk)
                    } else {
                        try await Task.sleep(for: .milliseconds(10))
                    }
                }
                try #require(kept > 0, "the bytes that arrived stay, with a record that counts them")
                _ = try await engine.send(engine.operation(path: "/file").download(to: file, resumable: true))
                #expect(server.requests.last?.range == "bytes=\(kept)-" && server.requests.last?.status == 206)
                #expect(try await content.mismatch(in: file) == nil)
            } else {
                #expect(await eventually(timeout: .seconds(5)) { !Self.names(in: folder).contains { $0.hasPrefix(".removed.bin") } },
                        "an explicit cancel removes the partial file and its record: \(Self.names(in: folder))")
                #expect(!FileManager.default.fileExists(atPath: file.path))
            }
        }
    }

    // MARK: Throttling

    @Test func aBandwidthLimitStopsReadingTheSocketSoTheServerCannotSend() async throws {
        let size = 10 << 20, limit = 1 << 20
        let content = GeneratedContent(size: size)
        // A fixed, small send buffer: what the kernel holds for a client that does not read is known.
        let server = try await TransferOriginServer.start(content: content, sendBufferSize: 128 * 1024)
        defer { Task { try? await server.shutdown() } }
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let engine = Self.engine(port: server.port)
        let file = folder.appendingPathComponent("limited.bin")
        let op = engine.operation(path: "/file").download(to: file)
        op.maximumBytesPerSecond = limit
        // How far the server got ahead of what the client had taken: small while the client reads only
        // what the limit allows; the whole body when it reads everything at once and delays the rest.
        let ahead = NIOLockedValueBox(0)
        op.onDownloadProgress { progress in
            let sent = server.statistics.bodyBytesSent
            ahead.withLockedValue { $0 = max($0, sent - Int(progress.completedBytes)) }
        }
        let started = ContinuousClock.now
        _ = try await engine.send(op)
        let elapsed = ContinuousClock.now - started
        #expect(elapsed >= .seconds(9) && elapsed <= .seconds(12), "10 MiB at 1 MiB/s: \(elapsed)")
        let statistics = server.statistics
        #expect(statistics.unwritableEpisodes > 0, "the server's send buffer filled and its writes waited")
        // Measured: about 2 MiB ahead (the kernel's buffers and the HTTP client's); reading everything at
        // once and delaying the rest would put the server the whole body ahead.
        let most = ahead.withLockedValue { $0 }
        #expect(most < size / 2, "the server got \(most) bytes ahead of what the client had taken")
        #expect(try await content.mismatch(in: file) == nil)
    }
}

/// The `courier` executable (or any) run as a child process that a test can kill.
final class ChildProcess: @unchecked Sendable {
    enum Status: Equatable {
        case exit(Int32)
        case signal(Int32)
    }

    private let process = Process()
    private let stderrURL: URL
    private let ended: AsyncStream<Void>

    init(_ executable: URL, _ arguments: [String], stderr: URL) throws {
        stderrURL = stderr
        _ = FileManager.default.createFile(atPath: stderr.path, contents: nil)
        process.executableURL = executable
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: stderr)
        let (stream, continuation) = AsyncStream<Void>.makeStream()
        ended = stream
        process.terminationHandler = { _ in continuation.finish() }
        try process.run()
    }

    var isRunning: Bool { process.isRunning }

    /// What the child wrote on its standard error.
    var stderr: String { (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? "" }

    func kill(_ signal: Int32) {
        #if canImport(Glibc)
        _ = Glibc.kill(process.processIdentifier, signal)
        #else
        _ = Darwin.kill(process.processIdentifier, signal)
        #endif
    }

    /// Waits for the child to end (without blocking a thread) and says how.
    func exit() async -> Status {
        for await _ in ended {}
        return process.terminationReason == .uncaughtSignal ? .signal(process.terminationStatus) : .exit(process.terminationStatus)
    }
}
