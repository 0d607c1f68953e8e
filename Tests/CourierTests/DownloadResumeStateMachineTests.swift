import Foundation
import Testing
@testable import Courier

/// Tier 1: resumable download decisions, event by event, without I/O (RFC 9110 §14.2 Range, §13.1.5
/// If-Range, §15.3.7 206 Partial Content, §15.5.17 416 Range Not Satisfiable).
@Suite("DownloadResumeStateMachine")
struct DownloadResumeStateMachineTests {
    private typealias Machine = DownloadResumeStateMachine
    private let url = "https://files.example/big.iso"

    private func record(
        etag: String? = "\"v1\"", lastModified: String? = nil, length: Int64? = 1000, onDisk: Int64 = 400, url: String? = nil
    ) -> ResumeRecord {
        ResumeRecord(url: url ?? self.url, entityTag: etag, lastModified: lastModified, completeLength: length, bytesOnDisk: onDisk)
    }

    private func range(_ offset: Int64, _ validator: String) -> HTTPFields {
        [.range: "bytes=\(offset)-", .ifRange: validator, .acceptEncoding: "identity"]
    }

    // MARK: start (§14.2, §13.1.5)

    @Test func startDecisions() {
        struct Case {
            var name: String
            var partial: Int64
            var record: ResumeRecord?
            var expected: Machine.Action
        }
        let lm = "Tue, 01 Oct 2024 10:00:00 GMT"
        let cases: [Case] = [
            Case(name: "nothing on disk: a plain request", partial: 0, record: nil,
                 expected: .sendRequest(extraHeaders: [:], resumeOffset: 0)),
            Case(name: "strong ETag: Range from N with If-Range (§14.2, §13.1.5)", partial: 400, record: record(),
                 expected: .sendRequest(extraHeaders: range(400, "\"v1\""), resumeOffset: 400)),
            Case(name: "the file on disk, not the record, says where to resume", partial: 512, record: record(onDisk: 400),
                 expected: .sendRequest(extraHeaders: range(512, "\"v1\""), resumeOffset: 512)),
            Case(name: "Last-Modified only: If-Range carries the date verbatim", partial: 10,
                 record: record(etag: nil, lastModified: lm), expected: .sendRequest(extraHeaders: range(10, lm), resumeOffset: 10)),
            Case(name: "a weak ETag may not go in If-Range (§13.1.5)", partial: 10, record: record(etag: "W/\"v1\""),
                 expected: .startOver(.weakValidatorOnly)),
            Case(name: "a weak ETag and a strong date: the date", partial: 10, record: record(etag: "W/\"v1\"", lastModified: lm),
                 expected: .sendRequest(extraHeaders: range(10, lm), resumeOffset: 10)),
            Case(name: "bytes but no record", partial: 10, record: nil, expected: .startOver(.noRecord)),
            Case(name: "a record of another URL", partial: 10, record: record(url: "https://other/x"), expected: .startOver(.noRecord)),
            Case(name: "a record without validators", partial: 10, record: record(etag: nil), expected: .startOver(.noRecord)),
            Case(name: "more on disk than the representation", partial: 1001, record: record(length: 1000),
                 expected: .startOver(.partialLongerThanRepresentation)),
            Case(name: "all of it on disk: ask anyway, a 416 will confirm", partial: 1000, record: record(length: 1000),
                 expected: .sendRequest(extraHeaders: range(1000, "\"v1\""), resumeOffset: 1000)),
        ]
        for test in cases {
            var machine = Machine(url: url)
            #expect(machine.start(partialLength: test.partial, record: test.record) == test.expected, "\(test.name)")
        }
    }

    // MARK: responses to a range request

    private func resuming(from offset: Int64 = 400, record: ResumeRecord? = nil) -> Machine {
        var machine = Machine(url: url)
        _ = machine.start(partialLength: offset, record: record ?? self.record())
        return machine
    }

    @Test func responseDecisions() {
        struct Case {
            var name: String
            var status: Int
            var headers: HTTPFields
            var expected: Machine.Action
        }
        var appended = record(onDisk: 400)
        appended.completeLength = 1000
        let cases: [Case] = [
            Case(name: "206 from N of the same length: append (§15.3.7)", status: 206,
                 headers: [.contentRange: "bytes 400-999/1000", .eTag: "\"v1\""], expected: .append(record: appended)),
            Case(name: "206 without an ETag of its own: append", status: 206,
                 headers: [.contentRange: "bytes 400-999/1000"], expected: .append(record: appended)),
            Case(name: "206 starting elsewhere", status: 206, headers: [.contentRange: "bytes 0-999/1000"],
                 expected: .startOver(.contentRangeMismatch)),
            Case(name: "206 of another complete length", status: 206, headers: [.contentRange: "bytes 400-1199/1200"],
                 expected: .startOver(.contentRangeMismatch)),
            Case(name: "206 with no Content-Range (multipart/byteranges)", status: 206,
                 headers: [.contentType: "multipart/byteranges; boundary=x"], expected: .startOver(.contentRangeMismatch)),
            Case(name: "206 with an unknown complete length", status: 206, headers: [.contentRange: "bytes 400-999/*"],
                 expected: .startOver(.contentRangeMismatch)),
            Case(name: "206 with another strong ETag", status: 206, headers: [.contentRange: "bytes 400-999/1000", .eTag: "\"v2\""],
                 expected: .startOver(.validatorChanged)),
            Case(name: "206 gzip-encoded: its bytes are not the file's", status: 206,
                 headers: [.contentRange: "bytes 400-999/1000", .contentEncoding: "gzip"], expected: .startOver(.contentEncoded)),
            Case(name: "200 with the same ETag: the server ignored Range", status: 200,
                 headers: [.eTag: "\"v1\"", .contentLength: "1000"],
                 expected: .writeFromStart(record: record(onDisk: 0), replacing: .rangeIgnored)),
            Case(name: "200 with another ETag: the representation changed (§13.1.5)", status: 200,
                 headers: [.eTag: "\"v2\"", .contentLength: "1200"],
                 expected: .writeFromStart(record: record(etag: "\"v2\"", length: 1200, onDisk: 0), replacing: .validatorChanged)),
            Case(name: "200 with only a weak ETag: not resumable next time", status: 200, headers: [.eTag: "W/\"v2\""],
                 expected: .writeFromStart(record: nil, replacing: .validatorChanged)),
            Case(name: "416 */400 while the record says 1000: a shorter, changed representation", status: 416,
                 headers: [.contentRange: "bytes */400"], expected: .startOver(.rangeNotSatisfiable)),
            Case(name: "416 of another length", status: 416, headers: [.contentRange: "bytes */300"],
                 expected: .startOver(.rangeNotSatisfiable)),
            Case(name: "404: fail, keeping the partial", status: 404, headers: [:], expected: .fail(.unacceptableStatus(404))),
            Case(name: "500: fail, keeping the partial", status: 500, headers: [:], expected: .fail(.unacceptableStatus(500))),
        ]
        for test in cases {
            var machine = resuming()
            #expect(machine.receivedHead(status: test.status, headers: test.headers) == test.expected, "\(test.name)")
        }
    }

    @Test func aFourSixteenIsCompleteOnlyWhenNothingContradictsTheRecord() {
        func answer(_ headers: HTTPFields, length: Int64? = 400) -> Machine.Action {
            var machine = resuming(from: 400, record: record(length: length))
            return machine.receivedHead(status: 416, headers: headers)
        }
        #expect(answer([.contentRange: "bytes */400"]) == .alreadyComplete(length: 400), "§15.5.17: */N with N on disk")
        #expect(answer([.contentRange: "bytes */400"], length: nil) == .alreadyComplete(length: 400), "no recorded length: the 416's")
        #expect(answer([.contentRange: "bytes */400", .eTag: "\"v1\""]) == .alreadyComplete(length: 400))
        #expect(answer([.contentRange: "bytes */400", .eTag: "\"v2\""]) == .startOver(.rangeNotSatisfiable), "another entity tag")
        #expect(answer([.contentRange: "bytes */400"], length: 1000) == .startOver(.rangeNotSatisfiable), "the record says longer")
        #expect(answer([.contentRange: "bytes */1000"], length: nil) == .startOver(.rangeNotSatisfiable))
        #expect(answer([.contentRange: "bytes */abc"]) == .startOver(.rangeNotSatisfiable), "an unreadable Content-Range")
        #expect(answer([:], length: nil) == .startOver(.rangeNotSatisfiable), "no length known at all")
    }

    @Test func aFourSixteenWithoutContentRangeTrustsTheRecordedLength() {
        var complete = resuming(from: 1000, record: record(length: 1000))
        #expect(complete.receivedHead(status: 416, headers: [:]) == .alreadyComplete(length: 1000))
        var unknown = resuming(from: 400, record: record(length: nil))
        #expect(unknown.receivedHead(status: 416, headers: [:]) == .startOver(.rangeNotSatisfiable))
    }

    @Test func rangeStatusesToAPlainRequestFail() {
        var machine = Machine(url: url)
        _ = machine.start(partialLength: 0, record: nil)
        #expect(machine.receivedHead(status: 206, headers: [.contentRange: "bytes 0-9/10"]) == .fail(.unexpectedStatus(206)))
        var other = Machine(url: url)
        _ = other.start(partialLength: 0, record: nil)
        #expect(other.receivedHead(status: 416, headers: [:]) == .fail(.unexpectedStatus(416)))
        #expect(Machine.Failure.unexpectedStatus(416).keepsPartial)
        #expect(!Machine.Failure.lengthMismatch(expected: 1, actual: 2).keepsPartial)
    }

    // MARK: whole runs

    @Test func aResumedDownloadAppendsAndCompletes() {
        var machine = resuming()
        guard case .append(let record) = machine.receivedHead(status: 206, headers: [.contentRange: "bytes 400-999/1000"]) else {
            Issue.record("not appended"); return
        }
        #expect(record.bytesOnDisk == 400)
        machine.wroteBytes(300)
        #expect(machine.record?.bytesOnDisk == 700)
        machine.wroteBytes(300)
        #expect(machine.bodyComplete() == .complete(length: 1000))
    }

    @Test func startingOverThenAPlainTwoHundredWritesFromTheStart() {
        var machine = resuming()
        #expect(machine.receivedHead(status: 206, headers: [.contentRange: "bytes 0-999/1000"]) == .startOver(.contentRangeMismatch))
        #expect(machine.record == nil)
        let fresh = ResumeRecord(url: url, entityTag: "\"v1\"", completeLength: 1000, bytesOnDisk: 0)
        #expect(machine.receivedHead(status: 200, headers: [.eTag: "\"v1\"", .contentLength: "1000"])
            == .writeFromStart(record: fresh, replacing: nil))
        machine.wroteBytes(1000)
        #expect(machine.bodyComplete() == .complete(length: 1000))
    }

    @Test func aShortRangeAsksForTheRest() {
        var machine = resuming()
        _ = machine.receivedHead(status: 206, headers: [.contentRange: "bytes 400-599/1000"])
        machine.wroteBytes(200)
        #expect(machine.bodyComplete() == .sendRequest(extraHeaders: range(600, "\"v1\""), resumeOffset: 600))
        #expect(machine.receivedHead(status: 206, headers: [.contentRange: "bytes 600-999/1000"]) != .startOver(.contentRangeMismatch))
        machine.wroteBytes(400)
        #expect(machine.bodyComplete() == .complete(length: 1000))
    }

    @Test func aBodyLongerOrShorterThanAnnouncedFails() {
        var longer = Machine(url: url)
        _ = longer.start(partialLength: 0, record: nil)
        _ = longer.receivedHead(status: 200, headers: [.contentLength: "10"])
        longer.wroteBytes(11)
        #expect(longer.bodyComplete() == .fail(.lengthMismatch(expected: 10, actual: 11)))

        var empty = resuming()
        _ = empty.receivedHead(status: 206, headers: [.contentRange: "bytes 400-999/1000"])
        #expect(empty.bodyComplete() == .fail(.lengthMismatch(expected: 1000, actual: 400)))
    }

    @Test func aTwoHundredWithoutLengthCompletesWithWhatCame() {
        var machine = Machine(url: url)
        _ = machine.start(partialLength: 0, record: nil)
        _ = machine.receivedHead(status: 200, headers: [:])
        machine.wroteBytes(12345)
        #expect(machine.bodyComplete() == .complete(length: 12345))
    }

    @Test func anInterruptedDownloadKeepsWhatCanBeResumed() {
        var machine = Machine(url: url)
        _ = machine.start(partialLength: 0, record: nil)
        _ = machine.receivedHead(status: 200, headers: [.eTag: "\"v1\"", .contentLength: "1000"])
        machine.wroteBytes(250)
        #expect(machine.interrupted() == .keepPartial(record: record(length: 1000, onDisk: 250)))

        var unvalidated = Machine(url: url)
        _ = unvalidated.start(partialLength: 0, record: nil)
        _ = unvalidated.receivedHead(status: 200, headers: [.contentLength: "1000"])
        unvalidated.wroteBytes(250)
        #expect(unvalidated.interrupted() == .discardPartial)

        var beforeAnyResponse = resuming()
        #expect(beforeAnyResponse.interrupted() == .keepPartial(record: record(onDisk: 400)))
    }

    // MARK: validators (§8.8.2.2, §8.8.3)

    @Test func recordsKeepOnlyValidatorsIfRangeMayCarry() {
        let strongDate: HTTPFields = [.lastModified: "Tue, 01 Oct 2024 10:00:00 GMT", .date: "Tue, 01 Oct 2024 10:00:01 GMT"]
        #expect(ResumeValidators.record(url: url, headers: strongDate)?.lastModified == "Tue, 01 Oct 2024 10:00:00 GMT")
        let sameSecond: HTTPFields = [.lastModified: "Tue, 01 Oct 2024 10:00:00 GMT", .date: "Tue, 01 Oct 2024 10:00:00 GMT"]
        #expect(ResumeValidators.record(url: url, headers: sameSecond) == nil)
        #expect(ResumeValidators.record(url: url, headers: [.lastModified: "Tue, 01 Oct 2024 10:00:00 GMT"]) == nil)
        #expect(ResumeValidators.record(url: url, headers: [.eTag: "W/\"x\""]) == nil)
        #expect(ResumeValidators.record(url: url, headers: [.eTag: "\"x\"", .contentEncoding: "gzip"]) == nil)
        #expect(ResumeValidators.record(url: url, headers: [.eTag: "\"x\"", .contentLength: "42"])?.completeLength == 42)
        #expect(ResumeValidators.strongMatch("\"a\"", "\"a\""))
        // §8.8.3: one opaque-tag, nothing else.
        for notOne in ["\"a\", W/\"b\"", "\"a", "\"", "a", "\"a b\"", "\"a\"\"b\"", "W/\"a\""] {
            #expect(!ResumeValidators.isStrong(notOne), "\(notOne)")
        }
        #expect(ResumeValidators.isStrong("\"\""), "the empty opaque-tag is one")
        var combined = HTTPFields()
        combined.append(HTTPField(name: .eTag, value: "\"a\""))
        combined.append(HTTPField(name: .eTag, value: "W/\"b\""))
        #expect(ResumeValidators.record(url: url, headers: combined) == nil, "two ETag fields: no single validator")
        #expect(!ResumeValidators.strongMatch("W/\"a\"", "W/\"a\""))
        #expect(Machine.unsatisfiedLength("bytes */1234") == 1234)
        #expect(Machine.unsatisfiedLength("bytes 0-1/2") == nil)
    }
}
