import Foundation
import Testing
@testable import Courier

@Suite("Cache: lookup decisions (RFC 9111 §4)")
struct CacheLookupTests {
    typealias Stored = CacheStoredSpec

    struct LookupCase: Sendable, CustomTestStringConvertible {
        var description: String
        var stored: [Stored]
        var method: HTTPRequest.Method = .get
        var url = CacheFixture.url
        var requestHeaders: [(String, String)] = []
        var partition: String?
        /// The lookup time, relative to the base time.
        var now: Double
        var policy: CacheLookupPolicy = .useProtocol
        var expected: CacheLookupOutcome
        var testDescription: String { description }
    }

    static let etag = ("ETag", "\"v1\"")
    static let lastModified = ("Last-Modified", "Sat, 05 Nov 1994 08:49:37 GMT")
    static func control(_ value: String) -> (String, String) { ("Cache-Control", value) }
    static func stored(_ headers: (String, String)...) -> [Stored] { [Stored(headers: headers)] }

    static let protocolCases: [LookupCase] = [
        .init(description: "§4.2 a fresh response is served with its age",
              stored: stored(control("max-age=60")), now: 10, expected: .fresh(age: 10)),
        .init(description: "§4.2 a stale response is validated",
              stored: stored(control("max-age=60"), etag), now: 100, expected: .revalidate(conditional: ["if-none-match: \"v1\""])),
        .init(description: "§4.2 at exactly its lifetime a response is stale",
              stored: stored(control("max-age=60"), etag), now: 60, expected: .revalidate(conditional: ["if-none-match: \"v1\""])),
        .init(description: "§4 nothing stored is a miss", stored: [], now: 0, expected: .miss),
        .init(description: "§4 a response for another URL does not match",
              stored: [Stored(headers: [control("max-age=60")], url: "https://example.com/other")], now: 0, expected: .miss),
        .init(description: "§4 URLs match after normalising host case and default port",
              stored: [Stored(headers: [control("max-age=60")], url: "https://EXAMPLE.com:443/r")], now: 1, expected: .fresh(age: 1)),
        .init(description: "§4 the query is part of the key",
              stored: [Stored(headers: [control("max-age=60")], url: "https://example.com/r?a=1")], now: 1, expected: .miss),
        .init(description: "§4.3.5 a HEAD is answered from a stored GET without its body",
              stored: stored(control("max-age=60")), method: .head, now: 5, expected: .fresh(age: 5, omitBody: true)),
        .init(description: "§4 a POST is never answered from the cache",
              stored: stored(control("max-age=60")), method: .post, now: 5, expected: .miss),
        .init(description: "§5.2.2.4 response no-cache forces validation even when fresh",
              stored: stored(control("max-age=600, no-cache"), etag), now: 1, expected: .revalidate(conditional: ["if-none-match: \"v1\""])),
        .init(description: "§5.2.2.4 response no-cache with field names also forces validation (private cache)",
              stored: stored(control("max-age=600, no-cache=\"Set-Cookie\""), etag), now: 1,
              expected: .revalidate(conditional: ["if-none-match: \"v1\""])),
        .init(description: "§5.2.1.4 request no-cache forces validation",
              stored: stored(control("max-age=600"), etag), requestHeaders: [control("no-cache")], now: 1,
              expected: .revalidate(conditional: ["if-none-match: \"v1\""])),
        .init(description: "§5.4 request Pragma: no-cache forces validation",
              stored: stored(control("max-age=600"), etag), requestHeaders: [("Pragma", "no-cache")], now: 1,
              expected: .revalidate(conditional: ["if-none-match: \"v1\""])),
        .init(description: "§5.4 Pragma is ignored when the request has Cache-Control",
              stored: stored(control("max-age=600")), requestHeaders: [control("max-stale=10"), ("Pragma", "no-cache")], now: 1,
              expected: .fresh(age: 1)),
        .init(description: "RFC 8246 immutable does not override request no-cache",
              stored: stored(control("max-age=600, immutable"), etag), requestHeaders: [control("no-cache")], now: 1,
              expected: .revalidate(conditional: ["if-none-match: \"v1\""])),
        .init(description: "RFC 8246 a stale immutable response is still validated",
              stored: stored(control("max-age=10, immutable"), etag), now: 20, expected: .revalidate(conditional: ["if-none-match: \"v1\""])),
        .init(description: "§5.2.1.1 request max-age exceeded forces validation",
              stored: stored(control("max-age=600"), etag), requestHeaders: [control("max-age=50")], now: 100,
              expected: .revalidate(conditional: ["if-none-match: \"v1\""])),
        .init(description: "§5.2.1.1 request max-age not exceeded serves fresh",
              stored: stored(control("max-age=600")), requestHeaders: [control("max-age=200")], now: 100, expected: .fresh(age: 100)),
        .init(description: "§5.2.1.1 an invalid request max-age reads as 0",
              stored: stored(control("max-age=600")), requestHeaders: [control("max-age=x")], now: 5, expected: .revalidate()),
        .init(description: "§5.2.1.3 min-fresh not met forces validation",
              stored: stored(control("max-age=100")), requestHeaders: [control("min-fresh=50")], now: 60, expected: .revalidate()),
        .init(description: "§5.2.1.3 min-fresh met serves fresh",
              stored: stored(control("max-age=100")), requestHeaders: [control("min-fresh=30")], now: 60, expected: .fresh(age: 60)),
        .init(description: "§5.2.1.2 max-stale without a value serves any staleness",
              stored: stored(control("max-age=10")), requestHeaders: [control("max-stale")], now: 100_000,
              expected: .stale(age: 100_000, background: false)),
        .init(description: "§5.2.1.2 max-stale within its value serves stale",
              stored: stored(control("max-age=10")), requestHeaders: [control("max-stale=30")], now: 30,
              expected: .stale(age: 30, background: false)),
        .init(description: "§5.2.1.2 max-stale exceeded forces validation",
              stored: stored(control("max-age=10")), requestHeaders: [control("max-stale=5")], now: 30, expected: .revalidate()),
        .init(description: "§5.2.2.2 must-revalidate forbids serving stale under max-stale",
              stored: stored(control("max-age=10, must-revalidate")), requestHeaders: [control("max-stale")], now: 30,
              expected: .revalidate()),
        .init(description: "§5.2.2.8 proxy-revalidate does not bind a private cache",
              stored: stored(control("max-age=10, proxy-revalidate")), requestHeaders: [control("max-stale")], now: 30,
              expected: .stale(age: 30, background: false)),
        .init(description: "RFC 5861 §3 within stale-while-revalidate: serve stale, revalidate in background",
              stored: stored(control("max-age=10, stale-while-revalidate=60")), now: 30, expected: .stale(age: 30, background: true)),
        .init(description: "RFC 5861 §3 at the edge of the stale-while-revalidate window",
              stored: stored(control("max-age=10, stale-while-revalidate=60")), now: 70, expected: .stale(age: 70, background: true)),
        .init(description: "RFC 5861 §3 past the stale-while-revalidate window: validate",
              stored: stored(control("max-age=10, stale-while-revalidate=60")), now: 71, expected: .revalidate()),
        .init(description: "§5.2.2.2 must-revalidate forbids stale-while-revalidate",
              stored: stored(control("max-age=10, stale-while-revalidate=60, must-revalidate")), now: 30, expected: .revalidate()),
        .init(description: "§5.2.1.1 request max-age overrides stale-while-revalidate",
              stored: stored(control("max-age=10, stale-while-revalidate=60")), requestHeaders: [control("max-age=20")], now: 30,
              expected: .revalidate()),
        .init(description: "§5.2.1.7 only-if-cached with nothing stored is unsatisfiable",
              stored: [], requestHeaders: [control("only-if-cached")], now: 0, expected: .unsatisfiable),
        .init(description: "§5.2.1.7 only-if-cached serves a fresh response",
              stored: stored(control("max-age=60")), requestHeaders: [control("only-if-cached")], now: 5, expected: .fresh(age: 5)),
        .init(description: "§5.2.1.7 only-if-cached with a stale response and no permission is unsatisfiable",
              stored: stored(control("max-age=10"), etag), requestHeaders: [control("only-if-cached")], now: 50, expected: .unsatisfiable),
        .init(description: "§5.2.1.7 only-if-cached with max-stale serves stale",
              stored: stored(control("max-age=10")), requestHeaders: [control("only-if-cached, max-stale")], now: 50,
              expected: .stale(age: 50, background: false)),
        .init(description: "§5.2.1.7 only-if-cached with a no-cache response is unsatisfiable",
              stored: stored(control("max-age=60, no-cache")), requestHeaders: [control("only-if-cached")], now: 5, expected: .unsatisfiable),
        .init(description: "§4.1 the matching variant is chosen among several",
              stored: ["en", "fr", "de"].map {
                  Stored(body: $0, headers: [control("max-age=60"), ("Vary", "Accept-Language")], requestHeaders: [("Accept-Language", $0)])
              },
              requestHeaders: [("Accept-Language", "fr")], now: 5, expected: .fresh(body: "fr", age: 5)),
        .init(description: "§4.1 the most recent of several matching responses is chosen",
              stored: [Stored(body: "old", headers: [control("max-age=600")], responseOffset: -100),
                       Stored(body: "new", headers: [control("max-age=600")], responseOffset: -10),
                       Stored(body: "older", headers: [control("max-age=600")], responseOffset: -200)],
              now: 0, expected: .fresh(body: "new", age: 10)),
        .init(description: "§4.1 no matching variant is a miss",
              stored: [Stored(headers: [control("max-age=60"), ("Vary", "Accept")], requestHeaders: [("Accept", "a")])],
              requestHeaders: [("Accept", "b")], now: 5, expected: .miss),
        .init(description: "§4.1 a Vary: * response is never served",
              stored: stored(control("max-age=60"), ("Vary", "*")), now: 5, expected: .miss),
        .init(description: "§4.3.1 validating with Last-Modified only sends If-Modified-Since",
              stored: stored(control("max-age=10"), lastModified), now: 50,
              expected: .revalidate(conditional: ["if-modified-since: Sat, 05 Nov 1994 08:49:37 GMT"])),
        .init(description: "§4.3.1 validating with both validators sends both",
              stored: stored(control("max-age=10"), etag, lastModified), now: 50,
              expected: .revalidate(conditional: ["if-modified-since: Sat, 05 Nov 1994 08:49:37 GMT", "if-none-match: \"v1\""])),
        .init(description: "§4.3.1 a weak ETag is sent as is",
              stored: stored(control("max-age=10"), ("ETag", "W/\"w\"")), now: 50, expected: .revalidate(conditional: ["if-none-match: W/\"w\""])),
        .init(description: "§4.3.1 without validators the request is unconditional",
              stored: stored(control("max-age=10")), now: 50, expected: .revalidate()),
        .init(description: "RFC 9110 §13.1.3 If-Modified-Since comes from Last-Modified only, never Date",
              stored: stored(control("max-age=10"), ("Last-Modified", "garbage")), now: 50, expected: .revalidate()),
        .init(description: "§4.2.2 heuristic freshness serves a 200 with Last-Modified",
              stored: stored(("Last-Modified", CacheFixture.httpDate(-10_000))), now: 500, expected: .fresh(age: 500)),
        .init(description: "§4.2.2 heuristic freshness runs out",
              stored: stored(("Last-Modified", CacheFixture.httpDate(-10_000))), now: 1000,
              expected: .revalidate(conditional: ["if-modified-since: \(CacheFixture.httpDate(-10_000))"])),
        .init(description: "§5.3 an invalid Expires is stale at once",
              stored: stored(("Expires", "0")), now: 0, expected: .revalidate()),
        .init(description: "§4.2.3 the Age header counts towards the age",
              stored: stored(control("max-age=60"), ("Age", "50")), now: 20, expected: .revalidate()),
        .init(description: "§4.2.3 the age served includes the stored Age",
              stored: stored(control("max-age=60"), ("Age", "30")), now: 20, expected: .fresh(age: 50)),
        .init(description: "§3.5 an entry stored under other credentials does not match",
              stored: [Stored(headers: [control("max-age=60")], partition: "digest-a")], partition: "digest-b", now: 1, expected: .miss),
        .init(description: "§3.5 an entry stored with credentials does not match an anonymous request",
              stored: [Stored(headers: [control("max-age=60")], partition: "digest-a")], now: 1, expected: .miss),
        .init(description: "§3.5 an entry stored under the same credentials matches",
              stored: [Stored(headers: [control("max-age=60")], partition: "digest-a")], partition: "digest-a", now: 1,
              expected: .fresh(age: 1)),
    ]

    static let policyCases: [LookupCase] = [
        .init(description: "§4.2.4 policy returnCacheElseLoad (out-of-band configuration) serves stale whatever the request says",
              stored: stored(control("max-age=10"), etag), requestHeaders: [control("no-cache")], now: 1000, policy: .returnCacheElseLoad,
              expected: .stale(age: 1000, background: false)),
        .init(description: "§4.2.4 §5.2.2.2 no policy serves a stale must-revalidate response: returnCacheElseLoad validates",
              stored: stored(control("max-age=10, must-revalidate"), etag), now: 1000, policy: .returnCacheElseLoad,
              expected: .revalidate(conditional: ["if-none-match: \"v1\""])),
        .init(description: "§5.2.2.2 must-revalidate does not stop returnCacheElseLoad while fresh",
              stored: stored(control("max-age=100, must-revalidate"), etag), now: 10, policy: .returnCacheElseLoad,
              expected: .fresh(age: 10)),
        .init(description: "§5.2.2.4 no policy serves a no-cache response unvalidated, fresh or not: returnCacheElseLoad validates",
              stored: stored(control("max-age=100, no-cache"), etag), now: 10, policy: .returnCacheElseLoad,
              expected: .revalidate(conditional: ["if-none-match: \"v1\""])),
        .init(description: "§4.2.4 §5.2.2.2 cacheOnly never serves a stale must-revalidate response: unsatisfiable",
              stored: stored(control("max-age=10, must-revalidate"), etag), now: 1000, policy: .cacheOnly,
              expected: .unsatisfiable),
        .init(description: "RFC 8246 a fresh immutable response is not revalidated on reload (reloadRevalidating)",
              stored: stored(control("max-age=100, immutable"), etag), now: 10, policy: .reloadRevalidating,
              expected: .fresh(age: 10)),
        .init(description: "RFC 8246 a stale immutable response is revalidated on reload",
              stored: stored(control("max-age=100, immutable"), etag), now: 200, policy: .reloadRevalidating,
              expected: .revalidate(conditional: ["if-none-match: \"v1\""])),
        .init(description: "RFC 8246 immutable does not override a forced reload (reloadIgnoringCache)",
              stored: stored(control("max-age=100, immutable"), etag), now: 10, policy: .reloadIgnoringCache,
              expected: .miss),
        .init(description: "RFC 8246 immutable does not override the request's explicit no-cache",
              stored: stored(control("max-age=100, immutable"), etag), requestHeaders: [control("no-cache")], now: 10,
              expected: .revalidate(conditional: ["if-none-match: \"v1\""])),
        .init(description: "§4.2 policy returnCacheElseLoad serves fresh as fresh",
              stored: stored(control("max-age=60")), now: 5, policy: .returnCacheElseLoad, expected: .fresh(age: 5)),
        .init(description: "§4 policy returnCacheElseLoad with nothing stored loads",
              stored: [], now: 0, policy: .returnCacheElseLoad, expected: .miss),
        .init(description: "§4.1 policy returnCacheElseLoad still honours Vary",
              stored: [Stored(headers: [("Vary", "Accept")], requestHeaders: [("Accept", "a")])], requestHeaders: [("Accept", "b")],
              now: 0, policy: .returnCacheElseLoad, expected: .miss),
        .init(description: "§5.2.1.7 policy cacheOnly with nothing stored is unsatisfiable (504)",
              stored: [], now: 0, policy: .cacheOnly, expected: .unsatisfiable),
        .init(description: "§4.2.4 policy cacheOnly (out-of-band configuration) serves stale",
              stored: stored(control("max-age=1")), now: 100, policy: .cacheOnly, expected: .stale(age: 100, background: false)),
        .init(description: "§4.3.5 policy cacheOnly answers HEAD without a body",
              stored: stored(control("max-age=1")), method: .head, now: 100, policy: .cacheOnly,
              expected: .stale(age: 100, background: false, omitBody: true)),
        .init(description: "§4 policy reloadIgnoringCache ignores a fresh response",
              stored: stored(control("max-age=600")), now: 1, policy: .reloadIgnoringCache, expected: .miss),
        .init(description: "§4.3.1 policy reloadRevalidating validates a fresh response",
              stored: stored(control("max-age=600"), etag), now: 1, policy: .reloadRevalidating,
              expected: .revalidate(conditional: ["if-none-match: \"v1\""])),
        .init(description: "§4.3.1 policy reloadRevalidating without a validator loads",
              stored: stored(control("max-age=600")), now: 1, policy: .reloadRevalidating, expected: .miss),
    ]

    @Test(arguments: protocolCases + policyCases)
    func decides(_ testCase: LookupCase) {
        let request = CacheLookup.Request(
            method: testCase.method, url: CacheFixture.makeURL(testCase.url),
            headers: CacheFixture.fields(testCase.requestHeaders), credentialPartition: testCase.partition
        )
        let decision = CacheLookup.decide(request, candidates: testCase.stored.map { $0.entry() },
                                          now: CacheFixture.time(testCase.now), policy: testCase.policy)
        #expect(CacheLookupOutcome(decision) == testCase.expected)
    }

    struct StaleIfErrorCase: Sendable, CustomTestStringConvertible {
        var description: String
        var headers: [(String, String)]
        var requestHeaders: [(String, String)] = []
        var now: Double
        var expected: Bool
        var testDescription: String { description }
    }

    static let staleIfErrorCases: [StaleIfErrorCase] = [
        .init(description: "RFC 5861 §4 response stale-if-error within its window",
              headers: [control("max-age=10, stale-if-error=60")], now: 40, expected: true),
        .init(description: "RFC 5861 §4 response stale-if-error at the edge of its window",
              headers: [control("max-age=10, stale-if-error=60")], now: 70, expected: true),
        .init(description: "RFC 5861 §4 response stale-if-error window exceeded",
              headers: [control("max-age=10, stale-if-error=60")], now: 71, expected: false),
        .init(description: "RFC 5861 §4 request stale-if-error within its window",
              headers: [control("max-age=10")], requestHeaders: [control("stale-if-error=100")], now: 50, expected: true),
        .init(description: "RFC 5861 §4 the request's window overrides the response's",
              headers: [control("max-age=10, stale-if-error=600")], requestHeaders: [control("stale-if-error=5")], now: 40, expected: false),
        .init(description: "RFC 5861 §4 without stale-if-error a stale response is not served on error",
              headers: [control("max-age=10")], now: 20, expected: false),
        .init(description: "§4.2.4 must-revalidate forbids stale-if-error",
              headers: [control("max-age=10, stale-if-error=600, must-revalidate")], now: 20, expected: false),
        .init(description: "§4.2.4 no-cache forbids stale-if-error",
              headers: [control("max-age=10, stale-if-error=600, no-cache")], now: 20, expected: false),
        .init(description: "RFC 5861 §4 an invalid stale-if-error permits nothing",
              headers: [control("max-age=10, stale-if-error=x")], now: 20, expected: false),
        .init(description: "RFC 5861 §4 a still-fresh response with stale-if-error may be used",
              headers: [control("max-age=100, stale-if-error=1")], now: 20, expected: true),
    ]

    @Test(arguments: staleIfErrorCases)
    func staleIfError(_ testCase: StaleIfErrorCase) {
        let entry = Stored(headers: testCase.headers).entry()
        let allowed = CacheLookup.staleIfError(entry: entry, now: CacheFixture.time(testCase.now),
                                               requestHeaders: CacheFixture.fields(testCase.requestHeaders))
        #expect(allowed == testCase.expected)
    }
}
