import Foundation
import Testing
@testable import Courier

/// Tier 1: when a stored response may answer after a failure (RFC 9111 §4.2.4, RFC 5861 §4), and
/// the application's own conditions evaluated on a stored response (§4.3.2).
@Suite("Cache: stale answers after failures, conditional requests (RFC 9111 §4.2.4, §4.3.2)")
struct CacheStaleServingTests {
    struct FallbackCase: Sendable, CustomTestStringConvertible {
        var description: String
        var headers: [(String, String)]
        var requestHeaders: [(String, String)] = []
        var now: Double
        var failure: CacheStaleServing.Failure = .disconnected
        var onAnyError = false
        var whenDisconnected = true
        var expected: Bool
        var testDescription: String { description }
    }

    static func control(_ value: String) -> (String, String) { ("Cache-Control", value) }

    static let fallbackCases: [FallbackCase] = [
        .init(description: "§4.2.4 disconnected: a stale response may be served (the default)",
              headers: [control("max-age=10")], now: 100, expected: true),
        .init(description: "§4.2.4 disconnected, turned off: not served",
              headers: [control("max-age=10")], now: 100, whenDisconnected: false, expected: false),
        .init(description: "§4.2.4 a server error is not a disconnection",
              headers: [control("max-age=10")], now: 100, failure: .error, expected: false),
        .init(description: "§4.2.4 fallsBackToCacheOnError covers server errors",
              headers: [control("max-age=10")], now: 100, failure: .error, onAnyError: true, expected: true),
        .init(description: "§5.2.2.2 must-revalidate forbids a stale answer, disconnected",
              headers: [control("max-age=10, must-revalidate")], now: 100, expected: false),
        .init(description: "§5.2.2.2 must-revalidate forbids a stale answer, fallsBackToCacheOnError",
              headers: [control("max-age=10, must-revalidate")], now: 100, failure: .error, onAnyError: true, expected: false),
        .init(description: "§5.2.2.2 must-revalidate allows the response while still fresh",
              headers: [control("max-age=1000, must-revalidate")], requestHeaders: [], now: 100, expected: true),
        .init(description: "§5.2.2.4 no-cache forbids it, fresh or stale",
              headers: [control("max-age=1000, no-cache")], now: 100, onAnyError: true, expected: false),
        .init(description: "§5.2.2.4 qualified no-cache (field names) forbids it too",
              headers: [control("max-age=10, no-cache=\"Set-Cookie\"")], now: 100, expected: false),
        .init(description: "§5.2.2.8 proxy-revalidate binds shared caches only",
              headers: [control("max-age=10, proxy-revalidate")], now: 100, expected: true),
        .init(description: "§5.2.2.10 s-maxage=0 binds shared caches only",
              headers: [control("max-age=10, s-maxage=0")], now: 100, expected: true),
        .init(description: "RFC 5861 §4 a stale-if-error window that ran out forbids it, however allowed",
              headers: [control("max-age=10, stale-if-error=30")], now: 100, onAnyError: true, expected: false),
        .init(description: "RFC 5861 §4 within stale-if-error a server error is answered stale",
              headers: [control("max-age=10, stale-if-error=300")], now: 100, failure: .error, expected: true),
        .init(description: "§5.2.1.4 the request's no-cache refuses it",
              headers: [control("max-age=10")], requestHeaders: [control("no-cache")], now: 100, expected: false),
        .init(description: "§5.4 the request's Pragma: no-cache refuses it",
              headers: [control("max-age=10")], requestHeaders: [("Pragma", "no-cache")], now: 100, expected: false),
        .init(description: "§5.2.1.1 the request's max-age refuses an older response",
              headers: [control("max-age=10")], requestHeaders: [control("max-age=50")], now: 100, expected: false),
        .init(description: "§5.2.1.3 the request's min-fresh refuses a stale response",
              headers: [control("max-age=10")], requestHeaders: [control("min-fresh=1")], now: 100, expected: false),
        .init(description: "§5.2.1.2 the request's max-stale limit refuses more staleness",
              headers: [control("max-age=10")], requestHeaders: [control("max-stale=30")], now: 100, expected: false),
        .init(description: "§5.2.1.2 within the request's max-stale it is served",
              headers: [control("max-age=10")], requestHeaders: [control("max-stale=300")], now: 100, expected: true),
    ]

    @Test(arguments: fallbackCases)
    func fallback(_ testCase: FallbackCase) {
        let entry = CacheStoredSpec(headers: testCase.headers).entry()
        let allowed = CacheStaleServing.mayServeAfterFailure(
            entry, requestHeaders: CacheFixture.fields(testCase.requestHeaders), now: CacheFixture.time(testCase.now),
            failure: testCase.failure,
            allowance: .init(onAnyError: testCase.onAnyError, whenDisconnected: testCase.whenDisconnected))
        #expect(allowed == testCase.expected)
    }

    struct ConditionCase: Sendable, CustomTestStringConvertible {
        var description: String
        var stored: [(String, String)]
        var request: [(String, String)]
        var notModified: Bool
        var testDescription: String { description }
    }

    static let conditionCases: [ConditionCase] = [
        .init(description: "RFC 9110 §13.1.2 If-None-Match: the same strong tag", stored: [("ETag", "\"a\"")], request: [("If-None-Match", "\"a\"")], notModified: true),
        .init(description: "RFC 9110 §13.1.2 If-None-Match uses weak comparison (W/ on either side)", stored: [("ETag", "W/\"a\"")], request: [("If-None-Match", "\"a\"")], notModified: true),
        .init(description: "RFC 9110 §13.1.2 If-None-Match: one of several tags", stored: [("ETag", "\"b\"")], request: [("If-None-Match", "\"a\", \"b\"")], notModified: true),
        .init(description: "RFC 9110 §13.1.2 If-None-Match: another tag", stored: [("ETag", "\"a\"")], request: [("If-None-Match", "\"b\"")], notModified: false),
        .init(description: "RFC 9110 §13.1.2 If-None-Match: * matches any stored response", stored: [], request: [("If-None-Match", "*")], notModified: true),
        .init(description: "RFC 9110 §13.1.2 If-None-Match without a stored ETag", stored: [], request: [("If-None-Match", "\"a\"")], notModified: false),
        .init(description: "RFC 9110 §13.2.2 If-None-Match wins over If-Modified-Since",
              stored: [("ETag", "\"a\""), ("Last-Modified", CacheFixture.httpDate(-100))],
              request: [("If-None-Match", "\"b\""), ("If-Modified-Since", CacheFixture.httpDate(0))], notModified: false),
        .init(description: "§4.3.2 If-Modified-Since against Last-Modified: not modified since",
              stored: [("Last-Modified", CacheFixture.httpDate(-100))], request: [("If-Modified-Since", CacheFixture.httpDate(-100))], notModified: true),
        .init(description: "§4.3.2 If-Modified-Since against Last-Modified: modified since",
              stored: [("Last-Modified", CacheFixture.httpDate(-100))], request: [("If-Modified-Since", CacheFixture.httpDate(-200))], notModified: false),
        .init(description: "§4.3.2 If-Modified-Since without Last-Modified uses Date",
              stored: [("Date", CacheFixture.httpDate(-50))], request: [("If-Modified-Since", CacheFixture.httpDate(-10))], notModified: true),
        .init(description: "RFC 9110 §13.1.3 an invalid If-Modified-Since is ignored",
              stored: [("Last-Modified", CacheFixture.httpDate(-100))], request: [("If-Modified-Since", "not a date")], notModified: false),
    ]

    @Test(arguments: conditionCases)
    func conditions(_ testCase: ConditionCase) {
        let entry = CacheStoredSpec(headers: testCase.stored).entry()
        #expect(CacheConditions.isNotModified(entry, requestHeaders: CacheFixture.fields(testCase.request)) == testCase.notModified)
    }
}
