import Foundation
import Testing
@testable import Courier

@Suite("Cache: invalidation (RFC 9111 §4.4)")
struct CacheInvalidationTests {
    struct InvalidationCase: Sendable, CustomTestStringConvertible {
        var description: String
        var method: HTTPRequest.Method = .post
        var url = "https://example.com/items/1"
        var status = 200
        var headers: [(String, String)] = []
        var expected: [String]
        var testDescription: String { description }
    }

    static func method(_ name: String) -> HTTPRequest.Method {
        HTTPRequest.Method(name) ?? .post
    }

    static let cases: [InvalidationCase] = [
        .init(description: "§4.4 an unsafe method invalidates the target URI", expected: ["https://example.com/items/1"]),
        .init(description: "§4.4 a same-origin Location is invalidated", status: 201,
              headers: [("Location", "https://example.com/items/2")], expected: ["https://example.com/items/1", "https://example.com/items/2"]),
        .init(description: "§4.4 a cross-origin Location is not invalidated", status: 201,
              headers: [("Location", "https://other.example/items/2")], expected: ["https://example.com/items/1"]),
        .init(description: "§4.4 another port is another origin",
              headers: [("Location", "https://example.com:8443/x")], expected: ["https://example.com/items/1"]),
        .init(description: "§4.4 another scheme is another origin",
              headers: [("Location", "http://example.com/x")], expected: ["https://example.com/items/1"]),
        .init(description: "§4.4 a relative Location is resolved against the target URI",
              headers: [("Location", "../list?page=2")], expected: ["https://example.com/items/1", "https://example.com/list?page=2"]),
        .init(description: "§4.4 an absolute-path Location is resolved",
              headers: [("Location", "/a")], expected: ["https://example.com/items/1", "https://example.com/a"]),
        .init(description: "§4.4 a network-path Location to another host is cross-origin",
              headers: [("Location", "//cdn.example/a")], expected: ["https://example.com/items/1"]),
        .init(description: "§4.4 a same-origin Content-Location is invalidated", method: .put,
              headers: [("Content-Location", "/items/1/v2")], expected: ["https://example.com/items/1", "https://example.com/items/1/v2"]),
        .init(description: "§4.4 Location and Content-Location together, explicit default port normalised", method: .patch,
              headers: [("Location", "https://EXAMPLE.com:443/b"), ("Content-Location", "/c#frag")],
              expected: ["https://example.com/items/1", "https://example.com/b", "https://example.com/c"]),
        .init(description: "§4.4 a Location equal to the target URI is listed once",
              headers: [("Location", "/items/1")], expected: ["https://example.com/items/1"]),
        .init(description: "§4.4 a 3xx is a non-error status", status: 303,
              headers: [("Location", "/done")], expected: ["https://example.com/items/1", "https://example.com/done"]),
        .init(description: "§4.4 an error status (500) invalidates nothing", status: 500, headers: [("Location", "/a")], expected: []),
        .init(description: "§4.4 an error status (404) invalidates nothing", method: .delete, status: 404, expected: []),
        .init(description: "§4.4 GET is safe and invalidates nothing", method: .get, expected: []),
        .init(description: "§4.4 HEAD is safe and invalidates nothing", method: .head, expected: []),
        .init(description: "§4.4 OPTIONS is safe and invalidates nothing", method: .options, expected: []),
        .init(description: "§4.4 TRACE is safe and invalidates nothing", method: .trace, expected: []),
        .init(description: "§4.4 DELETE invalidates", method: .delete, status: 204, expected: ["https://example.com/items/1"]),
        .init(description: "§4.4 an unknown method is unsafe and invalidates", method: method("PURGE"),
              expected: ["https://example.com/items/1"]),
        .init(description: "RFC 9110 §9.1 methods are case-sensitive: \"get\" is unknown, so unsafe", method: method("get"),
              expected: ["https://example.com/items/1"]),
        .init(description: "§4.4 the target URI key is normalised (case, default port, fragment)",
              url: "HTTPS://Example.COM:443/Items/1#top", expected: ["https://example.com/Items/1"]),
        .init(description: "§4.4 a Location that is not a URI reference is ignored",
              headers: [("Location", "http://[not-an-ip/")], expected: ["https://example.com/items/1"]),
    ]

    @Test(arguments: cases)
    func invalidates(_ testCase: InvalidationCase) {
        let keys = CacheInvalidation.invalidatedKeys(
            method: testCase.method, requestURL: CacheFixture.makeURL(testCase.url),
            status: HTTPResponse.Status(code: testCase.status), responseHeaders: CacheFixture.fields(testCase.headers)
        )
        #expect(keys == testCase.expected)
    }
}
