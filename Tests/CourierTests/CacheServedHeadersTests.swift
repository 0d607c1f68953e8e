import Foundation
import Testing
@testable import Courier

@Suite("Cache: serving stored responses (RFC 9111 §5.1)")
struct CacheServedHeadersTests {
    struct AgeCase: Sendable, CustomTestStringConvertible {
        var description: String
        var stored: [(String, String)]
        var age: Int
        var expected: [String]
        var testDescription: String { description }
    }

    static let cases: [AgeCase] = [
        .init(description: "§5.1 Age is added to a served response",
              stored: [("Content-Type", "text/plain")], age: 42, expected: ["age: 42", "content-type: text/plain"]),
        .init(description: "§5.1 a stored Age is replaced, every line of it",
              stored: [("Age", "100"), ("Age", "7"), ("ETag", "\"e\"")], age: 3, expected: ["age: 3", "etag: \"e\""]),
        .init(description: "§1.2.2 Age is capped at 2147483648", stored: [], age: Int.max, expected: ["age: 2147483648"]),
        .init(description: "§5.1 Age is never negative", stored: [], age: -5, expected: ["age: 0"]),
        .init(description: "§5.1 an age of 0 is sent", stored: [("Cache-Control", "max-age=1")], age: 0,
              expected: ["age: 0", "cache-control: max-age=1"]),
    ]

    @Test(arguments: cases)
    func setsAge(_ testCase: AgeCase) {
        let entry = CacheStoredSpec(headers: testCase.stored, withDate: false).entry()
        let served = CacheServedHeaders.headers(for: entry, age: testCase.age)
        #expect(CacheFixture.normalizedPairs(served) == testCase.expected)
    }
}
