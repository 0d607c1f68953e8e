import Foundation
import Testing
@testable import Courier

/// Issue 11 item 4, tier 1: the jar's pure storage (RFC 6265 §5.3 and §5.4, with RFC 6265bis's
/// stricter rules), event by event, with the time passed in.
@Suite("Cookie storage")
struct CookieStorageTests {
    static let t0 = Date(timeIntervalSince1970: 1_700_000_000)
    static func url(_ text: String) -> URL { URL(string: text)! }

    static func header(_ storage: inout CookieStorage, _ url: String, at now: Date = t0) -> String? {
        storage.cookieHeader(for: Self.url(url), now: now).value
    }

    @Test func hostOnlyCookiesGoOnlyToTheirHost() {
        var storage = CookieStorage()
        _ = storage.store(["SID=31d4d96e407aad42"], from: Self.url("https://www.example.com/"), now: Self.t0)
        #expect(Self.header(&storage, "https://www.example.com/") == "SID=31d4d96e407aad42")
        #expect(Self.header(&storage, "https://sub.www.example.com/") == nil)
        #expect(Self.header(&storage, "https://example.com/") == nil)
        #expect(storage.allCookies.first?.isHostOnly == true)
    }

    @Test func domainCookiesGoToSubdomains() {
        var storage = CookieStorage()
        _ = storage.store(["lang=en-US; Domain=example.com"], from: Self.url("https://www.example.com/"), now: Self.t0)
        #expect(Self.header(&storage, "https://example.com/") == "lang=en-US")
        #expect(Self.header(&storage, "https://a.b.example.com/x") == "lang=en-US")
        #expect(Self.header(&storage, "https://badexample.com/") == nil)
        let cookie = storage.allCookies.first
        #expect(cookie?.isHostOnly == false && cookie?.domain == "example.com")
    }

    @Test func aDomainTheHostIsNotWithinIsIgnored() {
        var storage = CookieStorage()
        _ = storage.store(["a=1; Domain=other.com", "b=2; Domain=sub.example.com", "c=3; Domain=com", "d=4; Domain=example.com."],
            from: Self.url("https://example.com/"), now: Self.t0)
        #expect(storage.count == 0)
    }

    @Test func singleLabelDomainsAreHostOnlyForThatHostAndIPAddressesAlwaysHostOnly() {
        var storage = CookieStorage()
        _ = storage.store(["a=1; Domain=localhost"], from: Self.url("http://localhost:8080/"), now: Self.t0)
        _ = storage.store(["b=2; Domain=127.0.0.1"], from: Self.url("http://127.0.0.1/"), now: Self.t0)
        _ = storage.store(["c=3; Domain=0.0.1"], from: Self.url("http://127.0.0.1/"), now: Self.t0)
        #expect(storage.allCookies.map(\.name) == ["b", "a"])
        #expect(storage.allCookies.allSatisfy { $0.isHostOnly })
        #expect(Self.header(&storage, "http://localhost/") == "a=1")
        #expect(Self.header(&storage, "http://127.0.0.1/") == "b=2")
    }

    @Test func pathsMatchWholeSegments() {
        var storage = CookieStorage()
        _ = storage.store(["docs=1; Path=/docs"], from: Self.url("https://example.com/"), now: Self.t0)
        #expect(Self.header(&storage, "https://example.com/docs") == "docs=1")
        #expect(Self.header(&storage, "https://example.com/docs/web/page") == "docs=1")
        #expect(Self.header(&storage, "https://example.com/docsets") == nil)
        #expect(Self.header(&storage, "https://example.com/") == nil)
    }

    @Test func theDefaultPathIsTheRequestsDirectory() {
        var storage = CookieStorage()
        _ = storage.store(["a=1", "b=2; Path=nonsense"], from: Self.url("https://example.com/account/login?next=/x/y"), now: Self.t0)
        #expect(storage.allCookies.map(\.path) == ["/account", "/account"])
        #expect(Self.header(&storage, "https://example.com/account/settings") == "a=1; b=2")
        #expect(Self.header(&storage, "https://example.com/other") == nil)
    }

    @Test func longerPathsFirstThenEarlierCreation() {
        var storage = CookieStorage()
        let origin = Self.url("https://example.com/")
        _ = storage.store(["root=1; Path=/"], from: origin, now: Self.t0)
        _ = storage.store(["deep=2; Path=/a/b"], from: origin, now: Self.t0.addingTimeInterval(2))
        _ = storage.store(["mid=3; Path=/a"], from: origin, now: Self.t0.addingTimeInterval(1))
        _ = storage.store(["early=4; Path=/"], from: origin, now: Self.t0.addingTimeInterval(-1))
        _ = storage.store(["same1=5; Path=/a", "same2=6; Path=/a"], from: origin, now: Self.t0.addingTimeInterval(1))
        #expect(Self.header(&storage, "https://example.com/a/b/c", at: Self.t0.addingTimeInterval(3))
            == "deep=2; mid=3; same1=5; same2=6; early=4; root=1")
    }

    @Test func maxAgeWinsOverExpiresAndExpiresWithTheTimePassedIn() {
        var storage = CookieStorage()
        _ = storage.store(["a=1; Expires=Wed, 09 Jun 2021 10:18:14 GMT; Max-Age=60"], from: Self.url("https://example.com/"), now: Self.t0)
        let cookie = storage.allCookies.first
        #expect(cookie?.expires == Self.t0.addingTimeInterval(60))
        #expect(Self.header(&storage, "https://example.com/", at: Self.t0.addingTimeInterval(59)) == "a=1")
        #expect(Self.header(&storage, "https://example.com/", at: Self.t0.addingTimeInterval(60)) == nil)
        #expect(storage.count == 0)
    }

    @Test func expiresInThePastOrAZeroMaxAgeDeletesTheCookie() {
        var storage = CookieStorage()
        let origin = Self.url("https://example.com/")
        _ = storage.store(["a=1; Max-Age=3600", "b=2; Max-Age=3600"], from: origin, now: Self.t0)
        let changes = storage.store(["a=gone; Max-Age=0", "b=gone; Expires=Thu, 01 Jan 1970 00:00:00 GMT", "c=never; Max-Age=-1"],
            from: origin, now: Self.t0.addingTimeInterval(1))
        #expect(storage.count == 0)
        #expect(Set(changes) == [.removed(CookieKey(name: "a", domain: "example.com", path: "/")),
            .removed(CookieKey(name: "b", domain: "example.com", path: "/"))])
    }

    @Test func expiriesAreCappedAt400Days() {
        var storage = CookieStorage()
        _ = storage.store(["a=1; Max-Age=999999999", "b=1; Expires=Fri, 31 Dec 9999 23:59:59 GMT"], from: Self.url("https://e.com/"), now: Self.t0)
        #expect(storage.allCookies.map(\.expires) == [Self.t0.addingTimeInterval(400 * 86_400), Self.t0.addingTimeInterval(400 * 86_400)])
    }

    @Test func sessionCookiesHaveNoExpiry() {
        var storage = CookieStorage()
        _ = storage.store(["a=1; Expires=not a date"], from: Self.url("https://e.com/"), now: Self.t0)
        #expect(storage.allCookies.first?.isSession == true)
    }

    @Test func replacementKeepsTheCreationDate() throws {
        var storage = CookieStorage()
        let origin = Self.url("https://example.com/")
        _ = storage.store(["a=1"], from: origin, now: Self.t0)
        let later = Self.t0.addingTimeInterval(100)
        let changes = storage.store(["a=2; HttpOnly; SameSite=Strict"], from: origin, now: later)
        let cookie = try #require(storage.allCookies.first)
        #expect(storage.count == 1)
        #expect(cookie.value == "2" && cookie.isHTTPOnly && cookie.sameSite == .strict)
        #expect(cookie.creationDate == Self.t0 && cookie.lastAccessDate == later)
        #expect(changes == [.stored(cookie)])
    }

    @Test func sameNameOnAnotherPathOrDomainIsAnotherCookie() {
        var storage = CookieStorage()
        let origin = Self.url("https://www.example.com/")
        _ = storage.store(["a=1", "a=2; Path=/x", "a=3; Domain=example.com"], from: origin, now: Self.t0)
        #expect(storage.count == 3)
        #expect(Self.header(&storage, "https://www.example.com/x") == "a=2; a=1; a=3")
    }

    @Test func secureCookiesNeedHTTPSBothWays() {
        var storage = CookieStorage()
        _ = storage.store(["s=1; Secure"], from: Self.url("http://example.com/"), now: Self.t0)
        _ = storage.store(["s=1; Secure"], from: Self.url("http://localhost/"), now: Self.t0)
        _ = storage.store(["s=1; Secure"], from: Self.url("http://127.0.0.1/"), now: Self.t0)
        #expect(storage.count == 0)
        _ = storage.store(["s=1; Secure"], from: Self.url("https://example.com/"), now: Self.t0)
        #expect(Self.header(&storage, "https://example.com/") == "s=1")
        #expect(Self.header(&storage, "http://example.com/") == nil)
    }

    @Test func plainHTTPLeavesSecureCookiesAlone() {
        var storage = CookieStorage()
        _ = storage.store(["s=secret; Secure; Domain=example.com"], from: Self.url("https://www.example.com/"), now: Self.t0)
        // Neither overwritten nor shadowed from http, on that host, a subdomain or a deeper path.
        _ = storage.store(["s=evil; Domain=example.com"], from: Self.url("http://www.example.com/"), now: Self.t0)
        _ = storage.store(["s=evil"], from: Self.url("http://a.example.com/"), now: Self.t0)
        _ = storage.store(["s=evil; Path=/deep"], from: Self.url("http://example.com/"), now: Self.t0)
        #expect(storage.allCookies.map(\.value) == ["secret"])
        // Other names are fine, and https may replace it.
        _ = storage.store(["t=1"], from: Self.url("http://example.com/"), now: Self.t0)
        _ = storage.store(["s=new; Domain=example.com"], from: Self.url("https://www.example.com/"), now: Self.t0)
        #expect(Set(storage.allCookies.map(\.value)) == ["new", "1"])
    }

    @Test func cookieNamePrefixes() {
        var storage = CookieStorage()
        let origin = Self.url("https://www.example.com/a/b")
        _ = storage.store([
            "__Secure-a=1", "__Secure-b=2; Secure",
            "__Host-c=3; Secure; Path=/", "__Host-d=4; Secure", "__Host-e=5; Secure; Path=/; Domain=www.example.com", "__Host-f=6; Path=/",
        ], from: origin, now: Self.t0)
        #expect(Set(storage.allCookies.map(\.name)) == ["__Secure-b", "__Host-c"])
    }

    @Test func perSiteLimitEvictsTheLeastRecentlyUsed() {
        var storage = CookieStorage(limits: .init(perSite: 3, total: 100))
        let origin = Self.url("https://example.com/")
        for index in 0..<3 { _ = storage.store(["c\(index)=\(index)"], from: origin, now: Self.t0.addingTimeInterval(Double(index))) }
        // c0 is used, so c1 is now the least recently used.
        _ = Self.header(&storage, "https://example.com/", at: Self.t0.addingTimeInterval(10))
        _ = storage.store(["x=1"], from: Self.url("https://other.com/"), now: Self.t0.addingTimeInterval(11))
        _ = storage.store(["c0=0"], from: origin, now: Self.t0.addingTimeInterval(12))
        _ = storage.store(["c3=3"], from: origin, now: Self.t0.addingTimeInterval(13))
        _ = storage.store(["c4=4"], from: origin, now: Self.t0.addingTimeInterval(14))
        #expect(Set(storage.allCookies.map(\.name)) == ["c0", "c3", "c4", "x"])
    }

    @Test func totalLimitEvictsTheLeastRecentlyUsedAcrossDomains() {
        var storage = CookieStorage(limits: .init(perSite: 10, total: 3))
        for index in 0..<5 {
            let changes = storage.store(["c=\(index)"], from: Self.url("https://h\(index).example/"), now: Self.t0.addingTimeInterval(Double(index)))
            if index >= 3 { #expect(changes.contains(.removed(CookieKey(name: "c", domain: "h\(index - 3).example", path: "/")))) }
        }
        #expect(storage.allCookies.map(\.domain) == ["h2.example", "h3.example", "h4.example"])
    }

    @Test func expiredCookiesGoBeforeAnyEviction() {
        var storage = CookieStorage(limits: .init(perSite: 2, total: 100))
        let origin = Self.url("https://example.com/")
        _ = storage.store(["keep=1"], from: origin, now: Self.t0)
        _ = storage.store(["short=1; Max-Age=5"], from: origin, now: Self.t0.addingTimeInterval(1))
        _ = storage.store(["new=1"], from: origin, now: Self.t0.addingTimeInterval(10))
        #expect(Set(storage.allCookies.map(\.name)) == ["keep", "new"])
    }

    @Test func sendingUpdatesTheLastAccessDateAndPeekingDoesNot() {
        var storage = CookieStorage()
        _ = storage.store(["a=1"], from: Self.url("https://example.com/"), now: Self.t0)
        #expect(storage.peekCookies(for: Self.url("https://example.com/"), now: Self.t0.addingTimeInterval(5)).first?.lastAccessDate == Self.t0)
        let (value, changes) = storage.cookieHeader(for: Self.url("https://example.com/"), now: Self.t0.addingTimeInterval(5))
        #expect(value == "a=1")
        #expect(storage.allCookies.first?.lastAccessDate == Self.t0.addingTimeInterval(5))
        #expect(changes == storage.allCookies.map(CookieStorage.Change.stored))
    }

    @Test func removing() {
        var storage = CookieStorage()
        _ = storage.store(["a=1", "a=2; Path=/x", "b=3"], from: Self.url("https://example.com/"), now: Self.t0)
        _ = storage.remove(name: "a", domain: ".EXAMPLE.com")
        #expect(storage.allCookies.map(\.name) == ["b"])
        #expect(storage.removeAll() == [.removedAll])
        #expect(storage.count == 0)
    }

    @Test func restoringDropsExpiredCookies() {
        var storage = CookieStorage()
        let live = Cookie(name: "a", value: "1", domain: "example.com", expires: Self.t0.addingTimeInterval(10), creationDate: Self.t0)
        let dead = Cookie(name: "b", value: "2", domain: "example.com", expires: Self.t0, creationDate: Self.t0)
        let changes = storage.restore([live, dead], now: Self.t0.addingTimeInterval(1))
        #expect(storage.allCookies == [live])
        #expect(changes == [.removed(dead.key)])
    }

    @Test func aURLWithoutAHostStoresAndSendsNothing() {
        var storage = CookieStorage()
        _ = storage.store(["a=1"], from: Self.url("file:///tmp/x"), now: Self.t0)
        #expect(storage.count == 0)
        #expect(Self.header(&storage, "file:///tmp/x") == nil)
    }

    @Test func theDescriptionHidesTheValue() {
        let cookie = Cookie(name: "SID", value: "31d4d96e407aad42", domain: "example.com", isSecure: true, creationDate: Self.t0)
        #expect(!cookie.description.contains("31d4d96e407aad42"))
        #expect(cookie.description.contains("SID=<16 bytes>"))
    }
}
