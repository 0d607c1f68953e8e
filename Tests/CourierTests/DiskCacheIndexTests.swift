import Foundation
import HTTPTypes
import Testing
@testable import Courier

/// The disk tier's key index (issue 24): a lookup whose key is not on disk answers without waiting for
/// the disk queue, yet every stored response is still found, whoever wrote it.
@Suite("Disk cache key index")
struct DiskCacheIndexTests {
    let clock = TestClock()

    func temporaryDirectory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("courier-index-test-\(UUID().uuidString)")
    }

    func entry(_ path: String, bytes: Int = 100) -> CachedResponseEntry {
        CachedResponseEntry(
            url: URL(string: "https://api.example.com/\(path)")!, status: .ok, headers: [.cacheControl: "max-age=3600"],
            body: Data(repeating: 7, count: bytes), requestTime: clock.now, responseTime: clock.now)
    }

    func key(_ path: String) -> String { CacheURLKey.key(for: URL(string: "https://api.example.com/\(path)")!)! }

    // MARK: The index as a value

    @Test func anIndexNotLoadedOrNotCheckedLatelyCannotSay() {
        var index = DiskCacheIndex(trustInterval: 100)
        #expect(index.answer(for: "a", now: 0) == .unknown)
        index.loaded(["a"], at: 1_000)
        #expect(index.answer(for: "a", now: 1_050) == .mayBePresent)
        #expect(index.answer(for: "b", now: 1_050) == .absent)
        #expect(index.answer(for: "b", now: 1_200) == .unknown, "not checked for longer than the trust interval")
        #expect(index.needsValidation(now: 1_200))
        index.validated(at: 1_200)
        #expect(index.answer(for: "b", now: 1_250) == .absent)
        index.forget()
        #expect(index.answer(for: "a", now: 1_250) == .unknown)
    }

    @Test func queuedStoresCountAtOnceAndSurviveAReload() {
        var index = DiskCacheIndex(trustInterval: .max)
        index.storeQueued("a")   // before the index is loaded
        index.loaded(["b"], at: 0)
        #expect(index.answer(for: "a", now: 1) == .mayBePresent)
        index.lastRowRemoved("a")
        #expect(index.answer(for: "a", now: 1) == .mayBePresent, "its store is still queued")
        index.storeDone("a")
        index.lastRowRemoved("a")
        #expect(index.answer(for: "a", now: 1) == .absent)
        index.storeQueued("c")
        index.invalidationQueued(["b", "c"])
        #expect(index.answer(for: "b", now: 1) == .absent)
        #expect(index.answer(for: "c", now: 1) == .absent)
        index.storeQueued("d")
        index.removedAll()
        #expect(index.answer(for: "d", now: 1) == .mayBePresent, "queued after the removal")
        #expect(index.answer(for: "b", now: 1) == .absent)
    }

    // MARK: The store

    @Test func theIndexFollowsStoresEvictionsInvalidationsAndAReopen() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = DiskCacheStore(directory: directory, capacity: 250, indexTrustInterval: .max)
        _ = store.pool()
        store.store(entry("a"), urlKey: key("a"), now: clock.now)
        store.store(entry("b"), urlKey: key("b"), now: clock.now.addingTimeInterval(1))
        #expect(store.indexAnswer(for: key("a")) == .mayBePresent)
        store.store(entry("c"), urlKey: key("c"), now: clock.now.addingTimeInterval(2))   // evicts a
        #expect(store.indexAnswer(for: key("a")) == .absent, "evicted")
        #expect(store.entries(for: key("a"), now: clock.now).isEmpty)
        store.invalidate([key("b")])
        #expect(store.indexAnswer(for: key("b")) == .absent)
        #expect(store.indexAnswer(for: key("c")) == .mayBePresent)
        var memoryOnly = entry("c")
        memoryOnly.isMemoryOnly = true   // replaces c's only variant with one that stays in memory
        store.store(memoryOnly, urlKey: key("c"), now: clock.now)
        #expect(store.indexAnswer(for: key("c")) == .absent)
        store.store(entry("d"), urlKey: key("d"), now: clock.now)
        store.close()
        #expect(store.indexAnswer(for: key("d")) == .unknown, "closed: nothing known")

        let reopened = DiskCacheStore(directory: directory, capacity: 250, indexTrustInterval: .max)
        defer { reopened.close() }
        _ = reopened.pool()
        #expect(reopened.indexAnswer(for: key("d")) == .mayBePresent)
        #expect(reopened.indexAnswer(for: key("a")) == .absent)
        #expect(reopened.entries(for: key("d"), now: clock.now).count == 1)
    }

    /// Another process (here another store on the same directory) writes: its entries are found once
    /// the index is checked, at this store's next write or disk read, or when the trust interval ends.
    @Test func anotherWriterIsNoticedThroughTheDataVersion() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let mine = DiskCacheStore(directory: directory, capacity: 1 << 20, indexTrustInterval: .max)
        let theirs = DiskCacheStore(directory: directory, capacity: 1 << 20)
        defer {
            mine.close()
            theirs.close()
        }
        _ = mine.pool()
        theirs.store(entry("theirs"), urlKey: key("theirs"), now: clock.now)
        #expect(mine.indexAnswer(for: key("theirs")) == .absent, "not checked yet (a miss, never a wrong answer)")
        mine.store(entry("mine"), urlKey: key("mine"), now: clock.now)
        #expect(mine.indexAnswer(for: key("theirs")) == .mayBePresent, "seen by this store's next write")
        #expect(mine.entries(for: key("theirs"), now: clock.now).count == 1)

        let shortTrust = DiskCacheStore(directory: directory, capacity: 1 << 20, indexTrustInterval: 0)
        defer { shortTrust.close() }
        _ = shortTrust.pool()
        theirs.store(entry("later"), urlKey: key("later"), now: clock.now)
        #expect(shortTrust.indexAnswer(for: key("later")) != .absent, "an index not checked since is not trusted")
        #expect(shortTrust.entries(for: key("later"), now: clock.now).count == 1)
    }

    // MARK: Through the cache

    func cache(_ directory: URL) -> ResponseCache {
        ResponseCache(memoryCapacity: 1 << 20, diskCapacity: 1 << 20, directory: directory, clock: { [clock] in clock.now }, diskIndexTrust: .max)
    }

    func origin() -> FakeTransport {
        FakeTransport { [clock] request in
            FakeTransport.reply(status: 200, headers: [.cacheControl: "max-age=3600", .date: HTTPDate.format(clock.now)], body: "body of \(request.url.path)")
        }
    }

    /// A miss whose key is not on disk goes to the network while every disk write still waits.
    @Test func aMissDoesNotWaitBehindQueuedStores() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let stored = cache(directory)
        await stored.synchronize()   // the index is loaded
        let transport = origin()
        let engine = NetworkEngine.fake(transport) { $0.cache = stored }
        stored.diskQueue.suspend()   // the disk is "slow": nothing is written or read until resumed
        for n in 0..<20 { _ = try await engine.send(engine.operation(path: "stored/\(n)")) }
        let other = try #require(URL(string: "https://api.example.com/v1/never-stored"))
        #expect(stored.memoryCandidates(for: other) == [], "answered by the index, not the disk")
        #expect(try await engine.send(engine.operation(path: "fresh")).cacheOutcome == .miss)
        #expect(transport.requestCount == 21)
        stored.diskQueue.resume()
        await stored.synchronize()
        #expect(stored.statistics.diskEntries == 21)
    }

    /// Review finding: a disk read under way when the URL is invalidated (a POST's answer,
    /// `removeResponses`) must not put what it read back in memory, where every later lookup would find
    /// it. A large body keeps the read busy long enough for the invalidation to come during it (when it
    /// comes after, there is nothing to revive and the test passes as well: it cannot fail spuriously).
    @Test func aReadUnderWayDoesNotReviveAnInvalidatedResponse() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let stored = ResponseCache(memoryCapacity: 256 << 20, diskCapacity: 256 << 20, directory: directory, clock: { [clock] in clock.now })
        let big = entry("big", bytes: 32 << 20)
        var revived = 0
        for _ in 0..<3 {
            stored.store(big)
            await stored.synchronize()
            stored.flushMemory()
            let done = DispatchSemaphore(value: 0)
            stored.readDisk(for: big.url) { _ in done.signal() }
            try await Task.sleep(for: .milliseconds(30))   // the read is decoding the body
            stored.removeResponses(for: big.url)
            await withCheckedContinuation { continuation in
                DispatchQueue.global().async { done.wait(); continuation.resume() }
            }
            await stored.synchronize()
            if !(stored.memoryCandidates(for: big.url) ?? []).isEmpty { revived += 1 }
        }
        #expect(revived == 0, "an invalidated response came back into memory")
    }

    /// What memory let go of before its disk write happened is still found: the read waits for the write.
    @Test func aStoreThenALookupFindsItWhenMemoryLetItGo() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let stored = cache(directory)
        await stored.synchronize()
        let transport = origin()
        let engine = NetworkEngine.fake(transport) { $0.cache = stored }
        stored.diskQueue.suspend()
        _ = try await engine.send(engine.operation(path: "kept"))
        stored.flushMemory()
        let url = try #require(URL(string: "https://api.example.com/v1/kept"))
        #expect(stored.memoryCandidates(for: url) == nil, "the index says it may be on disk")
        let lookup = engine.operation(path: "kept")
        engine.enqueue(lookup)
        #expect(lookup.state == .waiting, "waits for the disk read")
        stored.diskQueue.resume()
        #expect(try await lookup.response().cacheOutcome == .hit)
        #expect(transport.requestCount == 1)

        stored.invalidate([CacheURLKey.key(for: url)!])
        #expect(stored.memoryCandidates(for: url) == [], "the invalidation counts before it reaches the disk")
    }

    // MARK: Memory accounting

    @Test func memoryCostCountsWhatAnEntryHolds() {
        let small = entry("small", bytes: 25)
        let cost = CacheMemoryCost.entry(small)
        let bodyAndHeaders = 25 + small.headers.reduce(0) { $0 + $1.name.rawName.utf8.count + $1.value.utf8.count }
        #expect(cost > bodyAndHeaders + CacheMemoryCost.urlObjects, "the URL, the field array and the body's storage count")
        #expect(CacheMemoryCost.entry(entry("small", bytes: 10_025)) - cost >= 10_000)
        #expect(CacheMemoryCost.string("short") == 0 && CacheMemoryCost.string(String(repeating: "x", count: 40)) >= 72)
        let key = key("small")
        #expect(ResponseCache.cost(of: [small], under: key) > cost + key.utf8.count)
    }

    @Test func theMemoryTierKeepsItsRealCostWithinItsCapacity() {
        let cache = ResponseCache(memoryCapacity: 64 << 10, directory: nil, clock: { [clock] in clock.now })
        for n in 0..<500 { cache.store(entry("item/\(n)", bytes: 25)) }
        let statistics = cache.statistics
        #expect(statistics.memoryBytes <= 64 << 10)
        #expect(statistics.entries < 100, "a small response costs far more than its 25 bytes")
    }

    /// The header text is written by hand now: whatever a server sends reads back the same, and it is
    /// the JSON `JSONSerialization` reads.
    @Test func headerTextRoundTripsEveryCharacterAServerMaySend() throws {
        let values = [
            "plain", "with \"quotes\" and \\ backslashes", "tab\there", "caf\u{E9} \u{1F600}", "", " lead and trail ",
            "ctl\u{01}\u{1F}\u{7F}", "<script>\u{2028}\u{2029}</script>", "a,b;c=d",
        ]
        var fields = HTTPFields()
        for (index, value) in values.enumerated() {
            fields.append(HTTPField(name: try #require(HTTPField.Name("X-Field-\(index)")), value: value))
        }
        fields.append(HTTPField(name: .setCookie, value: "a=1"))
        fields.append(HTTPField(name: .setCookie, value: "b=2"))
        let text = DiskCacheCoding.text(of: fields)
        let decoded = try #require(DiskCacheCoding.headers(from: text))
        #expect(Array(decoded) == Array(fields), "every field, in order, with its value unchanged")
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String]])
        #expect(parsed.count == fields.count)
    }

    /// Row and body ids are made without reading /dev/urandom, yet are ids the store accepts back
    /// (a damaged-file sweep skips anything else) and never repeat, from any thread.
    @Test func newIDsAreValidAndUnique() async {
        let ids = await withTaskGroup(of: [String].self) { group in
            for _ in 0..<4 { group.addTask { (0..<5_000).map { _ in DiskCacheCoding.newID() } } }
            return await group.reduce(into: [String]()) { $0 += $1 }
        }
        #expect(ids.allSatisfy(DiskCacheCoding.isValidID))
        #expect(Set(ids).count == ids.count)
        #expect(Set(ids.map { $0.prefix(18) }).count == 1, "one process prefix; the serial makes each unique")
        #expect(ids.allSatisfy { UUID(uuidString: $0) != nil }, "the 8-4-4-4-12 shape")
    }
}

/// The disk tier's header text is read without `JSONSerialization` when it is in the form Courier
/// writes; anything else goes to the full parser, which reads it the same or refuses it.
@Suite("Disk cache header text")
struct DiskCacheHeaderTextTests {
    @Test(arguments: [
        #"[]"#, #"[["a","b"]]"#, #"[["a","b"],["c","d\"e\\f\/g\n\r\t"]]"#, #"[["a","\u0001"]]"#, #"[ ["a","b"] ]"#,
        #"[["a","b"]"#, #"[["a"]]"#, #"[["a","b","c"]]"#, #"[["a",1]]"#, #"{"a":"b"}"#, #"[["a","b"]]x"#, "", #"[["a","b"],]"#,
        #"[["a","caf\u00e9"]]"#, "[[\"a\",\"caf\u{E9} \u{1F600}\"]]", #"[["a","b\"]]"#, #"[["a","b\q"]]"#,
    ])
    func theQuickReaderAgreesWithJSONSerialization(_ text: String) {
        let full = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [[String]]
        if let quick = DiskCacheCoding.fieldPairs(text) {
            #expect(quick == full, "what the quick reader accepts, the full parser reads the same")
        }
        let viaQuickFirst = DiskCacheCoding.fieldPairs(text) ?? full
        #expect(viaQuickFirst == full)
    }
}
