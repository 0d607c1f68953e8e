import Foundation
import Testing
@testable import Courier

@Suite("Cache: validation and 304 handling (RFC 9111 §4.3, §3.2)")
struct CacheRevalidationTests {
    struct MergeCase: Sendable, CustomTestStringConvertible {
        var description: String
        var stored: [(String, String)]
        var notModified: [(String, String)]
        /// The merged fields as "name: value", sorted.
        var expected: [String]
        var testDescription: String { description }
    }

    static let mergeCases: [MergeCase] = [
        .init(description: "§4.3.4 fields of the 304 replace the stored ones",
              stored: [("Cache-Control", "max-age=60"), ("ETag", "\"a\""), ("X-A", "1")],
              notModified: [("Cache-Control", "max-age=120"), ("ETag", "\"a\"")],
              expected: ["cache-control: max-age=120", "etag: \"a\"", "x-a: 1"]),
        .init(description: "§4.3.4 fields absent from the 304 are kept",
              stored: [("Content-Type", "text/plain"), ("X-Keep", "1")], notModified: [("X-New", "2")],
              expected: ["content-type: text/plain", "x-keep: 1", "x-new: 2"]),
        .init(description: "§4.3.4 all stored lines of a name are replaced",
              stored: [("X-Multi", "a"), ("X-Multi", "b")], notModified: [("X-Multi", "c")], expected: ["x-multi: c"]),
        .init(description: "§3.2 Content-Length is never updated",
              stored: [("Content-Length", "100")], notModified: [("Content-Length", "0")], expected: ["content-length: 100"]),
        .init(description: "§3.2 Content-Encoding and Content-Type are kept (the stored content depends on them)",
              stored: [("Content-Encoding", "gzip"), ("Content-Type", "text/html")],
              notModified: [("Content-Encoding", "br"), ("Content-Type", "application/json")],
              expected: ["content-encoding: gzip", "content-type: text/html"]),
        .init(description: "§3.2 Content-Range is not updated", stored: [],
              notModified: [("Content-Range", "bytes 0-1/2")], expected: []),
        .init(description: "§3.2 fields excepted from storage (§3.1) are not merged",
              stored: [("X-A", "1")],
              notModified: [("Connection", "X-Secret"), ("X-Secret", "s"), ("Keep-Alive", "timeout=5"),
                            ("Proxy-Authenticate", "Basic"), ("Transfer-Encoding", "chunked")],
              expected: ["x-a: 1"]),
        .init(description: "§4.3.4 a new Date and Expires replace the stored ones",
              stored: [("Date", "Sun, 06 Nov 1994 08:49:37 GMT"), ("Expires", "0")],
              notModified: [("Date", "Sun, 06 Nov 1994 09:49:37 GMT"), ("Expires", "Sun, 06 Nov 1994 10:49:37 GMT")],
              expected: ["date: Sun, 06 Nov 1994 09:49:37 GMT", "expires: Sun, 06 Nov 1994 10:49:37 GMT"]),
        .init(description: "§4.2.3 the old response's Age goes when the 304 carries none (age_value pairs with the 304's times)",
              stored: [("Age", "5"), ("X-A", "1")], notModified: [("X-B", "2")], expected: ["x-a: 1", "x-b: 2"]),
        .init(description: "§4.3.4 the 304's Age replaces the stored one",
              stored: [("Age", "5")], notModified: [("Age", "3")], expected: ["age: 3"]),
    ]

    @Test(arguments: mergeCases)
    func mergesNotModified(_ testCase: MergeCase) {
        let stored = CacheStoredSpec(headers: testCase.stored, withDate: false).entry()
        let merged = CacheRevalidation.merge(stored: stored, notModified: CacheFixture.fields(testCase.notModified),
                                             requestTime: CacheFixture.time(100), responseTime: CacheFixture.time(101))
        #expect(CacheFixture.normalizedPairs(merged.headers) == testCase.expected)
        #expect(merged.body == stored.body)
        #expect(merged.status == stored.status)
    }

    @Test("§4.3.4 a 304 restarts the age from the validating exchange")
    func mergeRestartsAge() {
        let stored = CacheStoredSpec(headers: [("Cache-Control", "max-age=60"), ("ETag", "\"a\"")]).entry()
        #expect(CacheFreshness.evaluate(stored, now: CacheFixture.time(100)).isFresh == false)
        let merged = CacheRevalidation.merge(
            stored: stored, notModified: CacheFixture.fields([("Date", CacheFixture.httpDate(99)), ("ETag", "\"a\"")]),
            requestTime: CacheFixture.time(98), responseTime: CacheFixture.time(99)
        )
        #expect(merged.requestTime == CacheFixture.time(98))
        #expect(merged.responseTime == CacheFixture.time(99))
        let evaluation = CacheFreshness.evaluate(merged, now: CacheFixture.time(100))
        #expect(evaluation.age == 2)
        #expect(evaluation.isFresh)
    }

    struct SelectCase: Sendable, CustomTestStringConvertible {
        var description: String
        /// Each stored response's validator fields (a Date at its response offset is added).
        var candidates: [[(String, String)]]
        /// Response offsets, by candidate (defaults to 0 for all).
        var offsets: [Double] = []
        var notModified: [(String, String)]
        var expected: [Int]
        var testDescription: String { description }
    }

    static let lm = "Sat, 05 Nov 1994 08:49:37 GMT"

    static let selectCases: [SelectCase] = [
        .init(description: "§4.3.4 a strong ETag selects every stored response with that strong tag",
              candidates: [[("ETag", "\"a\"")], [("ETag", "\"b\"")], [("ETag", "\"a\"")]],
              notModified: [("ETag", "\"a\"")], expected: [0, 2]),
        .init(description: "§4.3.4 a strong ETag matching nothing updates nothing",
              candidates: [[("ETag", "\"a\"")]], notModified: [("ETag", "\"z\"")], expected: []),
        .init(description: "RFC 9110 §8.8.3.2 a strong ETag never matches a weak stored one",
              candidates: [[("ETag", "W/\"a\"")]], notModified: [("ETag", "\"a\"")], expected: []),
        .init(description: "§4.3.4 a weak ETag selects the most recent weak match",
              candidates: [[("ETag", "W/\"a\"")], [("ETag", "\"a\"")], [("ETag", "\"b\"")]], offsets: [-100, -10, 0],
              notModified: [("ETag", "W/\"a\"")], expected: [1]),
        .init(description: "§4.3.4 a strong Last-Modified selects every stored response with it",
              candidates: [[("Last-Modified", lm)], [("Last-Modified", lm)], [("Last-Modified", "Fri, 04 Nov 1994 08:49:37 GMT")]],
              notModified: [("Last-Modified", lm)], expected: [0, 1]),
        .init(description: "§4.3.4 a weak Last-Modified (Date not a second later) selects the most recent match",
              candidates: [[("Last-Modified", lm), ("Date", lm)], [("Last-Modified", lm), ("Date", lm)]],
              notModified: [("Last-Modified", lm)], expected: [1]),
        .init(description: "§4.3.4 no validator: the only stored response, itself without validator",
              candidates: [[]], notModified: [("Cache-Control", "max-age=5")], expected: [0]),
        .init(description: "§4.3.4 no validator: not a stored response that has one",
              candidates: [[("ETag", "\"a\"")]], notModified: [], expected: []),
        .init(description: "§4.3.4 no validator: nothing when several are stored",
              candidates: [[], []], notModified: [], expected: []),
    ]

    @Test(arguments: selectCases)
    func selectsForNotModified(_ testCase: SelectCase) {
        let entries = testCase.candidates.enumerated().map { index, headers in
            let offset = index < testCase.offsets.count ? testCase.offsets[index] : 0
            return CacheStoredSpec(body: "\(index)", headers: headers, responseOffset: offset).entry()
        }
        // The weak Last-Modified case stores two identical Dates; make the second later by response time.
        let adjusted = entries.enumerated().map { index, entry in
            var entry = entry
            entry.responseTime = entry.responseTime.addingTimeInterval(Double(index))
            return entry
        }
        let selected = CacheRevalidation.selectStoredForNotModified(adjusted, notModified: CacheFixture.fields(testCase.notModified))
        #expect(selected == testCase.expected)
    }
}
