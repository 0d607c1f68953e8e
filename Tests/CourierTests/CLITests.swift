import CourierTestServer
import Foundation
import Testing

/// The `courier` executable, run as a user would, against the in-process server.
@Suite("courier command line")
struct CLITests {
    struct Run {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// The built `courier` binary, next to the test bundle in the build directory.
    static var binary: URL {
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        while !FileManager.default.fileExists(atPath: directory.appendingPathComponent("courier").path), directory.path != "/" {
            directory.deleteLastPathComponent()
        }
        return directory.appendingPathComponent("courier")
    }

    func courier(_ arguments: String...) async throws -> Run {
        try await courier(arguments)
    }

    func courier(_ arguments: [String], environment: [String: String] = [:]) async throws -> Run {
        let process = Process()
        process.executableURL = Self.binary
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        async let stdout = out.fileHandleForReading.readAll()
        async let stderr = err.fileHandleForReading.readAll()
        let (o, e) = try await (stdout, stderr)
        await process.exited()
        return Run(
            status: process.terminationStatus,
            stdout: String(decoding: o, as: UTF8.self),
            stderr: String(decoding: e, as: UTF8.self))
    }

    @Test func theBinaryIsBuilt() {
        #expect(FileManager.default.isExecutableFile(atPath: Self.binary.path), "\(Self.binary.path)")
    }

    @Test func getPrettyPrintsJSONAndIncludesTheHeadOnRequest() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let plain = try await courier("get", "--pretty", server.url("/json"), "-H", "X-Demo: yes")
        #expect(plain.status == 0)
        #expect(plain.stdout.contains("{\n  \"name\" : \"Courier\","))
        #expect(server.recordedRequests.first?.header("x-demo") == "yes")
        let included = try await courier("get", "-i", server.url("/json"))
        #expect(included.stdout.hasPrefix("HTTP/1.1 200 OK\n"))
        #expect(included.stdout.contains("\ncontent-type: application/json; charset=utf-8\n") || included.stdout.contains("\nContent-Type: application/json; charset=utf-8\n"))
    }

    @Test func exitCodesFollowTheStatus() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        #expect(try await courier("get", server.url("/status/204")).status == 0)
        #expect(try await courier("get", server.url("/status/404")).status == 4)
        let unavailable = try await courier("get", server.url("/status/503"))
        #expect(unavailable.status == 5)
        #expect(unavailable.stdout == "status 503", "into a pipe, the body as received")
    }

    @Test func postSendsFormsAndJSON() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let form = try await courier("post", server.url("/anything"), "-d", "name=Ada Lovelace", "-d", "lang=swift")
        #expect(form.status == 0)
        #expect(server.recordedRequests.last.map { String(decoding: $0.body, as: UTF8.self) } == "lang=swift&name=Ada%20Lovelace")
        let json = try await courier("post", "--pretty", server.url("/anything"), "--json", #"{"a": [1, 2]}"#)
        #expect(json.status == 0)
        #expect(json.stdout.contains(#""json" : {"#))
        #expect(server.recordedRequests.last?.header("content-type") == "application/json")
    }

    @Test func networkErrorsExitOneWithOneLine() async throws {
        let server = try await TestServer.start()
        let stall = server.url("/stall")
        let timeout = try await courier("get", stall, "--timeout", "0.5")
        #expect(timeout.status == 1)
        #expect(timeout.stderr.hasPrefix("courier: error: timeout"))
        #expect(timeout.stderr.split(separator: "\n").count == 1)
        try await server.shutdown()
        let port = try await TestServer.vacantPort()
        let closed = try await courier("get", "http://127.0.0.1:\(port)/get")
        #expect(closed.status == 1)
        #expect(closed.stderr.hasPrefix("courier: error: cannotConnect: could not connect to 127.0.0.1:\(port): connection refused"), "\(closed.stderr)")
        #expect(!closed.stderr.contains("error set") && !closed.stderr.contains("errno"), "\(closed.stderr)")
        #expect(closed.stderr.split(separator: "\n").count == 1)
    }

    @Test func anInjectedHeaderIsBadUsage() async throws {
        let injected = try await courier("get", "http://127.0.0.1:1/get", "-H", "X-A: b\r\nX-Injected: 1")
        #expect(injected.status == 2, "the user's own input, refused before anything is sent")
        #expect(injected.stderr.hasPrefix("courier: error: the value of header 'X-A' contains a line break"), "\(injected.stderr)")
        #expect(injected.stderr.split(separator: "\n").count == 1)
    }

    @Test(arguments: [
        ["get"],
        ["get", "http://127.0.0.1:1/", "-H", "no colon"],
        ["get", "http://127.0.0.1:1/", "--timeout", "-1"],
        ["post", "http://127.0.0.1:1/", "--json", "{broken"],
        ["post", "http://127.0.0.1:1/", "-d", "novalue"],
        ["post", "http://127.0.0.1:1/", "-d", "a=1", "--json", "{}"],
        ["fetch", "http://127.0.0.1:1/"],
        ["get", "htp:/127.0.0.1/"],
        ["get", "not a url"],
        ["get", "/relative/path"],
        ["post", "ftp://127.0.0.1/file", "-d", "a=1"],
        ["get", "--pretty", "--raw", "http://127.0.0.1:1/"],
        ["outbox", "flush", "-H", "no colon"],
        ["outbox", "flush", "-H", "Bad Name: 1"],
        ["get", "http://127.0.0.1:1/", "-H", "X-Bell: \u{7}"],
    ])
    func badUsageExitsTwoWithOneLine(arguments: [String]) async throws {
        let process = Process()
        process.executableURL = Self.binary
        process.arguments = arguments
        let err = Pipe()
        process.standardError = err
        process.standardOutput = Pipe()
        try process.run()
        let stderr = String(decoding: try await err.fileHandleForReading.readAll(), as: UTF8.self)
        await process.exited()
        #expect(process.terminationStatus == 2, "\(arguments): \(stderr)")
        #expect(stderr.hasPrefix("courier: error: "))
        #expect(stderr.split(separator: "\n").count == 1, "\(stderr)")
    }

    @Test func getWithTheCacheHitsTheSecondTimeWithoutARequest() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-cli-cache-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = try await courier("get", "--cache", "--cache-dir", directory, server.url("/cache/60"))
        #expect(first.status == 0)
        #expect(first.stderr == "courier: cache miss\n")
        let second = try await courier("get", "--cache", "--cache-dir", directory, server.url("/cache/60"))
        #expect(second.status == 0)
        #expect(second.stderr == "courier: cache hit\n")
        #expect(second.stdout == first.stdout)
        #expect(server.requestCount(path: "/cache/60") == 1, "the hit made no request")

        let stats = try await courier("cache", "stats", "--cache-dir", directory)
        #expect(stats.stdout.contains("responses: 1"))
        #expect(try await courier("cache", "clear", "--cache-dir", directory).status == 0)
        #expect(try await courier("cache", "stats", "--cache-dir", directory).stdout.contains("responses: 0"))
        let afterClear = try await courier("get", "--cache-dir", directory, server.url("/cache/60"))
        #expect(afterClear.stderr == "courier: cache miss\n")
    }

    @Test func freezablePostsWaitInTheOutboxUntilFlushed() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-cli-outbox-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // A port with nobody listening: the server is away.
        let port = try await TestServer.vacantPort()
        let url = "http://127.0.0.1:\(port)/anything/orders"
        let frozen = try await courier("post", "--freezable", url, "-d", "item=1", "-H", "Authorization: Bearer cli-secret-42", "--data-dir", directory)
        #expect(frozen.status == 0, "\(frozen.stderr)")
        #expect(frozen.stdout.hasPrefix("frozen "))
        let id = String(frozen.stdout.dropFirst("frozen ".count)).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try await courier("post", "--freezable", url, "-d", "item=2", "--data-dir", directory).status == 0)
        #expect(try await courier("post", "--freezable", url, "-d", "item=3", "--data-dir", directory).status == 0)
        // Not freezable: an ordinary network error.
        #expect(try await courier("post", url, "-d", "item=4", "--data-dir", directory).status == 1)

        let list = try await courier("outbox", "list", "--data-dir", directory)
        let lines = list.stdout.split(separator: "\n")
        #expect(lines.first == "ID\tMETHOD\tURL\tATTEMPTS\tAGE\tSTATE")
        #expect(lines.count == 4)
        // Frozen after a refused connection: pending, with no answer yet (the failure is recorded).
        #expect(lines.dropFirst().allSatisfy { $0.contains("\tPOST\t\(url)\t0\t") && $0.hasSuffix("\tpending (no answer yet)") })
        #expect(lines[1].hasPrefix(id))
        #expect(secretsFound(["cli-secret-42"], under: URL(fileURLWithPath: directory)) == [], "the credential reached the outbox")

        let dropped = try await courier("outbox", "drop", id, "--data-dir", directory)
        #expect(dropped.stdout == "dropped \(id)\n")
        #expect(try await courier("outbox", "drop", id, "--data-dir", directory).status == 1)

        // Still away: flushing reports a retry and exits 1.
        let failed = try await courier("outbox", "flush", "--data-dir", directory)
        #expect(failed.status == 1)
        #expect(failed.stdout.hasPrefix("retry "))

        let server = try await TestServer.start(port: port)
        defer { Task { try? await server.shutdown() } }
        let flushed = try await courier("outbox", "flush", "--data-dir", directory)
        #expect(flushed.status == 0, "\(flushed.stderr)")
        let outcomes = flushed.stdout.split(separator: "\n")
        #expect(outcomes.count == 2)
        #expect(outcomes.allSatisfy { $0.hasPrefix("delivered ") && $0.contains(" 200 POST ") })
        #expect(server.recordedRequests.map { String(decoding: $0.body, as: UTF8.self) } == ["item=2", "item=3"])
        #expect(Set(server.recordedRequests.compactMap { $0.header("idempotency-key") }).count == 2)
        #expect(try await courier("outbox", "list", "--data-dir", directory).stdout == "the outbox is empty\n")
        #expect(try await courier("post", "--freezable", "http://127.0.0.1:\(port)/status/503", "--data-dir", directory).status == 5,
                "a server that answers is an answer, even a 503: only an unreachable host freezes")
        #expect(try await courier("outbox", "clear", "--data-dir", directory).stdout == "cleared 0 frozen request(s)\n")
    }

    @Test func aDamagedOutboxIsSetAsideFreezingGoesOnAndListSaysWhere() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-cli-damaged-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let port = try await TestServer.vacantPort()
        let url = "http://127.0.0.1:\(port)/anything/orders"
        #expect(try await courier("post", "--freezable", url, "-d", "item=1", "--data-dir", directory).status == 0)
        // Garbage over the database's header, as a broken disk or a careless tool would leave it (after a
        // checkpoint: a page in the write-ahead log would hide the damage).
        let checkpoint = Process()
        checkpoint.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        checkpoint.arguments = ["python3", "-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()",
                                directory + "/outbox.sqlite"]
        try checkpoint.run()
        await checkpoint.exited()
        let handle = try #require(FileHandle(forWritingAtPath: directory + "/outbox.sqlite"))
        try handle.write(contentsOf: Data(repeating: 0x5A, count: 512))
        try handle.close()
        let frozen = try await courier("post", "--freezable", url, "-d", "item=2", "--data-dir", directory)
        #expect(frozen.status == 0, "the request is kept, not lost to a network error: \(frozen.stdout) \(frozen.stderr)")
        #expect(frozen.stdout.hasPrefix("frozen "))
        let list = try await courier("outbox", "list", "--data-dir", directory)
        let lines = list.stdout.split(separator: "\n")
        #expect(lines.first?.hasPrefix("a damaged outbox was set aside: \(directory)/outbox.sqlite.damaged-") == true, "\(list.stdout)")
        #expect(lines.filter { $0.contains("\tPOST\t") }.count == 1, "the fresh outbox holds the new request")
    }

    @Test func demoShowsTheQueueAtWork() async throws {
        let started = ContinuousClock.now
        let demo = try await courier("demo")
        #expect(demo.status == 0, "\(demo.stderr)")
        #expect(demo.stdout.contains("the server saw at most 2 at once"))
        #expect(demo.stdout.contains("the server answered 1 request; 200 completion handlers ran, once each"))
        #expect(demo.stdout.contains("they started in this order: veryHigh-1, high-1, high-2, low-1, low-2"))
        #expect(demo.stdout.contains("the server saw the connection closed: yes"))
        #expect(demo.stdout.contains("100%"))
        #expect(demo.stdout.contains("connectionLost"))
        #expect(demo.stdout.contains("the server saw 3 Idempotency-Keys, each exactly once"))
        #expect(demo.stdout.contains("(its task was cancelled): stillFrozen; the note stays in the outbox"))
        if PostgresServer.isAvailable || PostgresServer.isRequired {
            #expect(demo.stdout.contains("instance A's waiting operations learn the outcomes B recorded: 200, 200, 200"))
            #expect(demo.stdout.contains("the partner saw 3 Idempotency-Keys, each exactly once, each with B's token; the token is not in the table"))
        }
        #expect(demo.stdout.contains("GET /cache/0 → 200, cacheOutcome stale, isCachedResponse true"))
        #expect(demo.stdout.contains("servesStaleWhenDisconnected = false → cannotConnect"))
        #expect(demo.stdout.contains("→ 304 from the cache"))
        #expect(demo.stdout.contains("3000289 of 3000289 bytes sent"))
        #expect(demo.stdout.contains("3145728 bytes on disk"))
        #expect(demo.stdout.contains("two identical downloads to two files: 1 request, both files written"))
        #expect(demo.stdout.contains("10 requests with an expired token, refused with 401: 1 token refresh, 10 succeeded with the new token"))
        #expect(demo.stdout.contains("a POST to a link elsewhere that redirects to the API: it arrives without the token"))
        #expect(demo.stdout.contains("a server answering 503 with Retry-After: 0: 3 attempts"))
        #expect(demo.stdout.contains("while the stream is open, a GET on a queue one request wide: 200"))
        // Three events a connection, each resumed after the last one received (a drop may lose what was on the wire).
        #expect(demo.stdout.contains("events 1, 2, 3, 4, 5, 6, 7, 8, 9 over "))
        #expect(demo.stdout.contains("), then the server answered 204"))
        #expect(demo.stdout.contains("a streamed upload's trailer, made after its last chunk: X-Byte-Count: 34 (the server received 34 bytes)"))
        #expect(ContinuousClock.now - started < .seconds(45), "the demo must stay well under a minute")
    }
}
