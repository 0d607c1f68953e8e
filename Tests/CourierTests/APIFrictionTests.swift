import Foundation
import HTTPTypes
import Testing
@testable import Courier

/// Issue 9 items 18 and 19: the small things a new user met, through the public API.
@Suite("API friction: secrets in curl, repeated fields, default fields, bodies, single cache entries")
struct APIFrictionTests {
    struct Login: Encodable {
        var user: String
        var credentials: [String: String]
    }

    @Test func curlCommandMasksSecretQueryItemsAndBodyFields() {
        let engine = NetworkEngine.fake(FakeTransport())
        let query = engine.operation(path: "search", params: ["q": "cats", "api_key": "K3Y-VALUE", "token": "T0KEN"]).curlCommand
        #expect(!query.contains("K3Y-VALUE") && !query.contains("T0KEN") && query.contains("q=cats"), "\(query)")
        let form = engine.operation(path: "login", method: .post, body: .form(["user": "ada", "password": "hunter2"])).curlCommand
        #expect(!form.contains("hunter2") && form.contains("user=ada") && form.contains("password=***"), "\(form)")
        let json = engine.operation(path: "login", method: .post, body: .json(Login(user: "ada", credentials: ["secret": "s3cr3t"]))).curlCommand
        #expect(!json.contains("s3cr3t") && json.contains("ada"), "\(json)")
        let nested = engine.operation(path: "x", method: .post, body: .json(["token": ["abc-123"]])).curlCommand
        #expect(!nested.contains("abc-123"), "a secret's whole value, array or object, is masked")
        let custom = NetworkEngine.fake(FakeTransport()) { $0.sensitiveParameterNames.insert("pin") }
        #expect(!custom.operation(path: "x", params: ["pin": "1234"]).curlCommand.contains("1234"))
    }

    @Test func repeatedFieldsAreSentAsSeveralLines() async throws {
        let transport = FakeTransport()
        let engine = NetworkEngine.fake(transport)
        let op = engine.operation(path: "a").appendHeader("text/html", forName: "Accept").appendHeader("application/json;q=0.9", forName: "Accept")
        _ = try await engine.send(op)
        #expect(transport.requests.last?.headers[values: .accept] == ["text/html", "application/json;q=0.9"])
        let injected = engine.operation(path: "a").appendHeader("x\r\nEvil: 1", forName: "Accept")
        #expect(await failure(of: injected)?.code == .invalidHeader)
    }

    @Test func userAgentAndAcceptLanguageCanBeTurnedOff() async throws {
        let transport = FakeTransport()
        let engine = NetworkEngine.fake(transport) {
            $0.userAgent = nil
            $0.acceptLanguage = nil
        }
        _ = try await engine.send(engine.operation(path: "a"))
        #expect(transport.requests.last?.headers[.userAgent] == nil && transport.requests.last?.headers[.acceptLanguage] == nil)
    }

    @Test func aDataBodyCanGoWithoutContentType() async throws {
        let transport = FakeTransport()
        let engine = NetworkEngine.fake(transport)
        _ = try await engine.send(engine.operation(path: "a", method: .post, body: .data(Data([1, 2]), contentType: nil)))
        #expect(transport.requests.last?.headers[.contentType] == nil)
        _ = try await engine.send(engine.operation(path: "a", method: .post, body: .data(Data([1, 2]))))
        #expect(transport.requests.last?.headers[.contentType] == "application/octet-stream")
    }

    @Test func oneStoredResponseCanBeLookedUpAndRemoved() async throws {
        let transport = FakeTransport { _ in
            FakeTransport.reply(status: 200, headers: [.cacheControl: "max-age=60", .vary: "Accept-Language"], body: "stored")
        }
        let cache = ResponseCache(directory: nil)
        let engine = NetworkEngine.fake(transport) { $0.cache = cache; $0.acceptLanguage = "fr" }
        _ = try await engine.send(engine.operation(path: "a"))
        _ = try await engine.send(engine.operation(path: "b"))
        let url = try #require(URL(string: "https://api.example.com/v1/a"))
        let stored = await cache.storedResponse(for: url, headers: ["Accept-Language": "fr"])
        #expect(stored?.string == "stored" && stored?.isCachedResponse == true)
        #expect(await cache.storedResponse(for: url, headers: ["Accept-Language": "de"]) == nil, "Vary applies")
        cache.removeResponses(for: url)
        #expect(await cache.storedResponse(for: url, headers: ["Accept-Language": "fr"]) == nil)
        #expect(try await engine.send(engine.operation(path: "b")).cacheOutcome == .hit, "the others stay")
    }
}
