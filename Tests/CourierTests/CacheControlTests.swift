import Foundation
import Testing
@testable import Courier

@Suite("Cache: Cache-Control parsing (RFC 9111 §5.2)")
struct CacheControlTests {
    typealias Delta = CacheControl.DeltaSeconds

    struct ParseCase: Sendable, CustomTestStringConvertible {
        var description: String
        var headers: [(String, String)]
        var asRequest = false
        var maxAge: Delta = .absent
        var sMaxAge: Delta = .absent
        var minFresh: Delta = .absent
        var maxStale: CacheControl.MaxStale = .absent
        var staleWhileRevalidate: Delta = .absent
        var staleIfError: Delta = .absent
        /// Exactly the boolean directives expected to be set.
        var flags: Set<String> = []
        /// A directive expected among `directives`, e.g. an unknown one.
        var directive: CacheControl.Directive?
        var testDescription: String { description }
    }

    static let cases: [ParseCase] = [
        .init(description: "§5.2.2.1 max-age", headers: [("Cache-Control", "max-age=60")], maxAge: .seconds(60)),
        .init(description: "§5.2 directive names are case-insensitive",
              headers: [("Cache-Control", "MAX-AGE=60, No-Store")], maxAge: .seconds(60), flags: ["no-store"]),
        .init(description: "§5.2 a quoted delta-seconds argument is accepted", headers: [("Cache-Control", "max-age=\"60\"")], maxAge: .seconds(60)),
        .init(description: "RFC 9110 §5.6.1 OWS and empty list elements are tolerated",
              headers: [("Cache-Control", " , max-age=5 ,,\tpublic , ")], maxAge: .seconds(5), flags: ["public"]),
        .init(description: "§5.2 all Cache-Control field lines are read",
              headers: [("Cache-Control", "max-age=5"), ("Cache-Control", "must-revalidate")],
              maxAge: .seconds(5), flags: ["must-revalidate"]),
        .init(description: "§1.2.2 a negative delta-seconds is invalid", headers: [("Cache-Control", "max-age=-1")], maxAge: .invalid),
        .init(description: "§1.2.2 a fractional delta-seconds is invalid", headers: [("Cache-Control", "max-age=1.5")], maxAge: .invalid),
        .init(description: "§1.2.2 non-ASCII digits are invalid", headers: [("Cache-Control", "max-age=٣")], maxAge: .invalid),
        .init(description: "§5.2.2.1 max-age without its argument is invalid", headers: [("Cache-Control", "max-age")], maxAge: .invalid),
        .init(description: "§5.2.2.1 max-age with an empty argument is invalid", headers: [("Cache-Control", "max-age=")], maxAge: .invalid),
        .init(description: "§5.2 an argument with embedded whitespace is invalid", headers: [("Cache-Control", "max-age=5 6")], maxAge: .invalid),
        .init(description: "§5.2 whitespace around = is tolerated", headers: [("Cache-Control", "max-age = 5")], maxAge: .seconds(5)),
        .init(description: "§1.2.2 values over 2^31 are capped at 2147483648",
              headers: [("Cache-Control", "max-age=99999999999999999999999")], maxAge: .seconds(2_147_483_648)),
        .init(description: "§4.2.1 conflicting duplicate max-age is invalid",
              headers: [("Cache-Control", "max-age=10, max-age=20")], maxAge: .invalid),
        .init(description: "§4.2.1 identical duplicate max-age is fine",
              headers: [("Cache-Control", "max-age=10"), ("Cache-Control", "max-age=10")], maxAge: .seconds(10)),
        .init(description: "§5.2.2.10 s-maxage is parsed", headers: [("Cache-Control", "s-maxage=30")], sMaxAge: .seconds(30)),
        .init(description: "§5.2.2.4 no-cache with a quoted field-name list containing a comma",
              headers: [("Cache-Control", "no-cache=\"Set-Cookie, X-Foo\", max-age=5")],
              maxAge: .seconds(5), flags: ["no-cache"],
              directive: .init(name: "no-cache", argument: "Set-Cookie, X-Foo")),
        .init(description: "§5.2.2.7 private with a field-name list",
              headers: [("Cache-Control", "private=\"Authorization\"")], flags: ["private"]),
        .init(description: "RFC 9110 §5.6.4 quoted-pair escapes in an argument",
              headers: [("Cache-Control", "x-ext=\"a\\\"b,c\", private")], flags: ["private"],
              directive: .init(name: "x-ext", argument: "a\"b,c")),
        .init(description: "RFC 9110 §5.6.1 a comma followed by a combining mark still separates (scalars, not characters)",
              headers: [("Cache-Control", "no-store,\u{0301}x, max-age=3")], maxAge: .seconds(3), flags: ["no-store"]),
        .init(description: "RFC 9110 §5.6.4 an escaped quote followed by a combining mark stays inside the argument",
              headers: [("Cache-Control", "x-ext=\"a\\\"\u{0301}b,c\", private")], flags: ["private"],
              directive: .init(name: "x-ext", argument: "a\"\u{0301}b,c")),
        .init(description: "§5.2.3 unknown directives are kept and ignored",
              headers: [("Cache-Control", "community=\"UCI\", Foo, max-age=3")], maxAge: .seconds(3),
              directive: .init(name: "foo", argument: nil)),
        .init(description: "§5.2.2 every boolean response directive",
              headers: [("Cache-Control", "must-revalidate, proxy-revalidate, must-understand, no-transform, immutable, public, private, no-store, no-cache")],
              flags: ["must-revalidate", "proxy-revalidate", "must-understand", "no-transform", "immutable", "public", "private", "no-store", "no-cache"]),
        .init(description: "§5.2.2.5 no-store with a stray argument still counts", headers: [("Cache-Control", "no-store=1")], flags: ["no-store"]),
        .init(description: "RFC 5861 stale-while-revalidate and stale-if-error",
              headers: [("Cache-Control", "max-age=1, stale-while-revalidate=30, stale-if-error=600")],
              maxAge: .seconds(1), staleWhileRevalidate: .seconds(30), staleIfError: .seconds(600)),
        .init(description: "RFC 5861 an invalid stale-while-revalidate is invalid",
              headers: [("Cache-Control", "stale-while-revalidate=soon")], staleWhileRevalidate: .invalid),
        .init(description: "§5.2.1.2 max-stale without a value accepts any staleness",
              headers: [("Cache-Control", "max-stale")], asRequest: true, maxStale: .any),
        .init(description: "§5.2.1.2 max-stale with a value", headers: [("Cache-Control", "max-stale=30")], asRequest: true, maxStale: .seconds(30)),
        .init(description: "§5.2.1.2 duplicate max-stale keeps the most restrictive",
              headers: [("Cache-Control", "max-stale, max-stale=30, max-stale=10")], asRequest: true, maxStale: .seconds(10)),
        .init(description: "§5.2.1.2 max-stale with an invalid value is invalid",
              headers: [("Cache-Control", "max-stale=abc")], asRequest: true, maxStale: .invalid),
        .init(description: "§5.2.1.3 min-fresh", headers: [("Cache-Control", "min-fresh=20")], asRequest: true, minFresh: .seconds(20)),
        .init(description: "§5.2.1 request directives only-if-cached, no-store, no-transform",
              headers: [("Cache-Control", "only-if-cached, no-store, no-transform")], asRequest: true,
              flags: ["only-if-cached", "no-store", "no-transform"]),
        .init(description: "§5.2.1.4 request no-cache", headers: [("Cache-Control", "no-cache")], asRequest: true, flags: ["no-cache"]),
        .init(description: "§5.4 request Pragma: no-cache without Cache-Control means no-cache",
              headers: [("Pragma", "no-cache")], asRequest: true, flags: ["no-cache"]),
        .init(description: "§5.4 Pragma is matched case-insensitively within its list",
              headers: [("Pragma", "x-foo, NO-CACHE")], asRequest: true, flags: ["no-cache"]),
        .init(description: "§5.4 Pragma is ignored when the request has Cache-Control",
              headers: [("Cache-Control", "max-age=5"), ("Pragma", "no-cache")], asRequest: true, maxAge: .seconds(5)),
        .init(description: "§5.4 Pragma has no meaning on a response", headers: [("Pragma", "no-cache")]),
        .init(description: "§5.2 malformed elements are dropped, valid ones kept",
              headers: [("Cache-Control", "max-age=5, =, ==x, a b=c, {}, \"unterminated")], maxAge: .seconds(5)),
        .init(description: "§5.2 an unterminated quoted string swallows the rest of its line only",
              headers: [("Cache-Control", "x=\"open, no-store"), ("Cache-Control", "public")], flags: ["public"]),
        .init(description: "§5.2 no Cache-Control at all", headers: [("Expires", "0")]),
    ]

    @Test(arguments: cases)
    func parses(_ testCase: ParseCase) {
        let headers = CacheFixture.fields(testCase.headers)
        let control = testCase.asRequest ? CacheControl(requestHeaders: headers) : CacheControl(responseHeaders: headers)
        #expect(control.maxAge == testCase.maxAge)
        #expect(control.sMaxAge == testCase.sMaxAge)
        #expect(control.minFresh == testCase.minFresh)
        #expect(control.maxStale == testCase.maxStale)
        #expect(control.staleWhileRevalidate == testCase.staleWhileRevalidate)
        #expect(control.staleIfError == testCase.staleIfError)
        #expect(Self.flags(of: control) == testCase.flags)
        if let directive = testCase.directive {
            #expect(control.directives.contains(directive))
        }
    }

    static func flags(of control: CacheControl) -> Set<String> {
        let all: [(String, Bool)] = [
            ("no-cache", control.noCache), ("no-store", control.noStore), ("private", control.isPrivate),
            ("public", control.isPublic), ("must-revalidate", control.mustRevalidate),
            ("proxy-revalidate", control.proxyRevalidate), ("must-understand", control.mustUnderstand),
            ("no-transform", control.noTransform), ("immutable", control.immutable),
            ("only-if-cached", control.onlyIfCached),
        ]
        return Set(all.filter(\.1).map(\.0))
    }
}
