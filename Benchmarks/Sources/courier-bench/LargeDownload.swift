import Courier
import AsyncHTTPClient
import Foundation
import NIOCore

/// Scenario 4: one large body streamed to a file. Each contender runs in a child process of its own,
/// so its peak RSS (from `wait4`) is its own; every file is checked byte for byte.
enum LargeDownload {
    static func scenario(server: ServerProcess, bytes: Int, courierTestServerURL: String) -> Scenario {
        let url = "\(courierTestServerURL)/bytes/\(bytes)"
        let curl = which("curl")
        let directory = FileManager.default.temporaryDirectory
        return Scenario(
            name: "Large download",
            details: "\(bytes / (1 << 20)) MiB streamed to a file from \(url) (CourierTestServer in a separate process); each contender in its own child process; files verified byte for byte",
            metrics: [
                Metric(name: "MB/s", unit: "megabytes (10^6) per second", higherIsBetter: true),
                Metric(name: "peak RSS growth MiB", unit: "peak RSS downloading this body minus downloading 1 MiB, same program", higherIsBetter: false),
                Metric(name: "peak RSS MiB", unit: "child's peak resident set size", higherIsBetter: false),
            ],
            baseline: "curl -o",
            contenders: [
                Contender("curl -o", unavailable: curl == nil ? "curl is not installed" : nil) {
                    let file = directory.appendingPathComponent("cb-curl")
                    return try measure(file: file, base: courierTestServerURL, bytes: bytes) { url in
                        (curl ?? "curl", ["--silent", "--fail", "-o", file.path, url])
                    }
                },
                Contender("async-http-client streaming (raw)") {
                    let file = directory.appendingPathComponent("cb-ahc")
                    return try measure(file: file, base: courierTestServerURL, bytes: bytes) { url in
                        (CommandLine.arguments[0], ["download-ahc", url, file.path])
                    }
                },
                Contender("Courier download(to:)") {
                    let file = directory.appendingPathComponent("cb-courier")
                    return try measure(file: file, base: courierTestServerURL, bytes: bytes) { url in
                        (CommandLine.arguments[0], ["download-courier", url, file.path])
                    }
                },
            ],
            notes: ["targets: peak RSS growth under 32 MiB for 1 GiB; throughput at least 0.8 of curl"])
    }

    /// Runs one download child for `bytes`, and once for 1 MiB: the difference in peak RSS is what
    /// grows with the size of the download.
    static func measure(
        file: URL, base: String, bytes: Int, command: (String) -> (String, [String])
    ) throws -> Figures {
        let small = 1 << 20
        let (smallExecutable, smallArguments) = command("\(base)/bytes/\(small)")
        let reference = try ChildRun.run(smallExecutable, smallArguments)
        try verify(file, bytes: small)
        let (executable, arguments) = command("\(base)/bytes/\(bytes)")
        let run = try ChildRun.run(executable, arguments)
        defer { try? FileManager.default.removeItem(at: file) }
        guard run.status == 0, reference.status == 0 else { throw BenchError("\(executable) exited with \(run.status)") }
        try verify(file, bytes: bytes)
        return [
            "MB/s": Double(bytes) / run.wallSeconds / 1e6,
            "peak RSS growth MiB": Double(run.maxRSSBytes - reference.maxRSSBytes) / Double(1 << 20),
            "peak RSS MiB": Double(run.maxRSSBytes) / Double(1 << 20),
        ]
    }

    /// The file must hold exactly the server's pattern: byte i is i % 251.
    static func verify(_ file: URL, bytes: Int) throws {
        guard let handle = FileHandle(forReadingAtPath: file.path) else { throw BenchError("no file at \(file.path)") }
        defer { try? handle.close() }
        var offset = 0
        while let chunk = try handle.read(upToCount: 4 << 20), !chunk.isEmpty {
            for (index, byte) in chunk.enumerated() where byte != UInt8((offset + index) % 251) {
                throw BenchError("\(file.lastPathComponent) differs at byte \(offset + index)")
            }
            offset += chunk.count
        }
        guard offset == bytes else { throw BenchError("\(file.lastPathComponent) has \(offset) bytes, not \(bytes)") }
    }

    /// The child side of the raw async-http-client contender: stream the body straight into a file.
    static func downloadWithAHC(url: String, to path: String) async throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { throw BenchError("cannot open \(path)") }
        defer { close(fd) }
        let response = try await BenchClients.ahc.execute(HTTPClientRequest(url: url), deadline: .distantFuture)
        guard response.status == .ok else { throw BenchError("status \(response.status)") }
        for try await part in response.body {
            try part.withUnsafeReadableBytes { buffer in
                var written = 0
                while written < buffer.count {
                    let result = write(fd, buffer.baseAddress! + written, buffer.count - written)
                    guard result > 0 else { throw BenchError("write failed") }
                    written += result
                }
            }
        }
    }

    /// The child side of the Courier contender: `download(to:)` on a queue of its own.
    static func downloadWithCourier(url: String, to path: String) async throws {
        let engine = NetworkEngine(baseURL: url, configuration: .init { $0.dataDirectory = nil }, queue: NetworkQueue())
        let response = try await engine.send(engine.operation(url: url).download(to: URL(fileURLWithPath: path)))
        guard response.statusCode == 200, response.fileURLs.first?.path == path else { throw BenchError("status \(response.statusCode)") }
    }
}
