import Foundation
import Testing
@testable import Courier

@Suite("Cache: malformed input is tolerated (RFC 9111 §4.2.1, §5.2; RFC 9110 §5.6)")
struct CacheRobustnessTests {
    /// Hostile or broken field values; each is put in every field the cache reads.
    static let malformedValues: [String] = [
        "", " ", ",,,", "=", "\"", "\"\\", "\\", "max-age=", "max-age=-0", "max-age=+5", "max-age=0x10",
        "max-age=1e3", "max-age=" + String(repeating: "9", count: 400), "no-cache=\"unterminated",
        "a=\"b\\\"c\", d", "*", "*, *", "W/", "W/\"", "\"\"", "Sun, 06 Nov 1994", "Sun, 99 Nov 1994 99:99:99 GMT",
        "Sunday, 06-Nov-94 08:49:37", "Sun Nov 06 08:49:37", "Thu, 01 Jan 0000 00:00:00 GMT",
        "Fri, 31 Dec 9999 23:59:59 GMT", "-1", "18446744073709551616", "é, ü, 🙂", "\u{301}=\u{301}",
        "http://[::1", "//", "?", "#", "%zz", "javascript:alert(1)", "../../../../..",
        String(repeating: "a,", count: 2_000),
    ]

    static let fieldNames = [
        "Cache-Control", "Pragma", "Expires", "Date", "Age", "Last-Modified", "ETag", "Vary", "Connection",
        "Location", "Content-Location", "Authorization",
    ]

    @Test("§4.2.1 §5.2 malformed values in any cache-relevant field never crash the core", arguments: malformedValues)
    func malformedValue(_ value: String) {
        let pairs = Self.fieldNames.map { ($0, value) }
        Self.exerciseEverything(responsePairs: pairs, requestPairs: pairs)
    }

    @Test("§5.2 a deterministic stream of random field values never crashes the core")
    func randomValues() {
        var generator = SplitMix64(seed: 0x5EED_CACE)
        let alphabet = Array("=,; \t\"\\-+0123456789maxgestorevlidcnpubW/*GMTSunNov:.?#[]%é")
        for _ in 0..<300 {
            var pairs: [(String, String)] = []
            for name in Self.fieldNames where generator.next() % 2 == 0 {
                let length = Int(generator.next() % 40)
                pairs.append((name, String((0..<length).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] })))
            }
            Self.exerciseEverything(responsePairs: pairs, requestPairs: pairs.shuffled(using: &generator))
        }
    }

    /// Runs every entry point of the cache core on the given fields and checks basic invariants.
    static func exerciseEverything(responsePairs: [(String, String)], requestPairs: [(String, String)]) {
        let requestHeaders = CacheFixture.fields(requestPairs)
        let responseHeaders = CacheFixture.fields(responsePairs)
        _ = CacheControl(requestHeaders: requestHeaders)
        _ = CacheStorability.verdict(requestMethod: .get, requestHeaders: requestHeaders, status: .ok, responseHeaders: responseHeaders)
        let entry = CachedResponseEntry.storing(
            url: CacheFixture.makeURL(CacheFixture.url), requestHeaders: requestHeaders, status: .ok,
            responseHeaders: responseHeaders, body: Data(), requestTime: CacheFixture.time(-1), responseTime: CacheFixture.time(0)
        )
        let evaluation = CacheFreshness.evaluate(entry, now: CacheFixture.time(30))
        #expect((0...CacheHeaderSyntax.deltaSecondsCap).contains(evaluation.lifetime))
        #expect((0...CacheHeaderSyntax.deltaSecondsCap).contains(evaluation.age))
        let request = CacheLookup.Request(url: entry.url, headers: requestHeaders)
        for policy in [CacheLookupPolicy.useProtocol, .returnCacheElseLoad, .cacheOnly, .reloadIgnoringCache, .reloadRevalidating] {
            _ = CacheLookup.decide(request, candidates: [entry, entry], now: CacheFixture.time(30), policy: policy)
        }
        _ = CacheLookup.staleIfError(entry: entry, now: CacheFixture.time(30), requestHeaders: requestHeaders)
        _ = CacheRevalidation.merge(stored: entry, notModified: responseHeaders, requestTime: CacheFixture.time(40),
                                    responseTime: CacheFixture.time(41))
        _ = CacheRevalidation.selectStoredForNotModified([entry, entry], notModified: responseHeaders)
        _ = CacheInvalidation.invalidatedKeys(method: .post, requestURL: entry.url, status: .ok, responseHeaders: responseHeaders)
        #expect(CacheServedHeaders.headers(for: entry, age: evaluation.age)[values: .age] == [String(evaluation.age)])
    }
}
