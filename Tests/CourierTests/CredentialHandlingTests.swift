import Foundation
import NIOConcurrencyHelpers
import Testing
@testable import Courier

/// Tier 2 (issue 18 C, 4, 10): credentials from headers and from the provider partition the cache,
/// stay with their origin, never reach the outbox, and are the ones of the moment a request is sent.
@Suite("Credentials")
struct CredentialHandlingTests {
    /// Answers `private, max-age=300` with the path and the credential it saw.
    static func origin(headerName: String = "Authorization") -> FakeTransport {
        FakeTransport { request in
            let seen = request.headers[HTTPField.Name(headerName)!] ?? "none"
            return FakeTransport.reply(
                status: 200, headers: [.contentType: "text/plain", .cacheControl: "private, max-age=300"], body: "for \(seen)")
        }
    }

    static func cachedEngine(
        _ transport: FakeTransport, _ configure: (inout NetworkEngine.Configuration) -> Void = { _ in }
    ) -> NetworkEngine {
        NetworkEngine.fake(transport) {
            $0.cache = ResponseCache(directory: nil)
            configure(&$0)
        }
    }

    // MARK: C

    @Test func aPrivateResponseToATokenFromTheProviderIsStoredForThatToken() async throws {
        let token = NIOLockedValueBox("alice-token")
        let transport = Self.origin()
        let engine = Self.cachedEngine(transport) { configuration in
            configuration.credentialProvider = { _ in [.authorization: "Bearer \(token.withLockedValue { $0 })"] }
        }
        let first = try await engine.send(engine.operation(path: "me"))
        #expect(first.cacheOutcome == .miss)
        let second = try await engine.send(engine.operation(path: "me"))
        #expect(second.cacheOutcome == .hit, "stored, in alice's partition")
        #expect(second.string == "for Bearer alice-token")
        token.withLockedValue { $0 = "bob-token" }
        let third = try await engine.send(engine.operation(path: "me"))
        #expect(third.cacheOutcome == .miss, "bob never gets alice's response")
        #expect(third.string == "for Bearer bob-token")
        #expect(transport.requestCount == 2)
    }

    @Test func aResponseThatIsNotStoredSaysWhyInTheLog() async throws {
        let logs = LogRecorder()
        let transport = FakeTransport { _ in FakeTransport.reply(headers: [.cacheControl: "no-store"]) }
        let engine = Self.cachedEngine(transport) { $0.logger = logs.logger(level: .debug) }
        #expect(try await engine.send(engine.operation(path: "x")).cacheOutcome == .miss)
        let line = logs.all.first { $0.message == "courier response not stored" }
        #expect(line?.metadata["courier-reason"] == "noStoreInResponse")
    }

    // MARK: 4

    @Test func aCredentialLikeCustomHeaderPartitionsTheCache() async throws {
        let transport = Self.origin(headerName: "X-Auth-Token")
        let engine = Self.cachedEngine(transport)
        let me = { (token: String) in engine.operation(path: "me").setHeader(token, forName: "X-Auth-Token") }
        #expect(try await engine.send(me("A")).string == "for A")
        let asB = try await engine.send(me("B"))
        #expect(asB.cacheOutcome == .miss, "B never gets A's body")
        #expect(asB.string == "for B")
        #expect(try await engine.send(me("A")).cacheOutcome == .hit)
    }

    @Test func anAPIsOwnCredentialHeaderCountsOnceConfigured() async throws {
        let transport = Self.origin(headerName: "X-Session")
        let plain = Self.cachedEngine(transport)
        _ = try await plain.send(plain.operation(path: "me").setHeader("one", forName: "X-Session"))
        #expect(try await plain.send(plain.operation(path: "me").setHeader("two", forName: "X-Session")).cacheOutcome == .hit,
                "an unknown header is not a credential")
        let configured = Self.cachedEngine(transport) { $0.sensitiveHeaderNames.insert("x-session") }
        _ = try await configured.send(configured.operation(path: "me").setHeader("one", forName: "X-Session"))
        #expect(try await configured.send(configured.operation(path: "me").setHeader("two", forName: "X-Session")).cacheOutcome == .miss)
        #expect(configured.operation(path: "me").setHeader("secret-session", forName: "X-Session").curlCommand.contains("secret-session") == false)
    }

    // MARK: 10a

    @Test func theProvidersFieldsStayWithTheirOriginAndOffTheDisk() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-cred-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let transport = FakeTransport { request in
            if request.url.host == "api.example.com" {
                return FakeTransport.reply(status: 302, headers: [.location: "https://cdn.example.net/file"], body: "")
            }
            return FakeTransport.reply()
        }
        let engine = NetworkEngine.fake(transport) {
            $0.credentialProvider = { _ in [HTTPField.Name("X-Tenant-Key")!: "tenant-secret-1", .authorization: "Bearer provider-secret-2"] }
            $0.dataDirectory = directory
        }
        _ = try await engine.send(engine.operation(path: "file"))
        #expect(transport.requests.count == 2)
        #expect(transport.requests[0].headers[HTTPField.Name("X-Tenant-Key")!] == "tenant-secret-1")
        #expect(transport.requests[1].headers[HTTPField.Name("X-Tenant-Key")!] == nil, "not sent to another origin")
        #expect(transport.requests[1].headers[.authorization] == nil)

        // Frozen after a connection failure: neither provider field is written to the outbox.
        let down = FakeTransport { _ in throw NetworkError(.cannotConnect, "refused") }
        let offline = NetworkEngine.fake(down) {
            $0.credentialProvider = { _ in [HTTPField.Name("X-Tenant-Key")!: "tenant-secret-1", .authorization: "Bearer provider-secret-2"] }
            $0.dataDirectory = directory
            $0.replaysOutbox = false
        }
        let post = offline.operation(path: "notes", method: .post, body: .text("hi"))
        post.isFreezable = true
        post.setHeader("header-secret-3", forName: "X-API-Key")
        offline.enqueue(post)
        #expect(await eventually { post.state == .frozen })
        #expect(secretsFound(["tenant-secret-1", "provider-secret-2", "header-secret-3"], under: directory).isEmpty)
        post.cancel()
    }

    @Test func curlCommandShowsTheProvidersAuthorizationMasked() {
        let engine = NetworkEngine.fake(FakeTransport()) { $0.credentialProvider = { _ in [.authorization: "Bearer abc.def"] } }
        let curl = engine.operation(path: "me").curlCommand
        #expect(curl.contains("Authorization: Bearer ***"), "\(curl)")
        #expect(!curl.contains("abc.def"))
    }

    // MARK: 10b

    @Test func theTokenSentIsTheOneOfTheMomentTheRequestGoesOut() async throws {
        let token = NIOLockedValueBox("old")
        let transport = FakeTransport { request in
            if request.url.path.hasSuffix("refresh") {
                try await Task.sleep(for: .milliseconds(150))
                token.withLockedValue { $0 = "new" }   // the refresh lands while the GET waits on it
            }
            return FakeTransport.reply()
        }
        let engine = NetworkEngine.fake(transport) { configuration in
            configuration.credentialProvider = { _ in [.authorization: "Bearer \(token.withLockedValue { $0 })"] }
        }
        let refresh = engine.operation(path: "refresh", method: .post)
        let fetch = engine.operation(path: "me")
        fetch.addDependency(refresh)
        engine.enqueue(refresh)
        engine.enqueue(fetch)
        _ = try await fetch.response()
        #expect(transport.requests.last?.headers[.authorization] == "Bearer new")
    }
}
