import Foundation
import NIOConcurrencyHelpers
import Testing
@testable import Courier

/// A clock the test moves by hand.
final class TestClock: Sendable {
    private let current = NIOLockedValueBox(Date(timeIntervalSince1970: 1_800_000_000))
    var now: Date { current.withLockedValue { $0 } }
    func advance(_ seconds: TimeInterval) { current.withLockedValue { $0 += seconds } }
}

/// Tier 2: the cache in the operation flow, over a fake transport, with an injected clock.
@Suite("ResponseCache with operations")
struct ResponseCacheTests {
    let clock = TestClock()

    func engine(
        _ transport: FakeTransport, cache: ResponseCache? = nil, _ configure: (inout NetworkEngine.Configuration) -> Void = { _ in }
    ) -> (NetworkEngine, ResponseCache) {
        let cache = cache ?? ResponseCache(directory: nil, clock: { [clock] in clock.now })
        let engine = NetworkEngine.fake(transport) {
            $0.cache = cache
            configure(&$0)
        }
        return (engine, cache)
    }

    func date(_ offset: TimeInterval = 0) -> String { HTTPDate.format(clock.now.addingTimeInterval(offset)) }

    /// Answers with `headers` (plus Date), or 304 when the request's If-None-Match matches `etag`.
    func server(_ headers: HTTPFields, etag: String? = nil, body: String = "payload", status: Int = 200) -> FakeTransport {
        FakeTransport { [clock] request in
            var fields = headers
            fields[.date] = HTTPDate.format(clock.now)
            if let etag { fields[.eTag] = etag }
            if let etag, request.headers[.ifNoneMatch] == etag {
                return FakeTransport.reply(status: 304, headers: fields, data: Data())
            }
            return FakeTransport.reply(status: status, headers: fields, data: Data(body.utf8))
        }
    }

    @Test func freshHitsNeverReachTheNetworkAndCarryAnAge() async throws {
        let transport = server([.cacheControl: "max-age=60"])
        let (engine, cache) = engine(transport)
        let first = try await engine.send(engine.operation(path: "a"))
        #expect(first.cacheOutcome == .miss && !first.isCachedResponse)
        clock.advance(10)
        let second = try await engine.send(engine.operation(path: "a"))
        #expect(second.cacheOutcome == .hit && second.isCachedResponse)
        #expect(second.headers[.age] == "10")
        #expect(second.string == "payload")
        #expect(transport.requestCount == 1)
        #expect(cache.statistics.hits == 1 && cache.statistics.misses == 1 && cache.statistics.entries == 1)
    }

    @Test func staleResponsesAreRevalidatedAndA304RefreshesTheEntry() async throws {
        let transport = server([.cacheControl: "max-age=5"], etag: "\"v1\"")
        let (engine, cache) = engine(transport)
        _ = try await engine.send(engine.operation(path: "a"))
        clock.advance(10)
        let revalidated = try await engine.send(engine.operation(path: "a"))
        #expect(revalidated.cacheOutcome == .revalidated)
        #expect(revalidated.statusCode == 200 && revalidated.string == "payload")
        #expect(transport.requests.last?.headers[.ifNoneMatch] == "\"v1\"")
        #expect(cache.statistics.revalidations == 1)
        let hit = try await engine.send(engine.operation(path: "a"))
        #expect(hit.cacheOutcome == .hit, "the 304 restarted the entry's freshness")
        #expect(transport.requestCount == 2)
    }

    @Test func noStoreIsNeverStoredAndUnsafeMethodsInvalidate() async throws {
        let noStore = server([.cacheControl: "no-store, max-age=60"])
        let (engine, _) = engine(noStore)
        _ = try await engine.send(engine.operation(path: "a"))
        #expect(try await engine.send(engine.operation(path: "a")).cacheOutcome == .miss)

        let cached = server([.cacheControl: "max-age=60"])
        let (engine2, cache) = self.engine(cached)
        _ = try await engine2.send(engine2.operation(path: "items"))
        #expect(cache.statistics.entries == 1)
        _ = try await engine2.send(engine2.operation(path: "items", method: .post, body: .text("new")))
        #expect(cache.statistics.entries == 0)
        #expect(try await engine2.send(engine2.operation(path: "items")).cacheOutcome == .miss)
    }

    @Test func varyKeepsOneVariantPerSelectingHeader() async throws {
        let transport = FakeTransport { [clock] request in
            let language = request.headers[.acceptLanguage] ?? "none"
            return FakeTransport.reply(
                status: 200, headers: [.cacheControl: "max-age=60", .vary: "Accept-Language", .date: HTTPDate.format(clock.now)],
                data: Data(language.utf8))
        }
        let (engine, cache) = engine(transport)
        for language in ["fr", "de", "fr", "de"] {
            let op = engine.operation(path: "greeting").setHeader(language, forName: "Accept-Language")
            #expect(try await engine.send(op).string == language)
        }
        #expect(transport.requestCount == 2)
        #expect(cache.statistics.entries == 2)
    }

    @Test func policies() async throws {
        let transport = server([.cacheControl: "max-age=5"], etag: "\"v\"")
        let (engine, _) = engine(transport)
        let cacheOnlyMiss = engine.operation(path: "p")
        cacheOnlyMiss.cachePolicy = .cacheOnly
        #expect(await failure(of: cacheOnlyMiss)?.code == .notCached)
        #expect(transport.requestCount == 0)

        _ = try await engine.send(engine.operation(path: "p"))
        clock.advance(100)
        let lenient = engine.operation(path: "p")
        lenient.cachePolicy = .returnCacheElseLoad
        #expect(try await engine.send(lenient).cacheOutcome == .stale)
        let cacheOnly = engine.operation(path: "p")
        cacheOnly.cachePolicy = .cacheOnly
        #expect(try await engine.send(cacheOnly).cacheOutcome == .stale)
        #expect(transport.requestCount == 1)

        let reload = engine.operation(path: "p")
        reload.cachePolicy = .reloadIgnoringCache
        #expect(try await engine.send(reload).cacheOutcome == .miss)
        #expect(transport.requests.last?.headers[.ifNoneMatch] == nil)
        let revalidating = engine.operation(path: "p")
        revalidating.cachePolicy = .reloadRevalidating
        #expect(try await engine.send(revalidating).cacheOutcome == .revalidated, "asked even though fresh")
        #expect(transport.requestCount == 3)
    }

    @Test func onlyIfCachedWithNothingStoredIsA504FromTheCache() async throws {
        let transport = server([.cacheControl: "max-age=60"])
        let (engine, _) = engine(transport)
        let error = await failure(of: engine.operation(path: "x").setHeader("only-if-cached", forName: "Cache-Control"))
        #expect(error?.response?.statusCode == 504)
        #expect(error?.response?.cacheOutcome == .unsatisfiable)
        #expect(transport.requestCount == 0)
    }

    @Test func networkFailuresFallBackToStoredResponsesWhenAllowed() async throws {
        let failing = NIOLockedValueBox(false)
        let transport = FakeTransport { [clock] request in
            if failing.withLockedValue({ $0 }) { throw NetworkError(.cannotConnect, "down") }
            let control = request.url.path.hasSuffix("/y") ? "max-age=5" : "max-age=5, stale-if-error=60"
            return FakeTransport.reply(status: 200, headers: [.cacheControl: control, .date: HTTPDate.format(clock.now)], body: "old")
        }
        let (engine, _) = engine(transport)
        _ = try await engine.send(engine.operation(path: "x"))
        clock.advance(30)
        failing.withLockedValue { $0 = true }
        let stale = try await engine.send(engine.operation(path: "x"))
        #expect(stale.cacheOutcome == .stale && stale.string == "old", "stale-if-error")
        clock.advance(100)
        #expect(await failure(of: engine.operation(path: "x"))?.code == .cannotConnect, "past the stale-if-error window")

        let (lenient, _) = self.engine(transport, cache: nil) { $0.fallsBackToCacheOnError = true }
        failing.withLockedValue { $0 = false }
        _ = try await lenient.send(lenient.operation(path: "y"))
        clock.advance(1_000)
        failing.withLockedValue { $0 = true }
        #expect(try await lenient.send(lenient.operation(path: "y")).cacheOutcome == .stale, "fallsBackToCacheOnError")
        // A stale-if-error window limits every way of serving stale, fallsBackToCacheOnError included.
        failing.withLockedValue { $0 = false }
        _ = try await lenient.send(lenient.operation(path: "x"))
        clock.advance(1_000)
        failing.withLockedValue { $0 = true }
        #expect(await failure(of: lenient.operation(path: "x"))?.code == .cannotConnect, "past stale-if-error=60")
    }

    @Test func staleWhileRevalidateServesAtOnceAndRefreshesInTheBackground() async throws {
        let transport = server([.cacheControl: "max-age=5, stale-while-revalidate=60"], etag: "\"v\"")
        let (engine, cache) = engine(transport)
        _ = try await engine.send(engine.operation(path: "x"))
        clock.advance(10)
        #expect(try await engine.send(engine.operation(path: "x")).cacheOutcome == .stale)
        #expect(await eventually { cache.statistics.revalidations == 1 })
        #expect(transport.requests.last?.headers[.ifNoneMatch] == "\"v\"")
        #expect(try await engine.send(engine.operation(path: "x")).cacheOutcome == .hit)
    }

    @Test func credentialsPartitionEntriesAndPrivateResponsesAreStoredPerCredential() async throws {
        let publicTransport = server([.cacheControl: "public, max-age=60"])
        let (engine, cache) = engine(publicTransport)
        let alice = { engine.operation(path: "me").setHeader("Bearer alice", forName: "Authorization") }
        let bob = engine.operation(path: "me").setHeader("Bearer bob", forName: "Authorization")
        _ = try await engine.send(alice())
        #expect(try await engine.send(alice()).cacheOutcome == .hit)
        #expect(try await engine.send(bob).cacheOutcome == .miss, "another user's response is never served")
        #expect(cache.statistics.entries == 2)

        // RFC 9111 §3.5 binds shared caches; this private cache stores per credential (issue 18 C).
        let privateTransport = server([.cacheControl: "private, max-age=60"])
        let (engine2, cache2) = self.engine(privateTransport)
        let me = { (token: String) in engine2.operation(path: "me").setHeader("Bearer \(token)", forName: "Authorization") }
        #expect(try await engine2.send(me("alice")).cacheOutcome == .miss)
        #expect(try await engine2.send(me("alice")).cacheOutcome == .hit)
        #expect(try await engine2.send(me("bob")).cacheOutcome == .miss)
        #expect(cache2.statistics.entries == 2)
        #expect(privateTransport.requestCount == 2)
    }

    @Test func identicalStaleGETsShareOneRevalidation() async throws {
        let transport = FakeTransport { [clock] request in
            try await Task.sleep(for: .milliseconds(50))
            var fields: HTTPFields = [.cacheControl: "max-age=5", .eTag: "\"v\"", .date: HTTPDate.format(clock.now)]
            if request.headers[.ifNoneMatch] == "\"v\"" { return FakeTransport.reply(status: 304, headers: fields, data: Data()) }
            fields[.contentType] = "text/plain"
            return FakeTransport.reply(status: 200, headers: fields, body: "shared")
        }
        let (engine, _) = engine(transport)
        _ = try await engine.send(engine.operation(path: "x"))
        clock.advance(10)
        let ops = (0..<50).map { _ in engine.operation(path: "x") }
        for op in ops { engine.enqueue(op) }
        for op in ops { #expect(try await op.response().cacheOutcome == .revalidated) }
        #expect(transport.requestCount == 2)
    }

    @Test func headIsAnsweredFromAStoredGET() async throws {
        let transport = server([.cacheControl: "max-age=60", .contentType: "text/plain"])
        let (engine, _) = engine(transport)
        _ = try await engine.send(engine.operation(path: "doc"))
        let head = try await engine.send(engine.operation(path: "doc", method: .head))
        #expect(head.cacheOutcome == .hit && head.body.isEmpty && head.headers[.contentType] == "text/plain")
        #expect(transport.requestCount == 1)
    }

    @Test func memoryIsBoundedAndCanBeTrimmed() async throws {
        let transport = FakeTransport { [clock] request in
            FakeTransport.reply(status: 200, headers: [.cacheControl: "max-age=60", .date: HTTPDate.format(clock.now)],
                                data: Data(count: 10_000))
        }
        let cache = ResponseCache(memoryCapacity: 35_000, directory: nil, clock: { [clock] in clock.now })
        let (engine, _) = engine(transport, cache: cache)
        for n in 0..<5 { _ = try await engine.send(engine.operation(path: "blob/\(n)")) }
        #expect(cache.statistics.entries == 3)
        #expect(cache.statistics.memoryBytes <= 35_000)
        #expect(try await engine.send(engine.operation(path: "blob/4")).cacheOutcome == .hit)
        #expect(try await engine.send(engine.operation(path: "blob/0")).cacheOutcome == .miss, "evicted")
        cache.trimMemory(to: cache.statistics.memoryBytes / 2)   // room for one of the three
        #expect(cache.statistics.entries == 1)
        cache.flushMemory()
        #expect(cache.statistics.entries == 0 && cache.statistics.memoryBytes == 0)
    }

    @Test func enginesWithoutACacheAreUnchanged() async throws {
        let transport = server([.cacheControl: "max-age=60"])
        let engine = NetworkEngine.fake(transport)
        for _ in 0..<2 { #expect(try await engine.send(engine.operation(path: "a")).cacheOutcome == nil) }
        #expect(transport.requestCount == 2)
    }
}

/// Tier 3: the cache against the in-process server, on the system clock.
@Suite("ResponseCache end to end")
struct ResponseCacheEndToEndTests {
    @Test func aFreshHitMakesNoRequestAndAStaleOneIsRevalidatedWith304() async throws {
        let cache = ResponseCache(directory: nil)
        try await withServer(configure: { $0.cache = cache }) { server, engine in
            _ = try await engine.send(engine.operation(path: "/cache/60"))
            let hit = try await engine.send(engine.operation(path: "/cache/60"))
            #expect(hit.cacheOutcome == .hit)
            #expect(server.requestCount(path: "/cache/60") == 1)

            _ = try await engine.send(engine.operation(path: "/cache/0"))
            let revalidated = try await engine.send(engine.operation(path: "/cache/0"))
            #expect(revalidated.cacheOutcome == .revalidated)
            #expect(revalidated.statusCode == 200)
            #expect((try revalidated.json() as? [String: Any])?["cached"] as? Bool == true)
            #expect(server.recordedRequests.last?.header("if-none-match") == "\"v1\"")
            #expect(server.requestCount(path: "/cache/0") == 2)
        }
    }
}
