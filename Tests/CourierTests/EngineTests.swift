import Foundation
import Testing
@testable import Courier

/// Tier 2: the engine and operations over a fake transport.
@Suite("NetworkEngine over a fake transport")
struct EngineTests {
    @Test func composesURLsAndPutsParamsInTheQueryForGET() async throws {
        let transport = FakeTransport()
        let engine = NetworkEngine.fake(transport, baseURL: "https://API.example.com:443/v1/")
        try await engine.send(engine.operation(path: "/rates", params: ["base": "EUR", "symbols": ["USD", "GBP"], "x": ["y": true]]))
        #expect(transport.requests.first?.url.absoluteString
            == "https://api.example.com/v1/rates?base=EUR&symbols%5B%5D=USD&symbols%5B%5D=GBP&x%5By%5D=1")
        #expect(transport.requests.first?.body == nil)
    }

    @Test func hostInitComposesLikeMKNetworkKit() async throws {
        let transport = FakeTransport()
        let engine = NetworkEngine(host: "example.com", port: 8080, apiPath: "/api/", isSecure: false, queue: NetworkQueue(), transport: transport)
        #expect(engine.baseURL == "http://example.com:8080/api")
        try await engine.send(engine.operation(path: "/"))
        try await engine.send(engine.operation(path: "users/1"))
        #expect(transport.requests.map(\.url.absoluteString) == ["http://example.com:8080/api/", "http://example.com:8080/api/users/1"])
    }

    @Test func paramsGoToAFormBodyForPOSTAndToTheQueryForDELETE() async throws {
        let transport = FakeTransport()
        let engine = NetworkEngine.fake(transport)
        try await engine.send(engine.operation(path: "items", params: ["name": "a b", "n": 2], method: .post))
        try await engine.send(engine.operation(path: "items/1", params: ["force": true], method: .delete))
        let post = try #require(transport.requests.first)
        #expect(post.url.absoluteString == "https://api.example.com/v1/items")
        #expect(post.body.map { String(decoding: $0, as: UTF8.self) } == "n=2&name=a%20b")
        #expect(post.headers[.contentType] == "application/x-www-form-urlencoded; charset=utf-8")
        #expect(transport.requests.last?.url.query == "force=1")
    }

    @Test func jsonBodiesUseTheCallersEncoderAndParamsThenGoToTheQuery() async throws {
        struct Post: Encodable { var createdAt: Date }
        let transport = FakeTransport()
        let engine = NetworkEngine.fake(transport)
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        try await engine.send(engine.operation(
            path: "posts", params: ["draft": true], method: .post, body: .json(Post(createdAt: Date(timeIntervalSince1970: 7)), encoder: encoder)))
        let request = try #require(transport.requests.first)
        #expect(request.body.map { String(decoding: $0, as: UTF8.self) } == #"{"createdAt":7}"#)
        #expect(request.headers[.contentType] == "application/json")
        #expect(request.url.query == "draft=1")
    }

    @Test func defaultHeadersAndOverrides() async throws {
        let transport = FakeTransport()
        let engine = NetworkEngine.fake(transport, headers: ["x-client-identifier": "iOS", "Accept": "text/plain"])
        let op = engine.operation(path: "a").setHeader("application/json", forName: "accept")
        try await engine.send(op)
        let headers = try #require(transport.requests.first?.headers)
        #expect(headers[.userAgent]?.hasPrefix("Courier/\(CourierLibrary.version) (") == true)
        #expect(headers[.acceptLanguage]?.isEmpty == false)
        #expect(headers[HTTPField.Name("X-Client-Identifier")!] == "iOS")
        #expect(headers[values: .accept] == ["application/json"], "the operation's header replaces the engine's")
    }

    @Test(arguments: ["a\r\nInjected: yes", "a\nb", "a\rb", "nul\0"])
    func headerInjectionIsRejectedBeforeAnythingIsSent(value: String) async {
        let transport = FakeTransport()
        let engine = NetworkEngine.fake(transport)
        let error = await #expect(throws: NetworkError.self) {
            try await engine.send(engine.operation(path: "a").setHeader(value, forName: "X-Test"))
        }
        #expect(error?.code == .invalidHeader)
        let engineLevel = NetworkEngine.fake(transport, headers: ["X-Bad": value])
        let engineError = await #expect(throws: NetworkError.self) { try await engineLevel.send(engineLevel.operation(path: "a")) }
        #expect(engineError?.code == .invalidHeader)
        let badName = await #expect(throws: NetworkError.self) {
            try await engine.send(engine.operation(path: "a").setHeader("v", forName: "Bad Name:"))
        }
        #expect(badName?.code == .invalidHeader)
        #expect(transport.requestCount == 0)
    }

    @Test(arguments: ["https://exa mple.com", "ftp://example.com", "https://", "not a url", "https://a.com/?q=1"])
    func invalidBaseURLsFailEveryOperationWithInvalidURL(base: String) async {
        let transport = FakeTransport()
        let engine = NetworkEngine.fake(transport, baseURL: base)
        let error = await #expect(throws: NetworkError.self) { try await engine.send(engine.operation(path: "x")) }
        #expect(error?.code == .invalidURL)
        #expect(transport.requestCount == 0)
    }

    @Test func invalidHostsAndAbsoluteURLsFailWithInvalidURL() async {
        let transport = FakeTransport()
        let engine = NetworkEngine(host: "bad host/", queue: NetworkQueue(), transport: transport)
        let hostError = await #expect(throws: NetworkError.self) { try await engine.send(engine.operation(path: "x")) }
        #expect(hostError?.code == .invalidURL)
        let good = NetworkEngine.fake(transport)
        for url in ["/relative", "mailto:a@b.c", "http:///nohost", ""] {
            let error = await #expect(throws: NetworkError.self) { try await good.send(good.operation(url: url)) }
            #expect(error?.code == .invalidURL, "\(url)")
        }
        #expect(transport.requestCount == 0)
    }

    @Test func bodyOverTheLimitIsATypedError() async {
        let big = Data(repeating: 7, count: 2 << 20)
        let declared = FakeTransport { _ in FakeTransport.reply(status: 200, headers: [.contentLength: "\(big.count)"], data: big) }
        let undeclared = FakeTransport { _ in FakeTransport.reply(status: 200, headers: [:], data: big, parts: 32) }
        for transport in [declared, undeclared] {
            let engine = NetworkEngine.fake(transport) { $0.maximumResponseBodySize = 1 << 20 }
            let error = await #expect(throws: NetworkError.self) { try await engine.send(engine.operation(path: "big")) }
            #expect(error?.code == .bodyTooLarge)
        }
    }

    @Test func unacceptableStatusCarriesTheResponseAndBody() async {
        let transport = FakeTransport { _ in FakeTransport.reply(status: 404, headers: [.contentType: "text/plain"], body: "no such thing") }
        let engine = NetworkEngine.fake(transport)
        let op = engine.operation(path: "missing")
        let error = await #expect(throws: NetworkError.self) { try await engine.send(op) }
        #expect(error?.code == .unacceptableStatus)
        #expect(error?.response?.statusCode == 404)
        #expect(error?.body.map { String(decoding: $0, as: UTF8.self) } == "no such thing")
        #expect(op.statusCode == 404)
        #expect(op.receivedResponse?.string == "no such thing")
    }

    @Test func acceptableStatusesAndContentTypesAreConfigurable() async throws {
        let transport = FakeTransport { _ in FakeTransport.reply(status: 404, headers: [.contentType: "text/html; charset=utf-8"], body: "<p>") }
        let lenient = NetworkEngine.fake(transport) { $0.acceptableStatusCodes = [404] }
        #expect(try await lenient.send(lenient.operation(path: "x")).statusCode == 404)
        let strict = NetworkEngine.fake(transport) {
            $0.acceptableStatusCodes = [404]
            $0.acceptableContentTypes = ["application/json", "application/*+json"]
        }
        let error = await #expect(throws: NetworkError.self) { try await strict.send(strict.operation(path: "x")) }
        #expect(error?.code == .unacceptableContentType)
        let wildcard = NetworkEngine.fake(transport) {
            $0.acceptableStatusCodes = [404]
            $0.acceptableContentTypes = ["text/*"]
        }
        #expect(try await wildcard.send(wildcard.operation(path: "x")).statusCode == 404)
    }

    @Test func decodingAndTypedAccessors() async throws {
        struct Rates: Decodable { var base: String }
        let transport = FakeTransport { request in
            request.url.path.hasSuffix("broken")
                ? FakeTransport.reply(body: #"{"base": "EUR", broken"#)
                : FakeTransport.reply(body: #"{"base": "EUR"}"#)
        }
        let engine = NetworkEngine.fake(transport)
        #expect(try await engine.send(engine.operation(path: "ok"), decoding: Rates.self).base == "EUR")
        let op = engine.operation(path: "broken")
        try await engine.send(op)
        #expect(throws: NetworkError.self) { try op.decode(Rates.self) }
        do {
            _ = try op.receivedResponse?.json()
            Issue.record("broken JSON parsed")
        } catch {
            #expect(error.code == .decodingFailed)
            #expect(error.response?.statusCode == 200)
        }
        let error = await #expect(throws: NetworkError.self) {
            try await engine.send(engine.operation(path: "broken"), decoding: Rates.self)
        }
        #expect(error?.code == .decodingFailed)
    }

    @Test func transportFailuresMidBodyAreTyped() async {
        let transport = FakeTransport { _ in
            FakeTransport.reply(status: 200, headers: [.contentLength: "100"], data: Data(count: 10),
                                failure: NetworkError(.connectionLost, "dropped"))
        }
        let engine = NetworkEngine.fake(transport)
        let error = await #expect(throws: NetworkError.self) { try await engine.send(engine.operation(path: "x")) }
        #expect(error?.code == .connectionLost)
        #expect(error?.url == "https://api.example.com/v1/x")
        let unknown = FakeTransport { _ in struct Weird: Error {}; throw Weird() }
        let other = NetworkEngine.fake(unknown)
        let wrapped = await #expect(throws: NetworkError.self) { try await other.send(other.operation(path: "x")) }
        #expect(wrapped?.code == .transport)
        #expect(wrapped?.underlying != nil)
    }

    @Test func redirectsAreFollowedAboveTheTransportAndTheChainKept() async throws {
        let transport = FakeTransport { request in
            switch request.url.path {
            case "/v1/old": FakeTransport.reply(status: 301, headers: [.location: "/v1/new"], body: "")
            default: FakeTransport.reply(body: "{}")
            }
        }
        let engine = NetworkEngine.fake(transport)
        let op = engine.operation(path: "old")
        try await engine.send(op)
        #expect(op.originalURL?.absoluteString == "https://api.example.com/v1/old")
        #expect(op.url?.absoluteString == "https://api.example.com/v1/new")
        #expect(op.redirectChain.map(\.statusCode) == [301])
        #expect(transport.requestCount == 2)
    }

    @Test func curlCommandMasksCredentials() {
        let engine = NetworkEngine.fake(FakeTransport())
        let op = engine.operation(path: "p", params: ["q": "it's"], method: .post)
            .setHeader("Bearer s3cret-token", forName: "Authorization")
            .setHeader("session=abc123; theme=dark", forName: "Cookie")
        let curl = op.curlCommand
        #expect(curl.hasPrefix("curl -X POST https://api.example.com/v1/p -H "))
        #expect(curl.contains("'Authorization: Bearer ***'"))
        #expect(curl.contains("'Cookie: session=***; theme=***'"))
        #expect(curl.hasSuffix("--data-binary q=it%27s"))
        #expect(!curl.contains("s3cret") && !curl.contains("abc123") && !curl.contains("dark"))
    }

    @Test func uniqueIdentifierIsStableAndNormalised() {
        let engine = NetworkEngine.fake(FakeTransport())
        let a = engine.operation(url: "HTTPS://API.Example.com:443/x?b=1#frag")
        let b = engine.operation(url: "https://api.example.com/x?b=1")
        let c = engine.operation(url: "https://api.example.com/x?b=2")
        let post1 = engine.operation(url: "https://api.example.com/x", method: .post, body: .text("one"))
        let post2 = engine.operation(url: "https://api.example.com/x", method: .post, body: .text("two"))
        #expect(a.uniqueIdentifier == b.uniqueIdentifier)
        #expect(a.uniqueIdentifier != c.uniqueIdentifier)
        #expect(post1.uniqueIdentifier != post2.uniqueIdentifier)
        #expect(post1.uniqueIdentifier != engine.operation(url: "https://api.example.com/x", method: .put, body: .text("one")).uniqueIdentifier)
        #expect(a.uniqueIdentifier.count == 64)
        // The queue compares the identity the identifier digests: equal exactly when the identifiers are.
        #expect(a.identity == b.identity && a.identity != c.identity && post1.identity != post2.identity)
        #expect(a.uniqueIdentifier == NetworkEngine.fake(FakeTransport()).operation(url: "https://api.example.com/x?b=1").uniqueIdentifier)
    }

    @Test func tagUserInfoAndDescription() async throws {
        let engine = NetworkEngine.fake(FakeTransport())
        let op = engine.operation(path: "x")
        op.tag = 42
        op.userInfo = ["row": 3]
        try await engine.send(op)
        #expect(op.tag == 42)
        #expect(op.userInfo["row"] as? Int == 3)
        #expect(op.description.contains("GET https://api.example.com/v1/x finished 200"))
    }
}
