import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import Testing
@testable import Courier

/// Tier 2: issue 9's cache rules through engine, queue and cache over a fake transport (the table
/// cases for the same rules are in CacheLookupTests, CacheStaleServingTests and CacheVaryTests).
@Suite("Cache rules end to end (RFC 9111 §4.2.4, §4.3.2, §4.3.4, RFC 8246)")
struct CacheRulesEndToEndTests {
    let clock = TestClock()

    func engine(
        _ transport: FakeTransport, directory: URL? = nil, _ configure: (inout NetworkEngine.Configuration) -> Void = { _ in }
    ) -> (NetworkEngine, ResponseCache) {
        let cache = ResponseCache(directory: directory, clock: { [clock] in clock.now })
        let engine = NetworkEngine.fake(transport) {
            $0.cache = cache
            configure(&$0)
        }
        return (engine, cache)
    }

    /// Answers 200 with `control` and `etag` until `down` is set, then fails to connect.
    func origin(_ control: String, etag: String? = "\"a\"", down: NIOLockedValueBox<Bool>) -> FakeTransport {
        FakeTransport { [clock] _ in
            if down.withLockedValue({ $0 }) { throw NetworkError(.cannotConnect, "connection refused") }
            var headers: HTTPFields = [.cacheControl: control, .date: HTTPDate.format(clock.now), .contentType: "text/plain"]
            if let etag { headers[.eTag] = etag }
            return FakeTransport.reply(status: 200, headers: headers, body: "stored")
        }
    }

    // MARK: Items 1 and 2: stale answers when the origin cannot be reached

    @Test func aDisconnectedRequestIsAnsweredStaleByDefaultAndMarked() async throws {
        let down = NIOLockedValueBox(false)
        let (engine, _) = engine(origin("max-age=10", down: down))
        _ = try await engine.send(engine.operation(path: "a"))
        clock.advance(100)
        down.withLockedValue { $0 = true }
        let stale = try await engine.send(engine.operation(path: "a"))
        #expect(stale.cacheOutcome == .stale && stale.isCachedResponse && stale.string == "stored")
        #expect(stale.headers[.age] == "100")
        let optedOut = engine.operation(path: "a")
        optedOut.servesStaleWhenDisconnected = false
        #expect(await failure(of: optedOut)?.code == .cannotConnect, "per operation")
        let (strict, _) = self.engine(origin("max-age=10", down: down)) { $0.servesStaleWhenDisconnected = false }
        down.withLockedValue { $0 = false }
        _ = try await strict.send(strict.operation(path: "a"))
        clock.advance(100)
        down.withLockedValue { $0 = true }
        #expect(await failure(of: strict.operation(path: "a"))?.code == .cannotConnect, "per engine")
    }

    @Test(arguments: ["max-age=10, must-revalidate", "max-age=10, no-cache", "no-cache"])
    func noWayOfServingStaleOverridesMustRevalidateOrNoCache(_ control: String) async throws {
        let down = NIOLockedValueBox(false)
        let (engine, _) = engine(origin(control, down: down)) { $0.fallsBackToCacheOnError = true }
        _ = try await engine.send(engine.operation(path: "a"))
        clock.advance(100)
        down.withLockedValue { $0 = true }
        #expect(await failure(of: engine.operation(path: "a"))?.code == .cannotConnect, "fallsBackToCacheOnError + disconnected")
        let maxStale = engine.operation(path: "a").setHeader("max-stale=1000, stale-if-error=1000", forName: "Cache-Control")
        #expect(await failure(of: maxStale)?.code == .cannotConnect, "the request's own max-stale and stale-if-error")
        let lenient = engine.operation(path: "a")
        lenient.cachePolicy = .returnCacheElseLoad
        #expect(await failure(of: lenient)?.code == .cannotConnect, "returnCacheElseLoad")
        let cacheOnly = engine.operation(path: "a")
        cacheOnly.cachePolicy = .cacheOnly
        #expect(await failure(of: cacheOnly)?.code == .notCached, "cacheOnly")
    }

    @Test func theRequestsOwnDirectivesRefuseAStaleFallback() async throws {
        let down = NIOLockedValueBox(false)
        let (engine, _) = engine(origin("max-age=10", down: down)) { $0.fallsBackToCacheOnError = true }
        _ = try await engine.send(engine.operation(path: "a"))
        clock.advance(100)
        down.withLockedValue { $0 = true }
        for directive in ["no-cache", "max-age=50", "max-stale=30"] {
            let op = engine.operation(path: "a").setHeader(directive, forName: "Cache-Control")
            #expect(await failure(of: op)?.code == .cannotConnect, "\(directive)")
        }
        let accepting = engine.operation(path: "a").setHeader("max-stale=300", forName: "Cache-Control")
        #expect(try await engine.send(accepting).cacheOutcome == .stale)
    }

    @Test func aServerErrorIsNotADisconnection() async throws {
        let failing = NIOLockedValueBox(false)
        let transport = FakeTransport { [clock] _ in
            if failing.withLockedValue({ $0 }) { return FakeTransport.reply(status: 503, headers: [:], body: "down") }
            return FakeTransport.reply(status: 200, headers: [.cacheControl: "max-age=10", .date: HTTPDate.format(clock.now)], body: "stored")
        }
        let (engine, _) = engine(transport)
        _ = try await engine.send(engine.operation(path: "a"))
        clock.advance(100)
        failing.withLockedValue { $0 = true }
        #expect(await failure(of: engine.operation(path: "a"))?.response?.statusCode == 503, "only fallsBackToCacheOnError serves stale on a 503")
    }

    // MARK: Item 3: the application's own conditional requests

    @Test func aFreshStoredResponseAnswersTheAppsConditionWith304() async throws {
        let down = NIOLockedValueBox(false)
        let transport = origin("max-age=60", etag: "W/\"a\"", down: down)
        let (engine, _) = engine(transport)
        _ = try await engine.send(engine.operation(path: "a"))
        for condition in ["\"a\"", "W/\"a\"", "\"x\", W/\"a\"", "*"] {
            let response = try await engine.send(engine.operation(path: "a").setHeader(condition, forName: "If-None-Match"))
            #expect(response.statusCode == 304 && response.body.isEmpty, "\(condition)")
            #expect(response.isCachedResponse && response.cacheOutcome == .hit)
            #expect(response.headers[.eTag] == "W/\"a\"" && response.headers[.contentType] == nil)
        }
        let other = try await engine.send(engine.operation(path: "a").setHeader("\"b\"", forName: "If-None-Match"))
        #expect(other.statusCode == 200 && other.string == "stored" && other.cacheOutcome == .hit, "the app's copy is outdated: the stored one")
        #expect(transport.requestCount == 1)
    }

    @Test func ifModifiedSinceUsesLastModifiedThenDate() async throws {
        let modified = HTTPDate.format(clock.now.addingTimeInterval(-3600))
        let transport = FakeTransport { [clock] _ in
            FakeTransport.reply(status: 200, headers: [.cacheControl: "max-age=60", .date: HTTPDate.format(clock.now), .lastModified: modified], body: "x")
        }
        let (engine, _) = engine(transport)
        _ = try await engine.send(engine.operation(path: "a"))
        let since = { (offset: TimeInterval) in
            engine.operation(path: "a").setHeader(HTTPDate.format(clock.now.addingTimeInterval(offset)), forName: "If-Modified-Since")
        }
        #expect(try await engine.send(since(-3600)).statusCode == 304, "not modified since its Last-Modified")
        #expect(try await engine.send(since(-7200)).statusCode == 200, "modified since")
        let invalid = engine.operation(path: "a").setHeader("yesterday", forName: "If-Modified-Since")
        #expect(try await engine.send(invalid).statusCode == 200, "an invalid date is ignored")
        #expect(transport.requestCount == 1)
    }

    @Test func aStaleEntryForwardsTheAppsConditionUnchanged() async throws {
        let transport = FakeTransport { [clock] request in
            if request.headers[.ifNoneMatch] == "\"b\"" {
                return FakeTransport.reply(status: 304, headers: [.eTag: "\"b\"", .date: HTTPDate.format(clock.now), .cacheControl: "max-age=60"], data: Data())
            }
            return FakeTransport.reply(status: 200, headers: [.cacheControl: "max-age=10", .eTag: "\"a\"", .date: HTTPDate.format(clock.now)], body: "body of a")
        }
        let (engine, _) = engine(transport)
        _ = try await engine.send(engine.operation(path: "a"))
        clock.advance(100)
        // Item 8: the origin's 304 for "b" must not relabel the stored "a".
        let conditional = try await engine.send(engine.operation(path: "a").setHeader("\"b\"", forName: "If-None-Match"))
        #expect(transport.requests.last?.headers[values: .ifNoneMatch] == ["\"b\""], "the app's condition, not the cache's")
        #expect(conditional.statusCode == 304 && conditional.body.isEmpty && !conditional.isCachedResponse)
        let plain = try await engine.send(engine.operation(path: "a"))
        #expect(plain.cacheOutcome == .miss && plain.string == "body of a" && plain.headers[.eTag] == "\"a\"",
                "the stored \"a\" was not freshened by a 304 about \"b\"")
        #expect(transport.requests.last?.headers[.ifNoneMatch] == "\"a\"")
    }

    @Test func a304SelectsTheStoredVariantsItsValidatorNames() async throws {
        // Two variants (Vary: X-Variant) under one URL; a 304 carrying variant 1's strong tag freshens variant 1 only.
        let transport = FakeTransport { [clock] request in
            let variant = request.headers[HTTPField.Name("X-Variant")!] ?? "0"
            var headers: HTTPFields = [.cacheControl: "max-age=10", .vary: "X-Variant", .eTag: "\"v\(variant)\"", .date: HTTPDate.format(clock.now)]
            if request.headers[.ifNoneMatch] != nil {
                headers[.cacheControl] = "max-age=100"
                return FakeTransport.reply(status: 304, headers: headers, data: Data())
            }
            return FakeTransport.reply(status: 200, headers: headers, body: "variant \(variant)")
        }
        let (engine, _) = engine(transport)
        let variant = { (value: String) in engine.operation(path: "a").setHeader(value, forName: "X-Variant") }
        _ = try await engine.send(variant("1"))
        _ = try await engine.send(variant("2"))
        clock.advance(50)
        let revalidated = try await engine.send(variant("1"))
        #expect(revalidated.cacheOutcome == .revalidated && revalidated.string == "variant 1")
        #expect(try await engine.send(variant("1")).cacheOutcome == .hit)
        #expect(try await engine.send(variant("2")).cacheOutcome == .revalidated, "variant 2 was not freshened")
    }

    @Test func a304WithoutValidatorsConfirmsTheEntryTheCacheAskedAbout() async throws {
        let modified = HTTPDate.format(clock.now.addingTimeInterval(-86_400))
        let transport = FakeTransport { [clock] request in
            if request.headers[.ifModifiedSince] != nil {
                return FakeTransport.reply(status: 304, headers: [.date: HTTPDate.format(clock.now)], data: Data())
            }
            return FakeTransport.reply(status: 200, headers: [
                .cacheControl: "max-age=10", .date: HTTPDate.format(clock.now), .lastModified: modified,
            ], body: "stored")
        }
        let (engine, _) = engine(transport)
        _ = try await engine.send(engine.operation(path: "a"))
        clock.advance(100)
        let revalidated = try await engine.send(engine.operation(path: "a"))
        #expect(revalidated.statusCode == 200 && revalidated.string == "stored" && revalidated.cacheOutcome == .revalidated,
                "RFC 9110 §15.4.5: a 304 need not repeat the validator")
        #expect(transport.requests.last?.headers[.ifModifiedSince] == modified)
    }

    // MARK: Items 5, 6, 7, 10

    @Test func equivalentAcceptLanguagesShareAStoredResponse() async throws {
        let transport = FakeTransport { [clock] _ in
            FakeTransport.reply(status: 200, headers: [.cacheControl: "max-age=60", .vary: "Accept-Language", .date: HTTPDate.format(clock.now)], body: "hallo")
        }
        let (engine, _) = engine(transport)
        _ = try await engine.send(engine.operation(path: "a").setHeader("de-DE, en;q=0.50", forName: "Accept-Language"))
        let same = engine.operation(path: "a").setHeader("en;q=0.5,DE-de", forName: "Accept-Language")
        #expect(try await engine.send(same).cacheOutcome == .hit)
        let different = engine.operation(path: "a").setHeader("en, de;q=0.5", forName: "Accept-Language")
        #expect(try await engine.send(different).cacheOutcome == .miss)
    }

    @Test func aFreshImmutableResponseIsNotRevalidatedOnReload() async throws {
        let down = NIOLockedValueBox(false)
        let transport = origin("max-age=60, immutable", down: down)
        let (engine, _) = engine(transport)
        _ = try await engine.send(engine.operation(path: "a"))
        let reload = engine.operation(path: "a")
        reload.cachePolicy = .reloadRevalidating
        #expect(try await engine.send(reload).cacheOutcome == .hit)
        let forced = engine.operation(path: "a")
        forced.cachePolicy = .reloadIgnoringCache
        #expect(try await engine.send(forced).cacheOutcome == .miss, "a forced reload still goes")
        #expect(transport.requestCount == 2)
    }

    @Test func setCookieResponsesAnswerTheSameFromEitherTierAndNeverReachTheDisk() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-cookie-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let transport = FakeTransport { [clock] _ in
            FakeTransport.reply(status: 200, headers: [
                .cacheControl: "max-age=60", .date: HTTPDate.format(clock.now), .setCookie: "session=SECRET-COOKIE-VALUE",
            ], body: "with cookie")
        }
        let (engine, cache) = engine(transport, directory: directory)
        _ = try await engine.send(engine.operation(path: "a"))
        let hit = try await engine.send(engine.operation(path: "a"))
        #expect(hit.cacheOutcome == .hit && hit.headers[.setCookie] == "session=SECRET-COOKIE-VALUE", "the stored headers, whole")
        await cache.synchronize()
        cache.flushMemory()
        let afterFlush = try await engine.send(engine.operation(path: "a"))
        #expect(afterFlush.cacheOutcome == .miss, "never served from disk without its Set-Cookie")
        await cache.synchronize()
        #expect(cache.statistics.diskEntries == 0)
        for file in FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil)?.compactMap({ $0 as? URL }) ?? [] {
            let bytes = (try? Data(contentsOf: file)) ?? Data()
            #expect(bytes.range(of: Data("SECRET-COOKIE-VALUE".utf8)) == nil, "\(file.lastPathComponent)")
        }
    }

    @Test func aPostResponseAnswersALaterGetWhenItsContentLocationIsThePostsOwnURI() async throws {
        let transport = FakeTransport { [clock] request in
            if request.method == .post {
                let location = request.url.path.hasSuffix("/items/7") ? "/v1/items/7" : "/v1/items/8"
                return FakeTransport.reply(status: 200, headers: [
                    .cacheControl: "max-age=60", .date: HTTPDate.format(clock.now), .contentLocation: location,
                ], body: "item from POST")
            }
            return FakeTransport.reply(status: 200, headers: [:], body: "from the origin")
        }
        let (engine, _) = engine(transport)
        _ = try await engine.send(engine.operation(path: "items/7", method: .post))
        let get = try await engine.send(engine.operation(path: "items/7"))
        #expect(get.cacheOutcome == .hit && get.string == "item from POST", "RFC 9110 §9.3.3: a representation of the POST's own resource")
        // A POST to one URI naming another never plants a response there (RFC 9110 §8.7).
        _ = try await engine.send(engine.operation(path: "items", method: .post))
        let other = try await engine.send(engine.operation(path: "items/8"))
        #expect(other.cacheOutcome == .miss && other.string == "from the origin")
    }

    @Test func aCredentialProviderLooksUpUnderThePartitionItStoredUnder() async throws {
        let down = NIOLockedValueBox(false)
        let transport = origin("public, max-age=100", down: down)
        let (engine, _) = engine(transport) { $0.credentialProvider = { _ in [.authorization: "Bearer t"] } }
        var outcomes: [CacheOutcome?] = []
        for _ in 0..<3 { outcomes.append(try await engine.send(engine.operation(path: "a")).cacheOutcome) }
        #expect(outcomes == [.miss, .hit, .hit])
    }
}
