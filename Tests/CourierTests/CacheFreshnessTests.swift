import Foundation
import Testing
@testable import Courier

@Suite("Cache: freshness and age (RFC 9111 §4.2)")
struct CacheFreshnessTests {
    static func date(_ offset: Double) -> String { CacheFixture.httpDate(offset) }

    struct LifetimeCase: Sendable, CustomTestStringConvertible {
        var description: String
        var status = 200
        var headers: [(String, String)]
        /// When the response arrived, relative to the base time (the Date in most cases).
        var responseOffset: Double = 0
        var cap = CacheFreshness.defaultHeuristicCap
        var expected: Int
        var testDescription: String { description }
    }

    static let lifetimeCases: [LifetimeCase] = [
        .init(description: "§4.2.1 max-age wins over Expires",
              headers: [("Date", date(0)), ("Cache-Control", "max-age=60"), ("Expires", date(3600))], expected: 60),
        .init(description: "§4.2.1 s-maxage is ignored by a private cache",
              headers: [("Date", date(0)), ("Cache-Control", "s-maxage=600, max-age=60")], expected: 60),
        .init(description: "§4.2.1 s-maxage alone gives no freshness to a private cache",
              headers: [("Date", date(0)), ("Cache-Control", "s-maxage=600")], expected: 0),
        .init(description: "§4.2.1 Expires minus Date", headers: [("Date", date(0)), ("Expires", date(100))], expected: 100),
        .init(description: "§4.2.1 Expires minus Date, not minus the response time",
              headers: [("Date", date(-30)), ("Expires", date(100))], responseOffset: 0, expected: 130),
        .init(description: "§4.2.1 Expires minus the response time when Date is missing",
              headers: [("Expires", date(100))], responseOffset: 10, expected: 90),
        .init(description: "§4.2.1 Expires minus the response time when Date is invalid",
              headers: [("Date", "yesterday"), ("Expires", date(100))], responseOffset: 40, expected: 60),
        .init(description: "§4.2.1 Expires in RFC 850 format",
              headers: [("Date", "Sun, 06 Nov 1994 08:49:37 GMT"), ("Expires", "Sunday, 06-Nov-94 08:50:37 GMT")], expected: 60),
        .init(description: "§5.3 an invalid Expires (\"0\") means already expired, and no heuristic",
              headers: [("Date", date(0)), ("Expires", "0"), ("Last-Modified", date(-100_000))], expected: 0),
        .init(description: "§5.3 an Expires in the past means stale",
              headers: [("Date", date(0)), ("Expires", date(-10))], expected: 0),
        .init(description: "§4.2.1 two different Expires lines mean stale",
              headers: [("Date", date(0)), ("Expires", date(100)), ("Expires", date(200))], expected: 0),
        .init(description: "§4.2.1 an invalid max-age means stale, even with a later Expires",
              headers: [("Date", date(0)), ("Cache-Control", "max-age=soon"), ("Expires", date(100))], expected: 0),
        .init(description: "§4.2.1 conflicting max-age directives mean stale",
              headers: [("Date", date(0)), ("Cache-Control", "max-age=60, max-age=120")], expected: 0),
        .init(description: "§1.2.2 a huge max-age is 2^31",
              headers: [("Cache-Control", "max-age=100000000000")], expected: 2_147_483_648),
        .init(description: "§4.2.2 heuristic: 10% of Date minus Last-Modified",
              headers: [("Date", date(0)), ("Last-Modified", date(-1000))], expected: 100),
        .init(description: "§4.2.2 heuristic is capped at 24 hours by default",
              headers: [("Date", date(0)), ("Last-Modified", date(-100 * 86_400))], expected: 86_400),
        .init(description: "§4.2.2 heuristic cap is a parameter",
              headers: [("Date", date(0)), ("Last-Modified", date(-1000))], cap: 50, expected: 50),
        .init(description: "§4.2.2 heuristic uses the response time when Date is missing",
              headers: [("Last-Modified", date(-2000))], responseOffset: 0, expected: 200),
        .init(description: "§4.2.2 no heuristic for a status that is not heuristically cacheable", status: 302,
              headers: [("Date", date(0)), ("Last-Modified", date(-1000))], expected: 0),
        .init(description: "§4.2.2 heuristic for a public response of any status", status: 302,
              headers: [("Date", date(0)), ("Cache-Control", "public"), ("Last-Modified", date(-1000))], expected: 100),
        .init(description: "§4.2.2 heuristic for a 404", status: 404,
              headers: [("Date", date(0)), ("Last-Modified", date(-1000))], expected: 100),
        .init(description: "§4.2.2 no heuristic without Last-Modified", headers: [("Date", date(0))], expected: 0),
        .init(description: "§4.2.2 no heuristic when Last-Modified is after Date",
              headers: [("Date", date(0)), ("Last-Modified", date(500))], expected: 0),
        .init(description: "§4.2.2 no heuristic when Last-Modified is invalid",
              headers: [("Date", date(0)), ("Last-Modified", "last tuesday")], expected: 0),
    ]

    @Test(arguments: lifetimeCases)
    func computesLifetime(_ testCase: LifetimeCase) {
        let lifetime = CacheFreshness.freshnessLifetime(
            status: HTTPResponse.Status(code: testCase.status),
            headers: CacheFixture.fields(testCase.headers),
            responseTime: CacheFixture.time(testCase.responseOffset),
            heuristicCap: testCase.cap
        )
        #expect(lifetime == testCase.expected)
    }

    struct AgeCase: Sendable, CustomTestStringConvertible {
        var description: String
        var headers: [(String, String)]
        var requestOffset: Double = 0
        var responseOffset: Double = 0
        var now: Double
        var expected: Int
        var testDescription: String { description }
    }

    static let ageCases: [AgeCase] = [
        .init(description: "§4.2.3 resident time alone", headers: [("Date", date(0))], now: 30, expected: 30),
        .init(description: "§4.2.3 corrected age: Age plus response delay",
              headers: [("Date", date(0)), ("Age", "10")], requestOffset: -2, now: 0, expected: 12),
        .init(description: "§4.2.3 apparent age: response time minus Date",
              headers: [("Date", date(-50))], now: 10, expected: 60),
        .init(description: "§4.2.3 the larger of apparent and corrected age",
              headers: [("Date", date(-5)), ("Age", "20")], requestOffset: -1, now: 0, expected: 21),
        .init(description: "§4.2.3 a Date in the future gives an apparent age of 0",
              headers: [("Date", date(100))], now: 10, expected: 10),
        .init(description: "§4.2.3 a missing Date uses the response time",
              headers: [], requestOffset: 5, responseOffset: 5, now: 12, expected: 7),
        .init(description: "§5.1 a negative Age is ignored", headers: [("Date", date(0)), ("Age", "-5")], now: 3, expected: 3),
        .init(description: "§5.1 a non-numeric Age is ignored", headers: [("Date", date(0)), ("Age", "old")], now: 3, expected: 3),
        .init(description: "§5.1 a list-valued Age uses its first member",
              headers: [("Date", date(0)), ("Age", "30, 50")], now: 0, expected: 30),
        .init(description: "§5.1 of several Age lines the first is used",
              headers: [("Date", date(0)), ("Age", "7"), ("Age", "70")], now: 0, expected: 7),
        .init(description: "§1.2.2 an Age over 2^31 is capped at 2^31",
              headers: [("Date", date(0)), ("Age", "99999999999999")], now: 100, expected: 2_147_483_648),
        .init(description: "§4.2.3 partial seconds are dropped", headers: [("Date", date(0))], now: 9.9, expected: 9),
        .init(description: "§4.2.3 a clock before the response time never gives a negative age",
              headers: [("Date", date(0))], now: -60, expected: 0),
    ]

    @Test(arguments: ageCases)
    func computesAge(_ testCase: AgeCase) {
        let age = CacheFreshness.currentAge(
            headers: CacheFixture.fields(testCase.headers),
            requestTime: CacheFixture.time(testCase.requestOffset),
            responseTime: CacheFixture.time(testCase.responseOffset),
            now: CacheFixture.time(testCase.now)
        )
        #expect(age == testCase.expected)
    }
}
