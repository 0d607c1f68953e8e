import Courier
import CourierTestServer
import Foundation
import Testing
@testable import courier

/// Issue 9 items 14, 15 and 16: what the CLI writes, where, and what it says about frozen credentials.
extension CLITests {
    /// The body the server sends for `path`, as the library receives it.
    func serverBody(_ server: TestServer, _ path: String) async throws -> Data {
        let engine = NetworkEngine(baseURL: server.url("/"), configuration: .init {
            $0.dataDirectory = nil
            $0.acceptableStatusCodes = Set(100..<600)
        }, queue: NetworkQueue())
        return try await engine.send(engine.operation(url: server.url(path))).body
    }

    // MARK: Closed pipes (item 14)

    @Test func aReaderThatGoesAwayEndsTheProgramQuietlyWithStatus23() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        for arguments in [["get", server.url("/bytes/3000000")], ["get", "-i", "--pretty", server.url("/bytes/3000000")]] {
            let process = Process()
            process.executableURL = Self.binary
            process.arguments = arguments
            let out = Pipe(), err = Pipe()
            process.standardOutput = out
            process.standardError = err
            try process.run()
            // `| head -c 1`: one byte read, then the reader is gone.
            let first = try await offThePool { try out.fileHandleForReading.read(upToCount: 1) }
            try out.fileHandleForReading.close()
            let stderr = String(decoding: try await err.fileHandleForReading.readAll(), as: UTF8.self)
            await process.exited()
            #expect(first?.count == 1)
            #expect(process.terminationReason == .exit, "\(arguments): killed by a signal, not an exit")
            #expect(process.terminationStatus == 23, "\(arguments): \(stderr)")
            #expect(stderr.isEmpty, "\(arguments): no backtrace, no message: \(stderr)")
        }
    }

    // MARK: Bodies into pipes and terminals (item 15)

    @Test func aPipeGetsTheBodyByteForByte() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        for path in ["/json", "/latin1", "/xml", "/bytes/5000", "/status/503"] {
            let run = try await courierBytes("get", server.url(path))
            #expect(run.stdout == (try await serverBody(server, path)), "\(path)")
            #expect(run.stderr.isEmpty, "\(path): \(run.stderr)")
        }
        let raw = try await courierBytes("get", "--raw", server.url("/json"))
        #expect(raw.stdout == Data(#"{"name":"Courier","version":1,"tags":["a","b"],"nested":{"ok":true}}"#.utf8))
    }

    @Test func prettyFormatsIntoAPipeToo() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let pretty = try await courier("get", "--pretty", server.url("/json"))
        #expect(pretty.status == 0)
        #expect(pretty.stdout.hasPrefix("{\n  \"name\" : \"Courier\",\n"), "\(pretty.stdout)")
        #expect(pretty.stdout.hasSuffix("}\n"))
        let text = try await courier("get", "--pretty", server.url("/status/503"))
        #expect(text.stdout == "status 503\n", "text ends with a newline")
    }

    @Test func outputWritesTheBodyToAFile() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("courier-cli-body-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        let run = try await courier("get", "-o", file.path, server.url("/bytes/5000"))
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.isEmpty)
        #expect(try Data(contentsOf: file) == (try await serverBody(server, "/bytes/5000")))
    }

    @Test func aTerminalGetsFormattedTextAndNoBinary() async throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/script") else { return }
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let json = try await inTerminal("get", server.url("/json"))
        #expect(json.contains("{\n  \"name\" : \"Courier\","), "\(json)")
        let binary = try await inTerminal("get", server.url("/bytes/12345"))
        #expect(binary == "[binary body: 12,345 bytes, application/octet-stream — use -o FILE or pipe it]\n", "\(binary)")
        let forcedRaw = try await inTerminal("get", "--raw", server.url("/bytes/12345"))
        #expect(forcedRaw == binary, "binary never goes to a terminal")
    }

    @Test func theRenderingFollowsTheTerminalAndTheFlags() {
        typealias P = ResponsePrinter
        #expect(P.rendering(format: .automatic, toTerminal: false, isText: true) == .raw)
        #expect(P.rendering(format: .automatic, toTerminal: false, isText: false) == .raw)
        #expect(P.rendering(format: .automatic, toTerminal: true, isText: true) == .formatted)
        #expect(P.rendering(format: .automatic, toTerminal: true, isText: false) == .binaryNotice)
        #expect(P.rendering(format: .pretty, toTerminal: false, isText: true) == .formatted)
        #expect(P.rendering(format: .pretty, toTerminal: true, isText: false) == .binaryNotice)
        #expect(P.rendering(format: .raw, toTerminal: true, isText: true) == .raw)
        #expect(P.rendering(format: .raw, toTerminal: true, isText: false) == .binaryNotice)
        #expect(P.rendering(format: .raw, toTerminal: false, isText: false) == .raw)
    }

    @Test func textIsDecodableTextLikeAndFreeOfNULs() {
        typealias P = ResponsePrinter
        let hello = Data("hello".utf8)
        #expect(P.isText(hello, mediaType: "text/plain", decodes: true))
        #expect(P.isText(hello, mediaType: "application/problem+json", decodes: true))
        #expect(P.isText(hello, mediaType: "image/svg+xml", decodes: true))
        #expect(P.isText(hello, mediaType: nil, decodes: true))
        #expect(P.isText(Data(), mediaType: "image/png", decodes: true), "nothing to garble")
        #expect(!P.isText(hello, mediaType: "image/png", decodes: true))
        #expect(!P.isText(hello, mediaType: "application/octet-stream", decodes: true))
        #expect(!P.isText(hello, mediaType: "text/plain", decodes: false))
        #expect(!P.isText(Data([0x61, 0x00, 0x62]), mediaType: "text/plain", decodes: true))
        #expect(P.binaryNotice(byteCount: 12_345, mediaType: "image/png") == "[binary body: 12,345 bytes, image/png — use -o FILE or pipe it]")
        #expect(P.binaryNotice(byteCount: 1_000_000, mediaType: nil) == "[binary body: 1,000,000 bytes — use -o FILE or pipe it]")
        #expect(P.binaryNotice(byteCount: 999, mediaType: nil) == "[binary body: 999 bytes — use -o FILE or pipe it]")
    }

    // MARK: Credentials of frozen requests (item 16)

    @Test func aFrozenRequestsCredentialsAreNamedAndGivenBackOnFlush() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-cli-flush-h-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let port = try await TestServer.vacantPort()
        let url = "http://127.0.0.1:\(port)/anything/notes"
        let frozen = try await courier(
            "post", "--freezable", url, "-d", "n=1", "-H", "Authorization: Bearer cli-flush-7", "-H", "X-Client: cli", "--data-dir", directory)
        #expect(frozen.status == 0, "\(frozen.stderr)")
        #expect(frozen.stdout.hasPrefix("frozen "))
        #expect(frozen.stderr.contains("does not keep Authorization"), "\(frozen.stderr)")
        #expect(frozen.stderr.contains("courier outbox flush -H 'Authorization: ...'"), "\(frozen.stderr)")
        #expect(!frozen.stderr.contains("X-Client"), "an ordinary header is kept")
        #expect(frozen.stderr.split(separator: "\n").count == 1)
        #expect(secretsFound(["cli-flush-7"], under: URL(fileURLWithPath: directory)) == [])
        let quiet = try await courier("post", "--freezable", url, "-d", "n=2", "--data-dir", directory)
        #expect(quiet.stderr.isEmpty, "nothing lost, nothing said: \(quiet.stderr)")

        let server = try await TestServer.start(port: port)
        defer { Task { try? await server.shutdown() } }
        let flushed = try await courier("outbox", "flush", "-H", "Authorization: Bearer cli-flush-7", "--data-dir", directory)
        #expect(flushed.status == 0, "\(flushed.stderr)")
        #expect(flushed.stdout.split(separator: "\n").count == 2)
        let requests = server.recordedRequests
        #expect(requests.map { String(decoding: $0.body, as: UTF8.self) } == ["n=1", "n=2"])
        #expect(requests.map { $0.header("authorization") } == ["Bearer cli-flush-7", "Bearer cli-flush-7"], "every replay gets the -H fields")
        #expect(requests.first?.header("x-client") == "cli", "the outbox kept the ordinary header")
        #expect(secretsFound(["cli-flush-7"], under: URL(fileURLWithPath: directory)) == [])
    }

    @Test func unkeptHeaderNamesAreTheSensitiveOnesOnce() {
        let names = RequestOptions.unkeptHeaderNames(
            ["Authorization", "X-Trace", "cookie", "X-Session", "authorization", "X-API-Key"],
            sensitiveNames: ["x-api-key", "X-Session"])
        #expect(names == ["Authorization", "cookie", "X-Session", "X-API-Key"])
    }

    // MARK: Helpers

    /// Runs the binary with its standard output a pipe; returns the exact bytes.
    func courierBytes(_ arguments: String...) async throws -> (status: Int32, stdout: Data, stderr: String) {
        let process = Process()
        process.executableURL = Self.binary
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        async let stdout = out.fileHandleForReading.readAll()
        async let stderr = err.fileHandleForReading.readAll()
        let (o, e) = try await (stdout, stderr)
        await process.exited()
        return (process.terminationStatus, o, String(decoding: e, as: UTF8.self))
    }

    /// Runs the binary with its standard output a terminal (`script` gives it a pty); returns what the
    /// terminal showed, with the pty's CRLF line ends back to LF.
    func inTerminal(_ arguments: String...) async throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/script")
        let command = ([Self.binary.path] + arguments).map { "'" + $0.replacingOccurrences(of: "'", with: #"'\''"#) + "'" }
        process.arguments = ["-q", "-e", "-c", command.joined(separator: " "), "/dev/null"]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = Pipe()
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let data = try await out.fileHandleForReading.readAll()
        await process.exited()
        return String(decoding: data, as: UTF8.self).replacingOccurrences(of: "\r\n", with: "\n")
    }
}
