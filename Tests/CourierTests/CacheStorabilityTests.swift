import Foundation
import Testing
@testable import Courier

@Suite("Cache: storing responses (RFC 9111 §3)")
struct CacheStorabilityTests {
    struct StoreCase: Sendable, CustomTestStringConvertible {
        var description: String
        var method: HTTPRequest.Method = .get
        var requestHeaders: [(String, String)] = []
        var status = 200
        var responseHeaders: [(String, String)] = []
        var expected: CacheStorability.Verdict
        var testDescription: String { description }
    }

    static let storeCases: [StoreCase] = [
        .init(description: "§3 a GET 200 with max-age is storable", responseHeaders: [("Cache-Control", "max-age=60")], expected: .storable),
        .init(description: "§3 a GET 200 without freshness is storable (heuristically cacheable)", expected: .storable),
        .init(description: "§3 HEAD responses are not stored", method: .head,
              responseHeaders: [("Cache-Control", "max-age=60")], expected: .notStorable(.methodNotCacheable)),
        .init(description: "§3 POST responses are not stored, even with max-age", method: .post,
              responseHeaders: [("Cache-Control", "max-age=60")], expected: .notStorable(.methodNotCacheable)),
        .init(description: "§3 a 1xx status is not final", status: 103,
              responseHeaders: [("Cache-Control", "max-age=60")], expected: .notStorable(.statusNotFinal)),
        .init(description: "§3.3 a 206 without Content-Range is not stored", status: 206,
              responseHeaders: [("Cache-Control", "max-age=60")], expected: .notStorable(.statusNotUnderstood)),
        .init(description: "§3.3 a 206 with one Content-Range of a known length is stored", status: 206,
              responseHeaders: [("Cache-Control", "max-age=60"), ("Content-Range", "bytes 0-9/100")], expected: .storable),
        .init(description: "§3.3 a 206 of unknown complete length is not stored", status: 206,
              responseHeaders: [("Cache-Control", "max-age=60"), ("Content-Range", "bytes 0-9/*")], expected: .notStorable(.statusNotUnderstood)),
        .init(description: "§3.3 a multipart/byteranges 206 is not stored", status: 206,
              responseHeaders: [("Cache-Control", "max-age=60"), ("Content-Type", "multipart/byteranges; boundary=x")],
              expected: .notStorable(.statusNotUnderstood)),
        .init(description: "§3.3 a content-coded 206 is not stored (its ranges are of the encoded bytes)", status: 206,
              responseHeaders: [("Content-Range", "bytes 0-9/100"), ("Content-Encoding", "gzip")], expected: .notStorable(.statusNotUnderstood)),
        .init(description: "RFC 9110 §15.1 206 is heuristically cacheable", status: 206,
              responseHeaders: [("Content-Range", "bytes 0-9/100")], expected: .storable),
        .init(description: "§3 304 is not stored", status: 304,
              responseHeaders: [("Cache-Control", "max-age=60")], expected: .notStorable(.statusNotUnderstood)),
        .init(description: "§5.2.2.5 response no-store is not stored",
              responseHeaders: [("Cache-Control", "max-age=60, no-store")], expected: .notStorable(.noStoreInResponse)),
        .init(description: "§5.2.1.5 request no-store is not stored", requestHeaders: [("Cache-Control", "no-store")],
              responseHeaders: [("Cache-Control", "max-age=60")], expected: .notStorable(.noStoreInRequest)),
        .init(description: "§5.2.2.3 must-understand on an understood status overrides no-store",
              responseHeaders: [("Cache-Control", "no-store, must-understand, max-age=60")], expected: .storable),
        .init(description: "§5.2.2.3 must-understand on an unfamiliar status is not stored", status: 299,
              responseHeaders: [("Cache-Control", "must-understand, max-age=60")], expected: .notStorable(.statusNotUnderstood)),
        .init(description: "§3.5 binds shared caches only: a private cache stores an authorized response (partitioned)",
              requestHeaders: [("Authorization", "Bearer t")], responseHeaders: [("Cache-Control", "private, max-age=60")],
              expected: .storable),
        .init(description: "§3.5 Authorization with public is storable", requestHeaders: [("Authorization", "Bearer t")],
              responseHeaders: [("Cache-Control", "public, max-age=60")], expected: .storable),
        .init(description: "§3.5 Authorization with must-revalidate is storable", requestHeaders: [("Authorization", "Bearer t")],
              responseHeaders: [("Cache-Control", "must-revalidate, max-age=60")], expected: .storable),
        .init(description: "§3.5 Authorization with s-maxage is storable", requestHeaders: [("Authorization", "Bearer t")],
              responseHeaders: [("Cache-Control", "s-maxage=60")], expected: .storable),
        .init(description: "§3 a 302 without explicit freshness is not storable", status: 302,
              responseHeaders: [("Location", "/x")], expected: .notStorable(.noCacheabilitySignal)),
        .init(description: "§3 a 302 with Expires is storable", status: 302,
              responseHeaders: [("Expires", "Sun, 06 Nov 1994 09:49:37 GMT")], expected: .storable),
        .init(description: "§3 an invalid Expires is still an Expires field", status: 302,
              responseHeaders: [("Expires", "0")], expected: .storable),
        .init(description: "§3 a 500 with max-age is storable", status: 500,
              responseHeaders: [("Cache-Control", "max-age=5")], expected: .storable),
        .init(description: "§3 a 307 marked public is storable", status: 307,
              responseHeaders: [("Cache-Control", "public")], expected: .storable),
        .init(description: "§3 a 403 marked private is storable by a private cache", status: 403,
              responseHeaders: [("Cache-Control", "private")], expected: .storable),
        .init(description: "§3 a 503 without freshness is not storable", status: 503,
              expected: .notStorable(.noCacheabilitySignal)),
        .init(description: "RFC 9110 §15.1 404 is heuristically cacheable", status: 404, expected: .storable),
        .init(description: "RFC 9110 §15.1 501 is heuristically cacheable", status: 501, expected: .storable),
        .init(description: "§5.2.2.4 a no-cache response is storable (revalidated on use)",
              responseHeaders: [("Cache-Control", "no-cache")], expected: .storable),
    ]

    @Test(arguments: storeCases)
    func decidesStorage(_ testCase: StoreCase) {
        let verdict = CacheStorability.verdict(
            requestMethod: testCase.method,
            requestHeaders: CacheFixture.fields(testCase.requestHeaders),
            status: HTTPResponse.Status(code: testCase.status),
            responseHeaders: CacheFixture.fields(testCase.responseHeaders)
        )
        #expect(verdict == testCase.expected)
    }

    struct HeadersCase: Sendable, CustomTestStringConvertible {
        var description: String
        var headers: [(String, String)]
        /// The names expected to remain, lowercased, in order.
        var kept: [String]
        var testDescription: String { description }
    }

    static let headerCases: [HeadersCase] = [
        .init(description: "§3.1 Connection and the fields it names are dropped",
              headers: [("Connection", "close, X-Hop"), ("X-Hop", "1"), ("X-Keep", "2")], kept: ["x-keep"]),
        .init(description: "§3.1 fields named by several Connection lines are dropped",
              headers: [("Connection", "x-a"), ("Connection", "X-B"), ("X-A", "1"), ("X-B", "2"), ("ETag", "\"e\"")], kept: ["etag"]),
        .init(description: "§3.1 hop-by-hop fields are dropped (RFC 9110 §7.6.1)",
              headers: [("Keep-Alive", "timeout=5"), ("Proxy-Connection", "keep-alive"), ("TE", "trailers"),
                        ("Transfer-Encoding", "chunked"), ("Upgrade", "h2c"), ("Trailer", "X-T"), ("Content-Type", "text/plain")],
              kept: ["content-type"]),
        .init(description: "§3.1 proxy-specific fields are not stored",
              headers: [("Proxy-Authenticate", "Basic"), ("Proxy-Authorization", "Basic eA=="),
                        ("Proxy-Authentication-Info", "x"), ("Cache-Control", "max-age=1")], kept: ["cache-control"]),
        .init(description: "§3.1 unrecognised fields are stored",
              headers: [("X-Custom", "1"), ("Set-Cookie", "a=b"), ("Vary", "Accept")], kept: ["x-custom", "set-cookie", "vary"]),
        .init(description: "§3.1 invalid names listed in Connection are ignored",
              headers: [("Connection", "bad name, x-a, , ä"), ("X-A", "1"), ("Age", "3")], kept: ["age"]),
    ]

    @Test(arguments: headerCases)
    func storesHeaders(_ testCase: HeadersCase) {
        let stored = CacheStorability.storedHeaders(from: CacheFixture.fields(testCase.headers))
        #expect(stored.map(\.name.canonicalName) == testCase.kept)
    }
}
