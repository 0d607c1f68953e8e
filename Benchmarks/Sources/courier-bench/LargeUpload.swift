import Courier
import Foundation

/// Scenario 5: one large file sent as a multipart form. Each contender runs in a child process of its
/// own (peak RSS sampled from `/proc`); the server counts the body's bytes and each contender checks
/// that they match what it sent.
enum LargeUpload {
    static func scenario(bytes: Int, courierTestServerURL: String) -> Scenario {
        let url = "\(courierTestServerURL)/echo"
        let curl = which("curl")
        let directory = FileManager.default.temporaryDirectory
        return Scenario(
            name: "Large upload",
            details: "a \(bytes / (1 << 20)) MiB file POSTed as multipart/form-data to \(url) (CourierTestServer in a separate process, which counts the bytes); each contender in its own child process",
            metrics: [
                Metric(name: "MB/s", unit: "file megabytes (10^6) per second", higherIsBetter: true),
                Metric(name: "peak RSS growth MiB", unit: "peak RSS uploading this file minus uploading 1 MiB, same program", higherIsBetter: false),
                Metric(name: "peak RSS MiB", unit: "child's peak resident set size", higherIsBetter: false),
            ],
            baseline: "curl -F",
            contenders: [
                Contender("curl -F", unavailable: curl == nil ? "curl is not installed" : nil) {
                    let answer = directory.appendingPathComponent("cb-upload-curl.json")
                    defer { try? FileManager.default.removeItem(at: answer) }
                    return try measure(directory: directory, bytes: bytes) { file in
                        (curl ?? "curl", ["--silent", "--fail", "-o", answer.path, "-F", "file=@\(file.path)", url])
                    } verify: { size in
                        try checkReceived(try Data(contentsOf: answer), fileSize: size)
                    }
                },
                Contender("Courier .multipart") {
                    try measure(directory: directory, bytes: bytes) { file in
                        (CommandLine.arguments[0], ["upload-courier", url, file.path])
                    } verify: { _ in }   // the child checks the server's count itself and fails if it differs
                },
            ],
            notes: ["targets: peak RSS growth under 32 MiB for 1 GiB; throughput at least 0.9 of curl"])
    }

    /// Makes a file of `bytes`, runs one upload child for it and one for a 1 MiB file: the difference
    /// in peak RSS is what grows with the size of the upload.
    static func measure(
        directory: URL, bytes: Int, command: (URL) -> (String, [String]), verify: (Int) throws -> Void
    ) throws -> Figures {
        let small = 1 << 20
        let smallFile = directory.appendingPathComponent("cb-upload-small")
        let file = directory.appendingPathComponent("cb-upload-\(bytes)")
        try makeFile(smallFile, bytes: small)
        try makeFile(file, bytes: bytes)
        defer {
            try? FileManager.default.removeItem(at: smallFile)
            try? FileManager.default.removeItem(at: file)   // a gigabyte is not left behind in the temporary folder
        }
        let (smallExecutable, smallArguments) = command(smallFile)
        let reference = try ChildRun.run(smallExecutable, smallArguments)
        guard reference.status == 0 else { throw BenchError("\(smallExecutable) exited with \(reference.status)") }
        try verify(small)
        let (executable, arguments) = command(file)
        let run = try ChildRun.run(executable, arguments)
        guard run.status == 0 else { throw BenchError("\(executable) exited with \(run.status)") }
        try verify(bytes)
        return [
            "MB/s": Double(bytes) / run.wallSeconds / 1e6,
            "peak RSS growth MiB": Double(run.maxRSSBytes - reference.maxRSSBytes) / Double(1 << 20),
            "peak RSS MiB": Double(run.maxRSSBytes) / Double(1 << 20),
        ]
    }

    /// Writes the server's pattern (byte i is i % 251) to `file`, unless a file of that size is there.
    static func makeFile(_ file: URL, bytes: Int) throws {
        if let size = try? file.resourceValues(forKeys: [.fileSizeKey]).fileSize, size == bytes { return }
        guard FileManager.default.createFile(atPath: file.path, contents: nil) else { throw BenchError("cannot create \(file.path)") }
        let handle = try FileHandle(forWritingTo: file)
        defer { try? handle.close() }
        let block = 251 * 4096
        let pattern = Data((0..<block).map { UInt8($0 % 251) })
        var written = 0
        while written < bytes {
            let count = min(block, bytes - written)
            try handle.write(contentsOf: pattern.prefix(count))
            written += count
        }
    }

    /// The server's answer: the body itself for a small one (its length is the count), or
    /// `{"received": N}` past 8 MiB. The multipart body is the file plus a few hundred bytes of framing.
    static func checkReceived(_ answer: Data, fileSize: Int) throws {
        let received: Int
        if let object = try? JSONSerialization.jsonObject(with: answer) as? [String: Any], let count = object["received"] as? Int {
            received = count
        } else {
            received = answer.count
        }
        guard received > fileSize, received < fileSize + 4096 else {
            throw BenchError("the server received \(received) bytes for a file of \(fileSize)")
        }
    }

    /// The child side of the Courier contender: a multipart form with the file, on a queue of its own.
    static func uploadWithCourier(url: String, file: String) async throws {
        let engine = NetworkEngine(baseURL: url, configuration: .init { $0.dataDirectory = nil }, queue: NetworkQueue())
        var form = MultipartForm()
        form.addFile(URL(fileURLWithPath: file), name: "file")
        let response = try await engine.send(engine.operation(url: url, method: .post, body: .multipart(form)))
        let size = try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int ?? 0
        try checkReceived(response.body, fileSize: size)
    }
}
