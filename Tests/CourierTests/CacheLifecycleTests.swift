import Foundation
import Testing
@testable import Courier

@Suite("Cache: one resource through its life (RFC 9111 §3, §4)")
struct CacheLifecycleTests {
    @Test("§3 store, §4.2 serve fresh, §4.3 validate, §4.3.4 freshen with 304, §4.4 invalidate")
    func lifecycle() {
        let url = CacheFixture.makeURL("https://api.example.com/users/7")
        let requestHeaders = CacheFixture.fields([("Accept", "application/json")])
        let responseHeaders = CacheFixture.fields([
            ("Date", CacheFixture.httpDate(0)), ("Cache-Control", "max-age=60"), ("ETag", "\"r1\""),
            ("Vary", "Accept"), ("Connection", "keep-alive"), ("Keep-Alive", "timeout=5"), ("Content-Length", "2"),
        ])

        #expect(CacheStorability.canStore(requestMethod: .get, requestHeaders: requestHeaders, status: .ok,
                                          responseHeaders: responseHeaders))
        let entry = CachedResponseEntry.storing(
            url: url, requestHeaders: requestHeaders, status: .ok, responseHeaders: responseHeaders,
            body: Data("{}".utf8), requestTime: CacheFixture.time(-1), responseTime: CacheFixture.time(0)
        )
        #expect(!entry.headers.contains(.connection) && !entry.headers.contains(CacheHeaderSyntax.keepAlive))

        let request = CacheLookup.Request(url: url, headers: requestHeaders)
        guard case .fresh(let served, let age, false) = CacheLookup.decide(request, candidates: [entry], now: CacheFixture.time(20))
        else { Issue.record("expected a fresh hit"); return }
        #expect(age == 21)  // Age 0 + 1 s response delay + 20 s resident.
        #expect(CacheServedHeaders.headers(for: served, age: age)[.age] == "21")

        guard case .revalidate(let stale, let conditional) = CacheLookup.decide(request, candidates: [entry], now: CacheFixture.time(90))
        else { Issue.record("expected a revalidation"); return }
        #expect(conditional[.ifNoneMatch] == "\"r1\"")

        let notModified = CacheFixture.fields([("Date", CacheFixture.httpDate(91)), ("ETag", "\"r1\""), ("Content-Length", "0")])
        #expect(CacheRevalidation.selectStoredForNotModified([stale], notModified: notModified) == [0])
        let freshened = CacheRevalidation.merge(stored: stale, notModified: notModified,
                                                requestTime: CacheFixture.time(90), responseTime: CacheFixture.time(91))
        #expect(freshened.headers[.contentLength] == "2")
        guard case .fresh(_, let newAge, _) = CacheLookup.decide(request, candidates: [freshened], now: CacheFixture.time(100))
        else { Issue.record("expected the freshened entry to be fresh"); return }
        #expect(newAge == 10)

        let other = CacheLookup.Request(url: url, headers: CacheFixture.fields([("Accept", "text/html")]))
        #expect(CacheLookup.decide(other, candidates: [freshened], now: CacheFixture.time(100)) == .miss)

        let keys = CacheInvalidation.invalidatedKeys(method: .delete, requestURL: url, status: .noContent, responseHeaders: [:])
        #expect(keys == [freshened.cacheKey].compactMap { $0 })
    }
}
