import Foundation
import Testing
import CourierTestServer

// MARK: - Helpers

/// The outcome of one `curl` invocation.
private struct CurlResult: Sendable {
    var exitCode: Int32
    /// Status of the final response.
    var status: Int
    /// Statuses of every response head received, interim (1xx) and redirects included.
    var allStatuses: [Int]
    var headers: [(name: String, value: String)]
    var body: [UInt8]
    var stdout: String

    var text: String { String(decoding: body, as: UTF8.self) }

    func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    func json() -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
    }
}

private let curlPath = "/usr/bin/curl"

/// Runs `executable` with `arguments`, returning its exit code and standard output.
/// Callers bound the run time themselves (curl's `--max-time`, a watchdog in the shell script).
private func run(_ executable: String, _ arguments: [String]) async throws -> (Int32, String) {
    let outputFile = FileManager.default.temporaryDirectory
        .appendingPathComponent("ts-out-\(UUID().uuidString)")
    _ = FileManager.default.createFile(atPath: outputFile.path, contents: nil)
    defer { try? FileManager.default.removeItem(at: outputFile) }
    let output = try FileHandle(forWritingTo: outputFile)
    defer { try? output.close() }

    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    let status: Int32 = try await withCheckedThrowingContinuation { continuation in
        process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
        do {
            try process.run()
        } catch {
            process.terminationHandler = nil
            continuation.resume(throwing: error)
        }
    }
    let text = (try? String(contentsOf: outputFile, encoding: .utf8)) ?? ""
    return (status, text)
}

/// Performs a request with `curl`; `arguments` go before the URL.
private func curl(_ url: String, _ arguments: [String] = []) async throws -> CurlResult {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ts-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let bodyFile = directory.appendingPathComponent("body").path
    let headerFile = directory.appendingPathComponent("headers").path
    let (code, stdout) = try await run(
        curlPath,
        // A later `--max-time` in `arguments` overrides the default.
        ["-s", "--max-time", "10", "-o", bodyFile, "-D", headerFile] + arguments + [url]
    )
    let body = FileManager.default.contents(atPath: bodyFile).map { [UInt8]($0) } ?? []
    let rawHeaders = (try? String(contentsOfFile: headerFile, encoding: .isoLatin1)) ?? ""
    // Keep only the last response block (after 100-continue and redirects).
    var status = 0
    var allStatuses: [Int] = []
    var headers: [(name: String, value: String)] = []
    for line in rawHeaders.components(separatedBy: "\r\n") {
        if line.hasPrefix("HTTP/") {
            let fields = line.split(separator: " ")
            status = fields.count > 1 ? Int(fields[1]) ?? 0 : 0
            allStatuses.append(status)
            headers = []
        } else if let colon = line.firstIndex(of: ":") {
            let name = String(line[..<colon])
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            headers.append((name: name, value: value))
        }
    }
    return CurlResult(
        exitCode: code, status: status, allStatuses: allStatuses, headers: headers, body: body, stdout: stdout
    )
}

/// Sends raw bytes over a plain TCP connection (bash's /dev/tcp) and returns what the
/// server answered before closing the connection (or before 3 seconds of silence).
private func rawExchange(port: Int, _ payload: String) async throws -> (Int32, String) {
    // Reads line by line with a 3 second timeout per read; the last (unterminated) line
    // is left in $line when read fails at the end of the stream.
    let script = """
        exec 3<>/dev/tcp/127.0.0.1/\(port) || exit 1
        printf '%s' "$1" >&3
        while IFS= read -r -t 3 line <&3; do printf '%s\\n' "$line"; done
        printf '%s' "$line"
        """
    return try await run("/bin/bash", ["-c", script, "raw", payload])
}

/// Starts a server, runs `body` and always shuts the server down.
private func withTestServer(_ body: (TestServer) async throws -> Void) async throws {
    let server = try await TestServer.start()
    do {
        try await body(server)
    } catch {
        try await server.shutdown()
        throw error
    }
    try await server.shutdown()
}

/// The `/bytes` pattern: byte `i` is `i % 251`.
private func pattern(_ count: Int) -> [UInt8] {
    (0..<count).map { UInt8($0 % 251) }
}

// MARK: - Tests

@Suite("TestServer")
struct TestServerTests {
    @Test("start binds 127.0.0.1 on an ephemeral port; /get and /headers describe the request")
    func get() async throws {
        try await withTestServer { server in
            #expect(server.port > 0)
            #expect(server.baseURL == "http://127.0.0.1:\(server.port)")
            #expect(server.url("/get?a=1") == "http://127.0.0.1:\(server.port)/get?a=1")

            let result = try await curl(server.url("/get?a=1&b=x%20y&a=2"), ["-H", "X-Test: one", "-H", "X-Test: two"])
            #expect(result.status == 200)
            #expect(result.header("Content-Type") == "application/json")
            #expect(result.header("Content-Length") == String(result.body.count))
            let json = try #require(result.json())
            #expect(json["method"] as? String == "GET")
            #expect(json["path"] as? String == "/get")
            #expect(json["url"] as? String == "/get?a=1&b=x%20y&a=2")
            #expect(json["args"] as? [String: String] == ["a": "2", "b": "x y"])
            let headers = try #require(json["headers"] as? [String: String])
            #expect(headers["x-test"] == "two")
            #expect(headers["host"] == "127.0.0.1:\(server.port)")
            #expect(json["body"] as? String == "")
            #expect(json["json"] is NSNull)

            let echoed = try await curl(server.url("/headers"), ["-H", "X-Custom-Header: Value"])
            let echoedHeaders = try #require(echoed.json()?["headers"] as? [String: String])
            #expect(echoedHeaders["x-custom-header"] == "Value")
        }
    }

    @Test("/anything decodes forms and JSON bodies")
    func anything() async throws {
        try await withTestServer { server in
            let form = try await curl(server.url("/anything/deep/path"), ["-X", "PUT", "--data", "x=1&y=a+b&x=3"])
            let formJSON = try #require(form.json())
            #expect(formJSON["method"] as? String == "PUT")
            #expect(formJSON["path"] as? String == "/anything/deep/path")
            #expect(formJSON["body"] as? String == "x=1&y=a+b&x=3")
            #expect(formJSON["form"] as? [String: String] == ["x": "3", "y": "a b"])

            let posted = try await curl(
                server.url("/anything"),
                ["-H", "Content-Type: application/json", "--data", #"{"k":[1,2],"s":"v"}"#]
            )
            let postedJSON = try #require(posted.json())
            #expect(postedJSON["method"] as? String == "POST")
            let body = try #require(postedJSON["json"] as? [String: Any])
            #expect(body["s"] as? String == "v")
            #expect(body["k"] as? [Int] == [1, 2])
            #expect(postedJSON["form"] as? [String: String] == [:])
        }
    }

    @Test("/status/{code}")
    func status() async throws {
        try await withTestServer { server in
            let teapot = try await curl(server.url("/status/418"))
            #expect(teapot.status == 418)
            #expect(teapot.text == "status 418")
            let noContent = try await curl(server.url("/status/204"))
            #expect(noContent.status == 204)
            #expect(noContent.body.isEmpty)
            #expect(noContent.header("Content-Length") == nil)
            let notModified = try await curl(server.url("/status/304"))
            #expect(notModified.status == 304)
            #expect(notModified.body.isEmpty)
            #expect(try await curl(server.url("/status/100")).status == 400)
            #expect(try await curl(server.url("/status/abc")).status == 400)
            #expect(try await curl(server.url("/status/600")).status == 400)
            #expect(try await curl(server.url("/status/503")).status == 503)
        }
    }

    @Test("unknown paths are 404; HEAD has headers only")
    func notFoundAndHead() async throws {
        try await withTestServer { server in
            let missing = try await curl(server.url("/nope"))
            #expect(missing.status == 404)
            #expect(!missing.body.isEmpty)
            let head = try await curl(server.url("/json"), ["-I"])
            #expect(head.status == 200)
            #expect(head.header("Content-Length") == String(#"{"name":"Courier","version":1,"tags":["a","b"],"nested":{"ok":true}}"#.utf8.count))
            #expect(head.exitCode == 0)
        }
    }

    @Test("/bytes/{n} streams the pattern, optionally chunked and paced")
    func bytes() async throws {
        try await withTestServer { server in
            let plain = try await curl(server.url("/bytes/1000"))
            #expect(plain.status == 200)
            #expect(plain.header("Content-Type") == "application/octet-stream")
            #expect(plain.header("Content-Length") == "1000")
            #expect(plain.body == pattern(1000))

            let chunked = try await curl(server.url("/bytes/500?chunked=1&chunkSize=100&delayMs=5"))
            #expect(chunked.header("Transfer-Encoding") == "chunked")
            #expect(chunked.header("Content-Length") == nil)
            #expect(chunked.body == pattern(500))

            let small = try await curl(server.url("/bytes/1000000?chunkSize=1000"))
            #expect(small.body == pattern(1_000_000))
            #expect(server.abortedRequestCount == 0)

            let empty = try await curl(server.url("/bytes/0"))
            #expect(empty.status == 200)
            #expect(empty.body.isEmpty)
            #expect(try await curl(server.url("/bytes/-1")).status == 400)
        }
    }

    @Test("/bytes/{n} handles large bodies")
    func largeBytes() async throws {
        try await withTestServer { server in
            let size = 32 << 20
            let (code, stdout) = try await run(
                curlPath, ["-s", "--max-time", "10", "-o", "/dev/null", "-w", "%{size_download}", server.url("/bytes/\(size)")]
            )
            #expect(code == 0)
            #expect(stdout == String(size))
            #expect(server.inFlight == 0)
            #expect(server.abortedRequestCount == 0)
        }
    }

    @Test("redirect routes")
    func redirects() async throws {
        try await withTestServer { server in
            let single = try await curl(server.url("/redirect/2"))
            #expect(single.status == 302)
            #expect(single.header("Location") == "/redirect/1")
            #expect(try await curl(server.url("/redirect/0")).header("Location") == "/get")

            let followed = try await curl(server.url("/redirect/3"), ["-L", "-w", "%{num_redirects}"])
            #expect(followed.status == 200)
            #expect(followed.stdout == "4")
            #expect(followed.json()?["path"] as? String == "/get")
            #expect(server.requestCount(path: "/get") == 1)

            let target = try await curl(server.url("/redirect-to?url=https%3A%2F%2Fexample.com%2Fx&status=307"))
            #expect(target.status == 307)
            #expect(target.header("Location") == "https://example.com/x")
            #expect(try await curl(server.url("/redirect-to?url=/get")).status == 302)
            #expect(try await curl(server.url("/redirect-to")).status == 400)

            let loop = try await curl(server.url("/redirect-loop"), ["-L", "--max-redirs", "3"])
            #expect(loop.exitCode == 47)  // CURLE_TOO_MANY_REDIRECTS
            #expect(loop.header("Location") == "/redirect-loop")
        }
    }

    @Test("compressed payloads")
    func compression() async throws {
        try await withTestServer { server in
            let gzip = try await curl(server.url("/gzip"), ["--compressed"])
            #expect(gzip.header("Content-Encoding") == "gzip")
            #expect(gzip.header("Content-Type") == "application/json")
            #expect(gzip.text == #"{"gzipped":true}"#)

            let deflate = try await curl(server.url("/deflate"), ["--compressed"])
            #expect(deflate.header("Content-Encoding") == "deflate")
            #expect(deflate.text == #"{"deflated":true}"#)

            let raw = try await curl(server.url("/gzip-bomb"))
            #expect(raw.header("Content-Encoding") == "gzip")
            #expect(raw.body.count < 20_000)
            #expect(raw.body.prefix(2) == [0x1F, 0x8B])
            let inflated = try await curl(server.url("/gzip-bomb"), ["--compressed"])
            #expect(inflated.exitCode == 0)
            #expect(Data(inflated.body) == Data(count: 16 << 20))
        }
    }

    @Test("fixed content routes")
    func fixedContent() async throws {
        try await withTestServer { server in
            let json = try await curl(server.url("/json"))
            #expect(json.header("Content-Type") == "application/json; charset=utf-8")
            #expect(json.text == #"{"name":"Courier","version":1,"tags":["a","b"],"nested":{"ok":true}}"#)
            let invalid = try await curl(server.url("/invalid-json"))
            #expect(invalid.header("Content-Type") == "application/json")
            #expect(invalid.text == #"{"name": "Courier", broken"#)
            let xml = try await curl(server.url("/xml"))
            #expect(xml.header("Content-Type") == "application/xml")
            #expect(xml.text.hasPrefix(#"<?xml version="1.0"?><rates base="EUR">"#))
            let latin1 = try await curl(server.url("/latin1"))
            #expect(latin1.header("Content-Type") == "text/plain; charset=iso-8859-1")
            #expect(latin1.body == [0x63, 0x61, 0x66, 0xE9])
        }
    }

    @Test("/rates")
    func rates() async throws {
        try await withTestServer { server in
            let euro = try #require(try await curl(server.url("/rates")).json())
            #expect(euro["base"] as? String == "EUR")
            let rates = try #require(euro["rates"] as? [String: Double])
            #expect(rates == ["USD": 1.08, "GBP": 0.85, "JPY": 161.2])
            let dollar = try await curl(server.url("/rates?base=USD"))
            #expect(dollar.json()?["base"] as? String == "USD")
        }
    }

    @Test("/basic-auth/{user}/{pass}")
    func basicAuth() async throws {
        try await withTestServer { server in
            let ok = try await curl(server.url("/basic-auth/alice/s3cret"), ["-u", "alice:s3cret"])
            #expect(ok.status == 200)
            #expect(ok.json()?["authenticated"] as? Bool == true)
            #expect(ok.json()?["user"] as? String == "alice")
            let wrong = try await curl(server.url("/basic-auth/alice/s3cret"), ["-u", "alice:nope"])
            #expect(wrong.status == 401)
            #expect(wrong.header("WWW-Authenticate") == #"Basic realm="test""#)
            #expect(try await curl(server.url("/basic-auth/alice/s3cret")).status == 401)
        }
    }

    @Test("/cache/{seconds} with conditional requests")
    func cache() async throws {
        try await withTestServer { server in
            let first = try await curl(server.url("/cache/60"))
            #expect(first.status == 200)
            #expect(first.header("Cache-Control") == "max-age=60")
            #expect(first.header("ETag") == #""v1""#)
            #expect(first.header("Last-Modified") == "Wed, 21 Oct 2015 07:28:00 GMT")
            #expect(first.json()?["cached"] as? Bool == true)
            #expect(first.json()?["n"] as? Int == 1)
            #expect(try await curl(server.url("/cache/60")).json()?["n"] as? Int == 2)
            let conditional = try await curl(server.url("/cache/60"), ["-H", #"If-None-Match: "v1""#])
            #expect(conditional.status == 304)
            #expect(conditional.header("ETag") == #""v1""#)
            #expect(conditional.body.isEmpty)
        }
    }

    @Test("/echo returns the body, content type and method")
    func echo() async throws {
        try await withTestServer { server in
            let result = try await curl(
                server.url("/echo"), ["-X", "PATCH", "-H", "Content-Type: text/x-test", "--data-binary", "hello"]
            )
            #expect(result.status == 200)
            #expect(result.text == "hello")
            #expect(result.header("Content-Type") == "text/x-test")
            #expect(result.header("X-Echo-Method") == "PATCH")
            let empty = try await curl(server.url("/echo"))
            #expect(empty.header("Content-Type") == "application/octet-stream")
            #expect(empty.header("X-Echo-Method") == "GET")
            #expect(empty.body.isEmpty)
        }
    }

    @Test("/echo counts large uploads and records only 1 MiB")
    func largeUpload() async throws {
        try await withTestServer { server in
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("ts-upload-\(UUID().uuidString)")
            let size = 10 << 20
            try Data(count: size).write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            // The server answers `Expect: 100-continue` at once (curl would wait 1 s otherwise).
            let result = try await curl(
                server.url("/echo"), ["-H", "Expect: 100-continue", "--data-binary", "@\(file.path)"]
            )
            #expect(result.allStatuses == [100, 200])
            #expect(result.status == 200)
            #expect(result.json()?["received"] as? Int == size)
            let recorded = try #require(server.recordedRequests.last)
            #expect(recorded.body.count == 1 << 20)
            #expect(recorded.header("expect") == "100-continue")
        }
    }

    @Test("statistics: counts, recorded requests and reset")
    func statistics() async throws {
        try await withTestServer { server in
            _ = try await curl(server.url("/get?x=1"), ["-H", "X-Dup: a", "-H", "x-dup: b"])
            _ = try await curl(server.url("/echo"), ["--data-binary", "payload"])
            _ = try await curl(server.url("/get"))
            #expect(server.requestCount == 3)
            #expect(server.requestCount(path: "/get") == 2)
            #expect(server.requestCount(path: "/echo") == 1)
            #expect(server.requestCount(path: "/missing") == 0)
            #expect(server.inFlight == 0)
            #expect(server.maxInFlight == 1)
            #expect(server.abortedRequestCount == 0)

            let recorded = server.recordedRequests
            #expect(recorded.map(\.uri) == ["/get?x=1", "/echo", "/get"])
            #expect(recorded[0].method == "GET")
            #expect(recorded[0].path == "/get")
            #expect(recorded[0].header("X-DUP") == "a")
            #expect(recorded[0].headers.filter { $0.name.lowercased() == "x-dup" }.map(\.value) == ["a", "b"])
            #expect(recorded[1].method == "POST")
            #expect(recorded[1].body == Array("payload".utf8))
            #expect(recorded[1].header("nonexistent") == nil)

            server.resetStatistics()
            #expect(server.requestCount == 0)
            #expect(server.requestCount(path: "/get") == 0)
            #expect(server.recordedRequests.isEmpty)
            #expect(server.maxInFlight == 0)
        }
    }

    @Test("maxInFlight reaches 3 with three concurrent /delay/1500 requests")
    func maxInFlight() async throws {
        try await withTestServer { server in
            // One curl process with three parallel connections, so process start-up skew
            // cannot serialise the requests.
            let url = server.url("/delay/1500")
            let start = ContinuousClock.now
            let (code, stdout) = try await run(
                curlPath,
                ["-s", "--max-time", "10", "-Z", "--parallel-immediate", "--parallel-max", "3", "-w", "%{http_code} "]
                    + Array(repeating: ["-o", "/dev/null"], count: 3).flatMap { $0 } + [url, url, url]
            )
            let elapsed = ContinuousClock.now - start
            #expect(code == 0)
            #expect(stdout == "200 200 200 ")
            #expect(elapsed >= .milliseconds(1500))
            #expect(server.maxInFlight == 3)
            #expect(server.inFlight == 0)
            #expect(server.requestCount(path: "/delay/1500") == 3)
        }
    }

    @Test("a client disconnecting during /stall counts as aborted")
    func abortedStall() async throws {
        try await withTestServer { server in
            let result = try await curl(server.url("/stall"), ["--max-time", "2"])
            #expect(result.exitCode == 28)  // CURLE_OPERATION_TIMEDOUT
            #expect(await server.waitForAbortedRequests(count: 1, timeout: .seconds(20)))
            #expect(server.abortedRequestCount == 1)
            #expect(server.inFlight == 0)
            #expect(server.maxInFlight == 1)
        }
    }

    @Test("/stall-body sends a partial body and hangs; the disconnect counts as aborted")
    func stallBody() async throws {
        try await withTestServer { server in
            // Generous enough for curl to receive the partial body even on a busy machine.
            let result = try await curl(server.url("/stall-body"), ["--max-time", "2"])
            #expect(result.exitCode == 28)
            #expect(result.status == 200)
            #expect(result.header("Content-Length") == "1000")
            #expect(result.body == pattern(100))
            #expect(await server.waitForAbortedRequests(count: 1, timeout: .seconds(20)))
            #expect(server.inFlight == 0)
        }
    }

    @Test("a client disconnecting during a /bytes stream counts as aborted")
    func abortedStream() async throws {
        try await withTestServer { server in
            // Long enough for the head to arrive on a machine busy with a sanitizer build.
            let result = try await curl(server.url("/bytes/100000000?chunkSize=1000&delayMs=10"), ["--max-time", "5"])
            #expect(result.exitCode == 28)
            #expect(result.header("Content-Length") == "100000000")
            #expect(result.body == pattern(result.body.count))
            #expect(await server.waitForAbortedRequests(count: 1, timeout: .seconds(20)))
            #expect(server.inFlight == 0)
        }
    }

    @Test("/drop-mid-body closes after 1000 bytes and is not a client abort")
    func dropMidBody() async throws {
        try await withTestServer { server in
            let result = try await curl(server.url("/drop-mid-body"))
            #expect(result.exitCode == 18)  // CURLE_PARTIAL_FILE
            #expect(result.header("Content-Length") == "100000")
            #expect(result.body == pattern(1000))
            #expect(server.inFlight == 0)
            #expect(server.abortedRequestCount == 0)
        }
    }

    @Test("waitForRequests resumes when requests arrive and times out otherwise")
    func waitForRequests() async throws {
        try await withTestServer { server in
            #expect(await server.waitForRequests(count: 1, timeout: .milliseconds(50)) == false)

            async let reached = server.waitForRequests(count: 2, timeout: .seconds(20))
            _ = try await curl(server.url("/get"))
            _ = try await curl(server.url("/headers"))
            #expect(await reached)
            #expect(await server.waitForRequests(count: 2, timeout: .zero))

            let waiter = Task { await server.waitForRequests(count: 100, timeout: .seconds(30)) }
            waiter.cancel()
            #expect(await waiter.value == false)
            #expect(await server.waitForAbortedRequests(count: 1, timeout: .milliseconds(20)) == false)
        }
    }

    @Test("keep-alive reuses connections and Connection: close is honoured")
    func keepAlive() async throws {
        try await withTestServer { server in
            let (code, stdout) = try await run(
                curlPath,
                ["-s", "--max-time", "10", "-o", "/dev/null", "-o", "/dev/null", "-w", "%{num_connects} ", server.url("/get"), server.url("/json")]
            )
            #expect(code == 0)
            #expect(stdout == "1 0 ")
            let closing = try await curl(server.url("/get"), ["-H", "Connection: close"])
            #expect(closing.status == 200)
            #expect(closing.header("Connection") == "close")
            let http10 = try await curl(server.url("/get"), ["--http1.0"])
            #expect(http10.status == 200)
            #expect(server.inFlight == 0)
            #expect(server.abortedRequestCount == 0)
        }
    }

    @Test("malformed requests get 400 and the connection is closed")
    func malformed() async throws {
        try await withTestServer { server in
            let (_, garbage) = try await rawExchange(port: server.port, "GARBAGE\r\n\r\n")
            #expect(garbage.hasPrefix("HTTP/1.1 400"))
            let (_, badChunk) = try await rawExchange(
                port: server.port,
                "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nZZZ\r\n"
            )
            #expect(!badChunk.contains("200 OK"))
            let (_, pipelined) = try await rawExchange(
                port: server.port,
                "GET /json HTTP/1.1\r\nHost: x\r\n\r\nGET /xml HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            )
            #expect(pipelined.contains(#""name":"Courier""#))
            #expect(pipelined.contains("<rates"))
            // The server is still healthy.
            #expect(try await curl(server.url("/get")).status == 200)
            #expect(server.abortedRequestCount == 0)
        }
    }

    @Test("shutdown closes open connections, stops listening and is idempotent")
    func shutdown() async throws {
        let server = try await TestServer.start()
        let url = server.url("/stall")
        async let stalled = curl(url, ["--max-time", "5"])
        #expect(await server.waitForRequests(count: 1, timeout: .seconds(20)))
        try await server.shutdown()
        let result = try await stalled
        #expect(result.exitCode == 52)  // CURLE_GOT_NOTHING: closed without a response
        #expect(server.abortedRequestCount == 0)
        #expect(server.inFlight == 0)
        let refused = try await curl(server.url("/get"))
        #expect(refused.exitCode == 7)  // CURLE_COULDNT_CONNECT
        try await server.shutdown()
    }
}
