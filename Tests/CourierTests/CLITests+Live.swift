import Foundation
import Testing
@testable import courier

/// Issue 27: `courier get` writes a body into a pipe as it arrives; `courier events` prints a stream.
extension CLITests {
    /// Runs courier and notes when each line of its standard output arrived, relative to the start.
    func courierLines(_ arguments: [String]) async throws -> (status: Int32, lines: [(String, Duration)], stderr: String) {
        let process = Process()
        process.executableURL = Self.binary
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let started = ContinuousClock.now
        try process.run()
        let reader = out.fileHandleForReading
        async let stderr = err.fileHandleForReading.readAll()
        let lines = await offThePool { () -> [(String, Duration)] in
            var lines: [(String, Duration)] = []
            var pending = Data()
            while let chunk = try? reader.read(upToCount: 1), !chunk.isEmpty {
                if chunk == Data([0x0A]) {
                    lines.append((String(decoding: pending, as: UTF8.self), ContinuousClock.now - started))
                    pending = Data()
                } else {
                    pending += chunk
                }
            }
            return lines
        }
        let errors = String(decoding: try await stderr, as: UTF8.self)
        await process.exited()
        return (process.terminationStatus, lines, errors)
    }

    @Test func getWritesABodyIntoAPipeAsItArrivesHeadFirst() async throws {
        let server = try await EventStreamServer.start { _, _ in
            [.head(200, [("Content-Type", "application/x-ndjson")]), .send("{\"n\":1}\n"), .pause(milliseconds: 700),
             .send("{\"n\":2}\n"), .pause(milliseconds: 700), .send("{\"n\":3}\n"), .end]
        }
        defer { Task { try? await server.shutdown() } }
        let run = try await courierLines(["get", server.baseURL + "/lines"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.lines.map(\.0) == [#"{"n":1}"#, #"{"n":2}"#, #"{"n":3}"#])
        if run.lines.count == 3 {
            #expect(run.lines[2].1 - run.lines[0].1 >= .milliseconds(1000), "the first line came as it was sent, not with the last")
        }
        let headed = try await courierLines(["get", "-i", server.baseURL + "/lines"])
        #expect(headed.lines.first?.0 == "HTTP/1.1 200 OK")
        #expect(headed.lines.contains { $0.0.lowercased() == "content-type: application/x-ndjson" })
        #expect(headed.lines.suffix(4).map(\.0) == ["", #"{"n":1}"#, #"{"n":2}"#, #"{"n":3}"#])
    }

    @Test func getIntoAPipeKeepsItsExitCodesAndEmptyBodies() async throws {
        let server = try await EventStreamServer.start { request, _ in
            switch request.uri {
            case "/missing": [.head(404, [("Content-Type", "text/plain"), ("Content-Length", "9")]), .send("not here\n"), .end]
            default: [.head(204, [("Content-Length", "0")]), .end]
            }
        }
        defer { Task { try? await server.shutdown() } }
        let missing = try await courier("get", server.baseURL + "/missing")
        #expect(missing.status == 4)
        #expect(missing.stdout == "not here\n")
        let empty = try await courier("get", "-i", server.baseURL + "/empty")
        #expect(empty.status == 0, "\(empty.stderr)")
        #expect(empty.stdout.hasPrefix("HTTP/1.1 204 No Content\n"), "the head of a body with no byte: \(empty.stdout)")
    }

    @Test func eventsPrintsEachEventAsItComesAndResumesAfterADrop() async throws {
        let server = try await EventStreamServer.start { request, _ in
            switch request.header("Last-Event-ID") {
            case nil:
                return [.head(200), .send("retry: 50\n\nid: 1\nevent: order\ndata: {\"id\":1}\n\n"), .pause(milliseconds: 600),
                        .send("id: 2\ndata: two\ndata: lines\n\n"), .pause(milliseconds: 20), .drop]
            case "1":
                return [.head(200), .send("id: 2\ndata: two\ndata: lines\n\n"), .end]
            default:
                return [.head(204, [("Content-Length", "0")]), .end]
            }
        }
        defer { Task { try? await server.shutdown() } }
        let run = try await courierLines(["events", server.baseURL + "/stream"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.lines.map(\.0) == ["id: 1", "event: order", #"data: {"id":1}"#, "", "id: 2", "data: two", "data: lines", ""])
        if run.lines.count == 8 {
            #expect(run.lines[4].1 - run.lines[0].1 >= .milliseconds(400), "the first event was printed before the second was sent")
        }
        #expect(server.requests.last?.header("Last-Event-ID") == "2")

        let first = try await courier("events", "--count", "1", server.baseURL + "/stream")
        #expect(first.status == 0)
        #expect(first.stdout == "id: 1\nevent: order\ndata: {\"id\":1}\n\n")
    }

    @Test func eventsEndsQuietlyWithStatus23WhenItsReaderGoesAway() async throws {
        let server = try await EventStreamServer.start { _, _ in
            [.head(200)] + (0..<400).flatMap { n -> [EventStreamServer.Step] in [.send("id: \(n)\ndata: tick \(n)\n\n"), .pause(milliseconds: 25)] } + [.end]
        }
        defer { Task { try? await server.shutdown() } }
        let process = Process()
        process.executableURL = Self.binary
        process.arguments = ["events", server.baseURL + "/forever"]
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        // `| head -n 3`: three lines read, then the reader is gone.
        let reader = out.fileHandleForReading
        let lines = await offThePool { () -> Int in
            var newlines = 0
            while newlines < 3, let byte = try? reader.read(upToCount: 1), !byte.isEmpty { if byte == Data([0x0A]) { newlines += 1 } }
            return newlines
        }
        try reader.close()
        let started = ContinuousClock.now
        let stderr = String(decoding: try await err.fileHandleForReading.readAll(), as: UTF8.self)
        await process.exited()
        #expect(lines == 3)
        #expect(process.terminationStatus == 23, "\(stderr)")
        #expect(stderr.isEmpty)
        #expect(ContinuousClock.now - started < .seconds(5), "it stopped when its output went away, not at the stream's end")
    }

    @Test func eventsFailsOnAnAnswerThatIsNoStream() async throws {
        let server = try await EventStreamServer.start { request, _ in
            request.uri == "/json"
                ? [.head(200, [("Content-Type", "application/json"), ("Content-Length", "2")]), .send("{}"), .end]
                : [.head(403, [("Content-Length", "0")]), .end]
        }
        defer { Task { try? await server.shutdown() } }
        let forbidden = try await courier("events", server.baseURL + "/private")
        #expect(forbidden.status == 4)
        #expect(forbidden.stderr.contains("unacceptableStatus"))
        let json = try await courier("events", server.baseURL + "/json")
        #expect(json.status == 1)
        #expect(json.stderr.contains("unacceptableContentType"))
        let bad = try await courier("events", "-H", "X-Bad: a\u{7}b", server.baseURL + "/x")
        #expect(bad.status == 2)
        #expect(server.requests.count == 2)
    }
}

/// A server's control characters reach a terminal visible, never obeyed (an escape sequence that retitles
/// the window, moves the cursor or recolours what follows; a carriage return that overwrites a line).
@Suite("courier at a terminal")
struct TerminalOutputTests {
    @Test func controlCharactersAreShownInCaretNotation() {
        #expect(TerminalText.sanitized("plain\ttext\n") == "plain\ttext\n")
        #expect(TerminalText.sanitized("\u{1B}]0;pwned\u{07}red\u{1B}[31m") == "^[]0;pwned^Gred^[[31m")
        #expect(TerminalText.sanitized("done\rfake") == "done^Mfake")
        #expect(TerminalText.sanitized("a\u{7F}b\u{9B}2J\u{0}") == "a^?b<U+009B>2J^@")
        #expect(TerminalText.sanitized("héllo ✓") == "héllo ✓")
    }

    /// Runs `courier` at a pseudo-terminal (util-linux `script`), returning what the terminal received.
    private func atTerminal(_ arguments: [String]) async throws -> String {
        let command = ([CLITests.binary.path] + arguments).map { "'\($0)'" }.joined(separator: " ")
        return try await OutboxProcessTests.run(URL(fileURLWithPath: "/usr/bin/script"), ["-qec", command, "/dev/null"]).stdout
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script")))
    func eventsAndTextBodiesAtATerminalShowTheServersEscapes() async throws {
        let hostile = "\u{1B}]0;pwned\u{07}\u{1B}[2Jgone\rfake"
        let server = try await EventStreamServer.start { request, _ in
            if request.uri == "/text" {
                return [.head(200, [("Content-Type", "text/plain; charset=utf-8")]), .send(hostile), .end]
            }
            // (A carriage return ends a line of an event stream, so the event carries a C1 control instead.)
            return [.head(200), .send("id: 1\ndata: \u{1B}]0;pwned\u{07}\u{1B}[2Jgone\u{9B}31m\n\n"), .end]
        }
        defer { Task { try? await server.shutdown() } }
        let events = try await atTerminal(["events", server.baseURL + "/events", "--count", "1"])
        #expect(events.contains("data: ^[]0;pwned^G^[[2Jgone<U+009B>31m"), "\(events.debugDescription)")
        #expect(!events.contains("\u{1B}"))
        let text = try await atTerminal(["get", server.baseURL + "/text"])
        #expect(text.contains("^[]0;pwned^G^[[2Jgone^Mfake"), "\(text.debugDescription)")
        #expect(!text.contains("\u{1B}"))
        // Into a pipe, the bytes as received.
        let piped = try await CLITests().courier("get", server.baseURL + "/text")
        #expect(piped.stdout == hostile)
    }
}
