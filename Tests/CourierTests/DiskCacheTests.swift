import Foundation
import Testing
@testable import Courier

/// The disk tier: survival across restarts, permissions, secrets, eviction and damage.
@Suite("ResponseCache on disk")
struct DiskCacheTests {
    let clock = TestClock()

    func temporaryDirectory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("courier-cache-test-\(UUID().uuidString)")
    }

    /// Deterministic bodies per path, cacheable for an hour.
    func origin() -> FakeTransport {
        FakeTransport { [clock] request in
            FakeTransport.reply(
                status: 200,
                headers: [.cacheControl: "public, max-age=3600", .date: HTTPDate.format(clock.now), .contentType: "text/plain"],
                body: "body of \(request.url.path) " + String(repeating: "x", count: request.url.path.count * 97 % 5_000))
        }
    }

    func cache(_ directory: URL, diskCapacity: Int = 256 << 20) -> ResponseCache {
        ResponseCache(memoryCapacity: 1 << 20, diskCapacity: diskCapacity, directory: directory, clock: { [clock] in clock.now })
    }

    @Test func responsesSurviveARestart() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = origin()
        let before = cache(directory)
        let engine1 = NetworkEngine.fake(first) { $0.cache = before }
        _ = try await engine1.send(engine1.operation(path: "rates"))
        // Disk writes happen on the cache's own queue; a process that exits waits for them first.
        await before.synchronize()
        let second = origin()
        let restarted = cache(directory)
        let engine2 = NetworkEngine.fake(second) { $0.cache = restarted }
        let response = try await engine2.send(engine2.operation(path: "rates"))
        #expect(response.cacheOutcome == .hit)
        #expect(response.string?.hasPrefix("body of /v1/rates") == true)
        #expect(second.requestCount == 0)
        #expect(restarted.statistics.diskEntries == 1)
    }

    @Test func theDirectoryIsOwnerOnlyAndNoSecretReachesTheDisk() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let transport = FakeTransport { [clock] _ in
            FakeTransport.reply(status: 200, headers: [
                .cacheControl: "public, max-age=60", .date: HTTPDate.format(clock.now),
                .setCookie: "session=cookie-secret-123", .vary: "Accept",
            ], body: "hello")
        }
        let stored = cache(directory)
        let engine = NetworkEngine.fake(transport) { $0.cache = stored }
        _ = try await engine.send(engine.operation(path: "me")
            .setHeader("Bearer token-secret-456", forName: "Authorization")
            .setHeader("theme=cookie-secret-789", forName: "Cookie"))
        let vary = FakeTransport { [clock] _ in
            FakeTransport.reply(status: 200, headers: [.cacheControl: "public, max-age=60", .date: HTTPDate.format(clock.now), .vary: "Authorization"], body: "v")
        }
        let varyStored = cache(directory)
        let varyEngine = NetworkEngine.fake(vary) { $0.cache = varyStored }
        _ = try await varyEngine.send(varyEngine.operation(path: "varies").setHeader("Bearer vary-secret-000", forName: "Authorization"))
        // Everything written, so that the scan sees what reached the disk.
        await stored.synchronize()
        await varyStored.synchronize()

        let attributes = try FileManager.default.attributesOfItem(atPath: directory.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o700)
        #expect(!allBytes(under: directory).isEmpty)
        #expect(secretsFound(["cookie-secret-123", "token-secret-456", "cookie-secret-789", "vary-secret-000"], under: directory) == [])
    }

    @Test func theDiskTierIsBoundedByBytes() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let transport = FakeTransport { [clock] _ in
            // Bodies above the inline limit, so each has a file.
            FakeTransport.reply(status: 200, headers: [.cacheControl: "max-age=60", .date: HTTPDate.format(clock.now)], data: Data(count: 40_000))
        }
        let bounded = cache(directory, diskCapacity: 100_000)
        let engine = NetworkEngine.fake(transport) { $0.cache = bounded }
        for n in 0..<5 {
            _ = try await engine.send(engine.operation(path: "blob/\(n)"))
            clock.advance(1)
        }
        #expect(bounded.statistics.diskEntries == 2)
        #expect(bounded.statistics.diskBytes <= 100_000)
        let bodies = try FileManager.default.contentsOfDirectory(atPath: directory.appendingPathComponent("bodies").path)
        #expect(bodies.count == 2, "evicted bodies are deleted")
    }

    /// A small body is kept in its row: creating a file per response cost more than the request.
    @Test func smallBodiesAreKeptInTheIndexNotInFiles() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let stored = cache(directory)
        let engine = NetworkEngine.fake(origin()) { $0.cache = stored }
        for n in 0..<3 { _ = try await engine.send(engine.operation(path: "small/\(n)")) }
        await stored.synchronize()
        let bodies = try FileManager.default.contentsOfDirectory(atPath: directory.appendingPathComponent("bodies").path)
        #expect(bodies.isEmpty)
        stored.flushMemory()
        let hit = try await engine.send(engine.operation(path: "small/1"))
        #expect(hit.cacheOutcome == .hit && hit.string?.hasPrefix("body of /v1/small/1") == true)
    }

    /// Disk hits gather their access times instead of paying a write each; eviction still sees them,
    /// so the entry read last is kept.
    @Test func diskHitsAreBatchedYetEvictionFollowsThem() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let transport = FakeTransport { [clock] _ in
            FakeTransport.reply(status: 200, headers: [.cacheControl: "max-age=600", .date: HTTPDate.format(clock.now)], data: Data(count: 10_000))
        }
        let bounded = cache(directory, diskCapacity: 25_000)
        let engine = NetworkEngine.fake(transport) { $0.cache = bounded }
        for n in 0..<2 {
            _ = try await engine.send(engine.operation(path: "blob/\(n)"))
            clock.advance(1)
        }
        // From disk (memory emptied): blob/0 becomes the most recently used, without a write yet.
        bounded.flushMemory()
        let hit = try await engine.send(engine.operation(path: "blob/0"))
        #expect(hit.cacheOutcome == .hit)
        clock.advance(1)
        _ = try await engine.send(engine.operation(path: "blob/2"))
        bounded.flushMemory()
        #expect(try await engine.send(engine.operation(path: "blob/0")).cacheOutcome == .hit, "read last, so kept")
        #expect(try await engine.send(engine.operation(path: "blob/1")).cacheOutcome == .miss, "least recently used, so evicted")
        #expect(transport.requestCount == 4)
    }

    /// A lookup that must read the disk does so on the cache's queue, not on the enqueueing thread; a
    /// cancel that arrives meanwhile wins.
    @Test func diskReadsHappenOffTheEnqueueingThread() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let transport = origin()
        let stored = cache(directory)
        let engine = NetworkEngine.fake(transport) { $0.cache = stored }
        _ = try await engine.send(engine.operation(path: "slow-disk"))
        stored.flushMemory()

        stored.diskQueue.suspend()   // the disk is "slow": nothing is read until resumed
        let hit = engine.operation(path: "slow-disk")
        engine.enqueue(hit)
        #expect(hit.state == .waiting, "enqueue returned without reading the disk")
        let cancelled = engine.operation(path: "slow-disk")
        engine.enqueue(cancelled)
        cancelled.cancel()
        stored.diskQueue.resume()
        #expect(try await hit.response().cacheOutcome == .hit)
        #expect(await failure(of: cancelled)?.code == .cancelled)
        #expect(transport.requestCount == 1)
    }

    /// Issue 18 item 7: cancellation by predicate finds an operation whose entry is being read.
    @Test func cancellationByPredicateFindsAnOperationWhoseEntryIsBeingRead() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let transport = origin()
        let stored = cache(directory)
        let engine = NetworkEngine.fake(transport) { $0.cache = stored }
        _ = try await engine.send(engine.operation(path: "thumbnails/1"))
        stored.flushMemory()
        stored.diskQueue.suspend()
        let reading = engine.operation(path: "thumbnails/1")
        reading.cachePolicy = .reloadRevalidating   // it would go to the network after the read
        engine.enqueue(reading)
        engine.queue.cancelOperations(containing: "/thumbnails/")
        stored.diskQueue.resume()
        #expect(await failure(of: reading)?.code == .cancelled)
        #expect(transport.requestCount == 1, "the cancelled one never reached the network")
    }

    /// Issue 18 item 13: storing a response writes the disk on the cache's queue, not on the thread
    /// that got the response; memory answers at once.
    @Test func storingWritesTheDiskOffTheRespondingThread() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let transport = origin()
        let stored = cache(directory)
        let engine = NetworkEngine.fake(transport) { $0.cache = stored }
        _ = try await engine.send(engine.operation(path: "fresh"))   // in memory now: lookups need no disk read
        stored.diskQueue.suspend()   // the disk is "slow": nothing is written until resumed
        let reload = engine.operation(path: "fresh")
        reload.cachePolicy = .reloadIgnoringCache   // goes to the network; its answer is stored
        #expect(try await engine.send(reload).cacheOutcome == .miss, "answered while the disk write waits")
        #expect(try await engine.send(engine.operation(path: "fresh")).cacheOutcome == .hit, "from memory")
        #expect(transport.requestCount == 2)
        stored.diskQueue.resume()
        await stored.synchronize()
        #expect(stored.statistics.diskEntries == 1)
    }

    @Test func aDamagedCacheIsAMissNeverACrashAndEveryAnswerIsRight() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let paths = (0..<60).map { "item/\($0)" }
        let warmCache = cache(directory)
        let warm = NetworkEngine.fake(origin()) { $0.cache = warmCache }
        for path in paths { _ = try await warm.send(warm.operation(path: path)) }
        // The damage happens between runs, as a crash or a full disk would leave it: the database is
        // closed first. (Truncating a WAL index that a live process has mapped crashes any SQLite user.)
        warmCache.closeDisk()

        var generator = SystemRandomNumberGenerator()
        let files = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil)!.compactMap { $0 as? URL }
            .filter { !$0.hasDirectoryPath }
        for file in files.shuffled(using: &generator).prefix(files.count / 2) {
            guard var data = FileManager.default.contents(atPath: file.path), !data.isEmpty else { continue }
            if Bool.random(using: &generator) {
                data = data.prefix(Int.random(in: 0..<data.count, using: &generator))
            } else {
                for _ in 0..<8 {
                    let index = Int.random(in: 0..<data.count, using: &generator)
                    data[index] ^= UInt8.random(in: 1...255, using: &generator)
                }
            }
            try data.write(to: file)
        }

        let network = origin()
        let engine = NetworkEngine.fake(network) { $0.cache = cache(directory) }
        for request in 0..<1_000 {
            let path = paths[request % paths.count]
            let response = try await engine.send(engine.operation(path: path))
            let expected = "body of /v1/\(path) " + String(repeating: "x", count: "/v1/\(path)".count * 97 % 5_000)
            #expect(response.string == expected, "request \(request) for \(path)")
        }
        #expect(network.requestCount <= paths.count, "each damaged entry is fetched once, then served from the cache")
    }
}
