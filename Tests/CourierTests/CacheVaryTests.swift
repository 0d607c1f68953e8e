import Foundation
import Testing
@testable import Courier

@Suite("Cache: Vary (RFC 9111 §4.1)")
struct CacheVaryTests {
    struct VaryCase: Sendable, CustomTestStringConvertible {
        var description: String
        /// The stored response's Vary lines.
        var vary: [String]
        /// The request that produced the stored response.
        var storedRequest: [(String, String)]
        /// The new request.
        var request: [(String, String)]
        var matches: Bool
        var testDescription: String { description }
    }

    static let cases: [VaryCase] = [
        .init(description: "§4.1 a response without Vary matches any request",
              vary: [], storedRequest: [("Accept", "a")], request: [("Accept", "b")], matches: true),
        .init(description: "§4.1 the same selecting value matches",
              vary: ["Accept-Encoding"], storedRequest: [("Accept-Encoding", "gzip")], request: [("Accept-Encoding", "gzip")], matches: true),
        .init(description: "§4.1 a different selecting value does not match",
              vary: ["Accept-Encoding"], storedRequest: [("Accept-Encoding", "gzip")], request: [("Accept-Encoding", "br")], matches: false),
        .init(description: "§4.1 whitespace is normalised: runs of SP/HTAB collapse, ends are trimmed",
              vary: ["Accept"], storedRequest: [("Accept", "text/html,  \t application/json")],
              request: [("Accept", "text/html, application/json ")], matches: true),
        .init(description: "§4.1 whitespace is only normalised, not removed (a field without field-specific rules)",
              vary: ["X-Variant"], storedRequest: [("X-Variant", "a b")], request: [("X-Variant", "ab")], matches: false),
        .init(description: "§4.1 §12.5.4 Accept-Language compares after normalising case, whitespace, order and q-values",
              vary: ["Accept-Language"], storedRequest: [("Accept-Language", "en-US,fr;q=0.50, de;q=0.5")],
              request: [("Accept-Language", "EN-us , de ; Q=0.500,fr;q=.5")], matches: true),
        .init(description: "§4.1 Accept-Language: q=1 is the default weight",
              vary: ["Accept-Language"], storedRequest: [("Accept-Language", "en;q=1.0")], request: [("Accept-Language", "en")], matches: true),
        .init(description: "§4.1 Accept-Language: different weights still differ",
              vary: ["Accept-Language"], storedRequest: [("Accept-Language", "en, fr;q=0.5")], request: [("Accept-Language", "en;q=0.5, fr")], matches: false),
        .init(description: "§4.1 Accept-Language: a language more or less differs",
              vary: ["Accept-Language"], storedRequest: [("Accept-Language", "en, fr")], request: [("Accept-Language", "en")], matches: false),
        .init(description: "§4.1 Accept-Encoding lists spread over several lines, duplicated, compare as one set",
              vary: ["Accept-Encoding"], storedRequest: [("Accept-Encoding", "gzip, br"), ("Accept-Encoding", "gzip")],
              request: [("Accept-Encoding", "br,gzip")], matches: true),
        .init(description: "§4.1 Accept keeps media-type parameters other than q",
              vary: ["Accept"], storedRequest: [("Accept", "text/html;level=1")], request: [("Accept", "text/html")], matches: false),
        .init(description: "§4.1 a field absent from both requests matches",
              vary: ["Accept-Language"], storedRequest: [], request: [("Accept", "x")], matches: true),
        .init(description: "§4.1 a field present only in the new request does not match",
              vary: ["Accept-Language"], storedRequest: [], request: [("Accept-Language", "en")], matches: false),
        .init(description: "§4.1 a field present only in the stored request does not match",
              vary: ["Accept-Language"], storedRequest: [("Accept-Language", "en")], request: [], matches: false),
        .init(description: "§4.1 Vary: * never matches",
              vary: ["*"], storedRequest: [], request: [], matches: false),
        .init(description: "§4.1 Vary: * within a list never matches",
              vary: ["Accept, *"], storedRequest: [("Accept", "a")], request: [("Accept", "a")], matches: false),
        .init(description: "§4.1 Vary names are case-insensitive",
              vary: ["ACCEPT-language"], storedRequest: [("accept-language", "fr")], request: [("Accept-Language", "fr")], matches: true),
        .init(description: "§4.1 field lines are combined with a comma before comparing",
              vary: ["Accept"], storedRequest: [("Accept", "a"), ("Accept", "b")], request: [("Accept", "a, b")], matches: true),
        .init(description: "§4.1 every named field must match",
              vary: ["Accept, Accept-Language"], storedRequest: [("Accept", "a"), ("Accept-Language", "en")],
              request: [("Accept", "a"), ("Accept-Language", "de")], matches: false),
        .init(description: "§4.1 names from several Vary lines are all used",
              vary: ["Accept", "Accept-Language"], storedRequest: [("Accept", "a"), ("Accept-Language", "en")],
              request: [("Accept", "a"), ("Accept-Language", "en")], matches: true),
        .init(description: "§4.1 values are compared case-sensitively (a field without field-specific rules)",
              vary: ["X-Variant"], storedRequest: [("X-Variant", "GZIP")], request: [("X-Variant", "gzip")], matches: false),
        .init(description: "§4.1 §12.5.3 Accept-Encoding codings are case-insensitive",
              vary: ["Accept-Encoding"], storedRequest: [("Accept-Encoding", "GZIP")], request: [("Accept-Encoding", "gzip")], matches: true),
        .init(description: "§4.1 an invalid field name in Vary is absent from both requests",
              vary: ["bad name, Accept"], storedRequest: [("Accept", "a")], request: [("Accept", "a")], matches: true),
        .init(description: "§4.1 Cookie values (split per cookie by HTTPTypes) compare as one value",
              vary: ["Cookie"], storedRequest: [("Cookie", "a=1"), ("Cookie", "b=2")], request: [("Cookie", "a=1; b=2")], matches: true),
    ]

    @Test(arguments: cases)
    func matchesVariants(_ testCase: VaryCase) {
        let responseHeaders = CacheFixture.fields(testCase.vary.map { ("Vary", $0) })
        let selection = CacheVary.selectedHeaders(vary: responseHeaders, request: CacheFixture.fields(testCase.storedRequest))
        let matched = CacheVary.matches(storedResponseHeaders: responseHeaders, storedSelection: selection,
                                        requestHeaders: CacheFixture.fields(testCase.request))
        #expect(matched == testCase.matches)
    }

    @Test("§4.1 the selected headers recorded with an entry are the normalised Vary fields")
    func recordsSelection() {
        let response = CacheFixture.fields([("Vary", "Accept-Encoding, X-Absent"), ("Vary", "ACCEPT")])
        let request = CacheFixture.fields([("Accept", "a,  b"), ("Accept-Encoding", "gzip"), ("User-Agent", "u")])
        #expect(CacheVary.selectedHeaders(vary: response, request: request) == ["accept-encoding": "gzip", "accept": "a, b"])
        #expect(CacheVary.fieldNames(response) == .names(["accept-encoding", "x-absent", "accept"]))
    }
}
