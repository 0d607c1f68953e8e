import Foundation
import Testing
@testable import Courier

/// Tier 1: the WHATWG event stream parser, fed bytes in every split a network may make.
@Suite("Server-sent event parser")
struct ServerSentEventParserTests {
    private func parse(_ text: String, in pieces: Int = 1, lastEventID: String = "") throws -> (events: [ServerSentEvent], parser: ServerSentEventParser) {
        var parser = ServerSentEventParser(lastEventID: lastEventID)
        let bytes = Array(text.utf8)
        let size = max(1, (bytes.count + pieces - 1) / pieces)
        var events: [ServerSentEvent] = []
        for start in stride(from: 0, to: bytes.count, by: size) {
            events += parser.parse(bytes[start..<min(start + size, bytes.count)])
        }
        return (events, parser)
    }

    @Test func theStandardsExamplesParseAsItSays() throws {
        // HTML §9.2.6's examples: data lines joined with LF, a comment ignored, a field with no colon, "data" with
        // and without the space, an id kept for the events after it.
        let text = ": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n"
        for pieces in [1, 3, 7, text.utf8.count] {
            let (events, _) = try parse(text, in: pieces)
            #expect(events == [
                ServerSentEvent(id: "1", data: "first event"),
                ServerSentEvent(id: nil, data: "second event"),
                ServerSentEvent(id: nil, data: " third event"),
            ], "split in \(pieces)")
        }
        let (multi, _) = try parse("data: YHOO\ndata: +2\ndata: 10\n\n")
        #expect(multi == [ServerSentEvent(data: "YHOO\n+2\n10")])
        let (empty, _) = try parse("data\n\ndata\ndata\n\ndata:\n")
        #expect(empty == [ServerSentEvent(data: ""), ServerSentEvent(data: "\n")], "the last block has no blank line: dropped")
    }

    @Test func everyLineBreakWorksEvenSplitBetweenChunks() throws {
        for newline in ["\n", "\r", "\r\n"] {
            let text = "event: tick\(newline)data: a\(newline)data: b\(newline)\(newline)data: c\(newline)\(newline)"
            for pieces in 1...text.utf8.count {
                let (events, parser) = try parse(text, in: pieces)
                #expect(events == [ServerSentEvent(event: "tick", data: "a\nb"), ServerSentEvent(data: "c")], "\(newline.debugDescription) in \(pieces)")
                #expect(parser.bufferedBytes == 0)
            }
        }
        // A CR at the end of one chunk and an LF at the start of the next are one line break, not two (which
        // would dispatch early): "data: a\r" + "\ndata: b\r\n\r\n" is one event.
        var parser = ServerSentEventParser()
        #expect(parser.parse(Array("data: a\r".utf8)).isEmpty)
        #expect(parser.parse(Array("\ndata: b\r\n\r\n".utf8)) == [ServerSentEvent(data: "a\nb")])
    }

    @Test func utf8SplitAcrossChunksAndALeadingBOMAreHandled() throws {
        let text = "\u{FEFF}data: café ☕️ 🚀\n\n"
        for pieces in 1...text.utf8.count {
            let (events, _) = try parse(text, in: pieces)
            #expect(events == [ServerSentEvent(data: "café ☕️ 🚀")])
        }
        // Only the stream's first BOM is dropped.
        let (later, _) = try parse("data: a\n\n\u{FEFF}data: b\n\n")
        #expect(later.map(\.data) == ["a"], "a BOM later makes the field name \"\\u{FEFF}data\": ignored")
    }

    @Test func idsPersistAndAreResetOnlyByAnEmptyIdAndNulIsIgnored() throws {
        let (events, parser) = try parse(
            "id: 7\ndata: a\n\ndata: b\n\nid: 8\u{0}x\ndata: c\n\nid: 8\u{1}\nid: 8\u{85}\nid: 8\r\n\nid\ndata: d\n\nid: 9\n\n", lastEventID: "6")
        // NUL, a control character, a C1 control: ignored (they could not go back as Last-Event-ID). A CR ends the
        // line: "id: 8" then a blank line, which dispatches nothing but sets the id.
        #expect(events.map(\.id) == ["7", "7", "7", nil])
        #expect(parser.lastEventID == "9", "a block with an id and no data sets the id and dispatches nothing")
        let (resumed, _) = try parse("data: x\n\n", lastEventID: "41")
        #expect(resumed.first?.id == "41", "a stream resumed with Last-Event-ID keeps it until the server sends another")
    }

    @Test func retryTakesDigitsOnly() throws {
        let (events, parser) = try parse("retry: 2500\ndata: a\n\nretry: 1.5\ndata: b\n\nretry: -1\nretry: 12a\nretry\n\n")
        #expect(events == [ServerSentEvent(data: "a", retry: .milliseconds(2500)), ServerSentEvent(data: "b")])
        #expect(parser.reconnectionTime == .milliseconds(2500))
        let (huge, _) = try parse("retry: 99999999999999999999999\n\n")
        #expect(huge.isEmpty)
    }

    @Test func unknownFieldsAndEventTypesAreKeptApart() throws {
        let (events, _) = try parse("foo: bar\nevent: add\ndata: 1\n\ndata: 2\n\nevent:\ndata: 3\n\n")
        #expect(events.map(\.event) == ["add", "message", "message"], "the type resets after each event")
    }

    @Test func aLineOrAnEventOverTheLimitIsRefusedAndNothingGrows() throws {
        var parser = ServerSentEventParser(maximumEventSize: 64)
        // The events before the long line come out; then the parser stops, holding nothing.
        let before = parser.parse(Array(("id: 1\ndata: a\n\n" + String(repeating: "x", count: 65) + "\n\ndata: b\n\n").utf8))
        #expect(before == [ServerSentEvent(id: "1", data: "a")])
        #expect(parser.failure?.code == .bodyTooLarge)
        #expect(parser.bufferedBytes == 0)
        #expect(parser.parse(Array("data: c\n\n".utf8)).isEmpty, "nothing more once stopped")
        var dataParser = ServerSentEventParser(maximumEventSize: 64)
        for _ in 0..<10 { _ = dataParser.parse(Array("data: 0123456789\n".utf8)) }
        #expect(dataParser.failure?.code == .bodyTooLarge, "an event's data past the limit")
        // 100,000 events through one parser, in chunks that split lines: what it holds between chunks stays
        // within one line and one event.
        var long = ServerSentEventParser()
        var count = 0
        var largest = 0
        let block = Array((0..<100).map { "id: \($0)\nevent: tick\ndata: {\"n\":\($0),\"text\":\"hello world\"}\n\n" }.joined().utf8)
        for _ in 0..<1000 {
            for start in stride(from: 0, to: block.count, by: 1000) {
                count += long.parse(block[start..<min(start + 1000, block.count)]).count
                largest = max(largest, long.bufferedBytes)
            }
        }
        #expect(count == 100_000)
        #expect(largest < 100)
    }

    @Test func decodingAnEventsJSONDataGivesATypedError() throws {
        struct Token: Decodable, Equatable { var text: String }
        #expect(try ServerSentEvent(data: #"{"text":"hi"}"#).decode(Token.self) == Token(text: "hi"))
        do {
            _ = try ServerSentEvent(data: "[DONE]").decode(Token.self)
            Issue.record("decoded")
        } catch {
            #expect(error.code == .decodingFailed)
        }
    }
}
