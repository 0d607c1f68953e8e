import Foundation
import Testing
@testable import Courier

/// Issue 11 item 4, tier 1: `Set-Cookie` parsing (RFC 6265 §5.2), cookie dates (§5.1.1) and the
/// matching rules (§5.1.3, §5.1.4), pure.
@Suite("Cookie parsing")
struct CookieParsingTests {
    @Test func nameValueAndAttributes() throws {
        let cookie = try #require(SetCookie(" SID = 31d4d96e407aad42 ; Path=/docs; Domain=.Example.COM; Secure; HttpOnly; SameSite=Lax"))
        #expect(cookie.name == "SID")
        #expect(cookie.value == "31d4d96e407aad42")
        #expect(cookie.path == "/docs")
        #expect(cookie.domain == "example.com")
        #expect(cookie.isSecure && cookie.isHTTPOnly)
        #expect(cookie.sameSite == .lax)
        #expect(cookie.expires == nil && cookie.maxAge == nil)
    }

    @Test func valuesKeepTheirQuotesAndEqualsSigns() throws {
        let cookie = try #require(SetCookie("token=\"a=b=c\""))
        #expect(cookie.name == "token")
        #expect(cookie.value == "\"a=b=c\"")
        #expect(try #require(SetCookie("empty=")).value == "")
    }

    @Test(arguments: ["novalue", "=value", " =value", "", ";", "a=b\u{0}", "a=b\r\nSet-Cookie: c=d", "a\u{1}=b", "a=b\u{7F}"])
    func ignored(_ text: String) {
        #expect(SetCookie(text) == nil)
    }

    @Test func aTabIsNotAControlCharacterHere() throws {
        #expect(try #require(SetCookie("a=\tb\t")).value == "b")
    }

    @Test func sizeLimits() {
        #expect(SetCookie("n=" + String(repeating: "v", count: 4095)) != nil)
        #expect(SetCookie("n=" + String(repeating: "v", count: 4096)) == nil)
        // An attribute value over 1024 bytes is ignored, not the cookie.
        let long = SetCookie("n=v; Path=/" + String(repeating: "p", count: 1024))
        #expect(long != nil && long?.path == nil)
        #expect(SetCookie("n=v; Path=/" + String(repeating: "p", count: 1000))?.path != nil)
    }

    @Test func theLastOfEachAttributeWinsAndUnknownOnesAreIgnored() throws {
        let cookie = try #require(SetCookie("a=b; Path=/one; Max-Age=10; Path=/two; Max-Age=20; Flavour=mint; SameSite=bogus"))
        #expect(cookie.path == "/two")
        #expect(cookie.maxAge == 20)
        #expect(cookie.sameSite == .unspecified)
    }

    @Test func maxAgeSyntax() {
        #expect(SetCookie("a=b; Max-Age=-5")?.maxAge == -5)
        #expect(SetCookie("a=b; Max-Age=0")?.maxAge == 0)
        #expect(SetCookie("a=b; Max-Age=1.5")?.maxAge == nil)
        #expect(SetCookie("a=b; Max-Age=+5")?.maxAge == nil)
        #expect(SetCookie("a=b; Max-Age=")?.maxAge == nil)
        #expect(SetCookie("a=b; Max-Age=99999999999999999999999999")?.maxAge == 1 << 40)
    }

    @Test func domainAndPathAttributes() {
        #expect(SetCookie("a=b; Domain=")?.domain == nil)
        #expect(SetCookie("a=b; Domain=.")?.domain == nil)
        #expect(SetCookie("a=b; Domain=exämple.com")?.domain == nil)
        #expect(SetCookie("a=b; Path=relative")?.path == nil)
        #expect(SetCookie("a=b; Path=")?.path == nil)
    }

    // MARK: Dates

    static func date(_ year: Int, _ month: Int, _ day: Int, _ hour: Int = 0, _ minute: Int = 0, _ second: Int = 0) -> Date {
        let days = HTTPDate.daysFromCivil(year: year, month: month, day: day)
        return Date(timeIntervalSince1970: Double(days * 86_400 + hour * 3600 + minute * 60 + second))
    }

    @Test func cookieDatesInTheFormsServersSend() {
        let expected = Self.date(2021, 6, 9, 10, 18, 14)
        for text in [
            "Wed, 09 Jun 2021 10:18:14 GMT", "Wednesday, 09-Jun-21 10:18:14 GMT", "Wed Jun  9 10:18:14 2021",
            "09 Jun 2021 10:18:14", "Wed, 09-Jun-2021 10:18:14 UTC", "wed, 09 june 2021 10:18:14 gmt",
            "10:18:14 2021 Jun 09",
        ] {
            #expect(CookieDate.parse(text) == expected, "\(text)")
        }
        #expect(CookieDate.parse("Thu, 01 Jan 70 00:00:00 GMT") == Date(timeIntervalSince1970: 0))
        #expect(CookieDate.parse("Sat, 01 Jan 69 00:00:00 GMT") == Self.date(2069, 1, 1))
    }

    @Test(arguments: [
        "", "garbage", "Wed, 31 Jun 2021 10:18:14 GMT", "Wed, 09 Jun 2021 24:00:00 GMT", "Wed, 09 Jun 1600 10:18:14 GMT",
        "Wed, 09 Jun 2021", "Wed, 09 2021 10:18:14 GMT", "Sun, 29 Feb 2023 00:00:00 GMT", "09 Jun 2021 10:18:60",
    ])
    func invalidCookieDates(_ text: String) {
        #expect(CookieDate.parse(text) == nil)
    }

    // MARK: Matching

    @Test func domainMatching() {
        #expect(CookieMatching.domainMatches("example.com", "example.com"))
        #expect(CookieMatching.domainMatches("www.example.com", "example.com"))
        #expect(!CookieMatching.domainMatches("badexample.com", "example.com"))
        #expect(!CookieMatching.domainMatches("example.com", "www.example.com"))
        #expect(CookieMatching.domainMatches("1.2.3.4", "1.2.3.4"))
        #expect(!CookieMatching.domainMatches("1.2.3.4", "2.3.4"))
    }

    @Test func pathMatching() {
        #expect(CookieMatching.pathMatches("/docs", "/docs"))
        #expect(CookieMatching.pathMatches("/docs/web", "/docs"))
        #expect(CookieMatching.pathMatches("/docs/", "/docs"))
        #expect(!CookieMatching.pathMatches("/docsets", "/docs"))
        #expect(CookieMatching.pathMatches("/docs/web", "/docs/"))
        #expect(!CookieMatching.pathMatches("/doc", "/docs"))
        #expect(CookieMatching.pathMatches("/anything", "/"))
    }

    @Test func defaultPaths() {
        func path(_ url: String) -> String { CookieMatching.defaultPath(of: URL(string: url)!) }
        #expect(path("https://example.com") == "/")
        #expect(path("https://example.com/") == "/")
        #expect(path("https://example.com/login") == "/")
        #expect(path("https://example.com/docs/login") == "/docs")
        #expect(path("https://example.com/docs/web/") == "/docs/web")
        #expect(path("https://example.com/a%20b/c?x=/y/z") == "/a%20b")
    }

    @Test func ipAddresses() {
        #expect(CookieMatching.isIPAddress("127.0.0.1"))
        #expect(CookieMatching.isIPAddress("::1"))
        #expect(!CookieMatching.isIPAddress("example.com"))
        #expect(CookieMatching.canonicalHost(of: URL(string: "http://[::1]:8080/")!) == "::1")
        #expect(CookieMatching.canonicalHost(of: URL(string: "http://EXAMPLE.com/")!) == "example.com")
    }

    // MARK: Hostile input

    /// Random bytes, and mutations of real fields, never crash the parser, the date reader or the storage,
    /// and stay fast (the work is linear in the input).
    @Test func hostileInputIsBoundedAndNeverCrashes() {
        var generator = SplitMix64(seed: 0xC00C1E)
        let seeds = [
            "SID=31d4d96e407aad42; Path=/; Domain=example.com; Secure; HttpOnly; Expires=Wed, 09 Jun 2021 10:18:14 GMT",
            "a=b; Max-Age=-1; SameSite=None", "__Host-x=1; Secure; Path=/",
        ]
        let alphabet = Array("=;, \t\"-:/.0123456789aAzZ\u{0}\u{7F}\u{FF}é".unicodeScalars)
        var storage = CookieStorage(limits: .init(perSite: 20, total: 50))
        let url = URL(string: "https://www.example.com/docs/page")!
        let start = ContinuousClock.now
        for round in 0..<3000 {
            var text: String
            if round % 3 == 0 {
                let length = Int.random(in: 0...300, using: &generator)
                text = String(String.UnicodeScalarView((0..<length).map { _ in alphabet.randomElement(using: &generator)! }))
            } else {
                var scalars = Array(seeds[round % seeds.count].unicodeScalars)
                for _ in 0..<Int.random(in: 1...8, using: &generator) where !scalars.isEmpty {
                    let index = Int.random(in: 0..<scalars.count, using: &generator)
                    scalars[index] = alphabet.randomElement(using: &generator)!
                }
                text = String(String.UnicodeScalarView(scalars))
            }
            _ = CookieDate.parse(text)
            _ = storage.store([text], from: url, now: Date(timeIntervalSince1970: 1_700_000_000 + Double(round)))
        }
        // One enormous field and one enormous date: ignored or read, quickly.
        _ = storage.store(["a=" + String(repeating: "x;", count: 200_000)], from: url, now: Date(timeIntervalSince1970: 1_700_000_000))
        _ = CookieDate.parse(String(repeating: "1:2:3 ", count: 100_000))
        #expect(storage.count <= 50)
        #expect(ContinuousClock.now - start < .seconds(30))
    }
}
