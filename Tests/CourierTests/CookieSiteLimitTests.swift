import Foundation
import Testing
@testable import Courier

/// Issue 23 part E1b: cookies are counted per site (registrable domain, eTLD+1), not per `Domain`
/// string, so one site cannot evict another's session by setting thousands of cookies on many hosts.
@Suite("Cookie site limits")
struct CookieSiteLimitTests {
    static let t0 = Date(timeIntervalSince1970: 1_700_000_000)
    static func url(_ text: String) -> URL { URL(string: text)! }

    /// The report's scenario through the public API: site B's session cookie survives site A's 3,000.
    @Test func thousandsOfCookiesFromOneSiteLeaveAnotherSitesSessionAlone() async {
        let jar = CookieJar()
        let bank = Self.url("https://bank.example/")
        jar.setCookies(["session=b-secret; Secure; HttpOnly"], for: bank)
        for index in 0..<3000 {
            // A different host (so a different cookie domain) each time: the old per-domain count never filled.
            jar.setCookies(["c\(index)=x; Max-Age=3600"], for: Self.url("https://h\(index).attacker.com/"))
        }
        #expect(await jar.cookieHeader(for: bank) == "session=b-secret")
        let all = await jar.allCookies
        #expect(all.filter { $0.domain.hasSuffix("attacker.com") }.count == CookieStorage.Limits().perSite)
        #expect(CookieStorage.Limits().perSite == 180 && CookieStorage.Limits().total == 3000)
    }

    @Test func hostsOfOneRegistrableDomainCountTogetherAndTheSitesOwnLeastRecentlyUsedGoFirst() {
        var storage = CookieStorage(limits: .init(perSite: 3, total: 100))
        _ = storage.store(["other=1"], from: Self.url("https://other.example.co.uk/"), now: Self.t0)
        _ = storage.store(["a=1"], from: Self.url("https://a.example.com/"), now: Self.t0.addingTimeInterval(1))
        _ = storage.store(["b=1; Domain=example.com"], from: Self.url("https://b.example.com/"), now: Self.t0.addingTimeInterval(2))
        _ = storage.store(["c=1"], from: Self.url("https://example.com/"), now: Self.t0.addingTimeInterval(3))
        // `b` and `c` are sent to example.com, so `a` is the site's least recently used; `other` (older,
        // another site) stays.
        #expect(storage.cookieHeader(for: Self.url("https://example.com/"), now: Self.t0.addingTimeInterval(4)).value == "b=1; c=1")
        let changes = storage.store(["d=1"], from: Self.url("https://d.example.com/"), now: Self.t0.addingTimeInterval(5))
        #expect(changes.contains(.removed(CookieKey(name: "a", domain: "a.example.com", path: "/"))))
        #expect(Set(storage.allCookies.map(\.name)) == ["other", "b", "c", "d"])
    }

    @Test func sitesUnderAPublicSuffixAreSeparate() {
        var storage = CookieStorage(limits: .init(perSite: 2, total: 100))
        for index in 0..<5 {
            _ = storage.store(["c=\(index)"], from: Self.url("https://s\(index).co.uk/"), now: Self.t0.addingTimeInterval(Double(index)))
            _ = storage.store(["c=\(index)"], from: Self.url("https://s\(index).github.io/"), now: Self.t0.addingTimeInterval(Double(index)))
        }
        #expect(storage.count == 10, "s0.co.uk and s1.co.uk are two sites, as are the github.io users")
    }

    @Test func expiredCookiesOfTheSiteGoBeforeItsLiveOnes() {
        var storage = CookieStorage(limits: .init(perSite: 2, total: 100))
        _ = storage.store(["keep=1"], from: Self.url("https://a.example.com/"), now: Self.t0)
        _ = storage.store(["short=1; Max-Age=5"], from: Self.url("https://b.example.com/"), now: Self.t0.addingTimeInterval(1))
        _ = storage.store(["new=1"], from: Self.url("https://c.example.com/"), now: Self.t0.addingTimeInterval(10))
        #expect(Set(storage.allCookies.map(\.name)) == ["keep", "new"])
    }

    @Test func IPAddressesAndSingleLabelHostsAreTheirOwnSites() {
        var storage = CookieStorage(limits: .init(perSite: 1, total: 100))
        _ = storage.store(["a=1"], from: Self.url("http://127.0.0.1/"), now: Self.t0)
        _ = storage.store(["b=1"], from: Self.url("http://127.0.0.2/"), now: Self.t0)
        _ = storage.store(["c=1"], from: Self.url("http://localhost/"), now: Self.t0)
        _ = storage.store(["d=1"], from: Self.url("http://intranet/"), now: Self.t0)
        #expect(storage.count == 4)
    }

    @Test func restoringAppliesTheSiteLimit() {
        var storage = CookieStorage(limits: .init(perSite: 2, total: 100))
        let cookies = (0..<4).map { index in
            Cookie(name: "c\(index)", value: "1", domain: "h\(index).example.com", creationDate: Self.t0.addingTimeInterval(Double(index)))
        }
        let changes = storage.restore(cookies, now: Self.t0.addingTimeInterval(10))
        #expect(Set(changes) == [.removed(cookies[0].key), .removed(cookies[1].key)])
        #expect(storage.allCookies.map(\.name) == ["c2", "c3"])
    }
}
