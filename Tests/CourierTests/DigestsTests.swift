import Foundation
import GRDB
import HTTPTypes
import Testing
@testable import Courier

/// The hashes now come from swift-crypto (issue 11, item 7). The expected strings below were computed
/// by the hand-written `Serialization/SHA256.swift` this replaced (and cross-checked with `sha256sum`),
/// so stored cache rows, outbox unique identifiers and credential partitions stay valid.
@Suite("Digests")
struct DigestsTests {
    /// The 1 MiB input: byte i is `i * 31 + 7` (mod 256).
    static func mebibytePattern() -> Data {
        Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
    }

    @Test func sha256MatchesTheFormerImplementation() {
        let vectors: [(Data, String)] = [
            (Data(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
            (Data("abc".utf8), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
            (Self.mebibytePattern(), "06b7bbfb7824aa03382051691630eb26de85102d1b08a81e907ec0744cd8a286"),
            (Data("https://api.example.com/v1/rates?base=EUR&symbols=USD,GBP".utf8),
             "b9210cda2fdb649e3209ff5a3629566efb31796189d7160f27d8b327d659f243"),
            (Data(#"{"amount":42,"currency":"EUR"}"#.utf8), "e9d04dae56e11c296198006b34058789b9c884cf189b8d5da669fc46284c1c79"),
        ]
        for (input, expected) in vectors {
            #expect(Digests.sha256Hex(input) == expected, "\(input.count) bytes")
            #expect(Digests.sha256Hex(Array(input)) == expected, "as [UInt8]")
        }
    }

    @Test func md5KnownAnswers() {
        // RFC 1321 appendix A.5.
        #expect(Digests.md5Hex(Data()) == "d41d8cd98f00b204e9800998ecf8427e")
        #expect(Digests.md5Hex(Data("abc".utf8)) == "900150983cd24fb0d6963f7d28e17f72")
        #expect(Digests.md5Hex(Data("message digest".utf8)) == "f96b697d7cb7938d525a2f31aaf161d0")
    }

    @Test func outboxUniqueIdentifiersAreUnchanged() {
        let post = NetworkOperation.makeUniqueIdentifier(
            method: .post, url: "https://api.example.com/v1/transfers", body: Data(#"{"amount":42,"currency":"EUR"}"#.utf8))
        #expect(post == "34a556fa9b519827cc7792e82c34c53b6d5c19b380769797b6b19c58d1104d0f")
        let delete = NetworkOperation.makeUniqueIdentifier(method: .delete, url: "https://api.example.com/v1/items/7?force=1", body: nil)
        #expect(delete == "98bf441fd244e9f977c6110a5b9c6a4c3f0c3cb5bcc81d0fdc301dbddde17cad")
        // An empty body and no body share an identifier, as before.
        #expect(NetworkOperation.makeUniqueIdentifier(method: .delete, url: "https://api.example.com/v1/items/7?force=1", body: Data()) == delete)
    }

    func temporaryDirectory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("courier-digest-test-\(UUID().uuidString)")
    }

    /// A row and body file laid out exactly as the former code wrote them (its `bodyDigest` is the
    /// former implementation's output) read back through the store built on swift-crypto.
    @Test func aDiskCacheEntryWrittenBeforeReadsBack() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let bodies = directory.appendingPathComponent("bodies", isDirectory: true)
        try FileManager.default.createDirectory(at: bodies, withIntermediateDirectories: true)
        let id = "5f0e8d4c-1b2a-4c3d-9e8f-0a1b2c3d4e5f"
        let body = Data(#"{"amount":42,"currency":"EUR"}"#.utf8)
        try body.write(to: bodies.appendingPathComponent(id))
        let url = "https://api.example.com/v1/rates?base=EUR&symbols=USD,GBP"
        do {
            let queue = try DatabaseQueue(path: directory.appendingPathComponent("index.sqlite").path)
            try queue.write { db in
                try db.execute(sql: """
                    CREATE TABLE entries (
                        id TEXT PRIMARY KEY NOT NULL, urlKey TEXT NOT NULL, varyKey TEXT NOT NULL,
                        partition TEXT NOT NULL, url TEXT NOT NULL, status INTEGER NOT NULL, reason TEXT NOT NULL,
                        headers TEXT NOT NULL, requestTime DOUBLE NOT NULL, responseTime DOUBLE NOT NULL,
                        bodySize INTEGER NOT NULL, bodyDigest TEXT NOT NULL, lastAccess DOUBLE NOT NULL);
                    """)
                try db.execute(sql: """
                    INSERT INTO entries VALUES (?, ?, '{}', '', ?, 200, 'OK', '[["Cache-Control","max-age=3600"]]',
                        1700000000, 1700000001, ?, ?, 1700000001)
                    """, arguments: [id, url, url, body.count, "e9d04dae56e11c296198006b34058789b9c884cf189b8d5da669fc46284c1c79"])
            }
            try queue.close()
        }
        let store = DiskCacheStore(directory: directory, capacity: 1 << 20)
        defer { store.close() }
        let entries = store.entries(for: url, now: Date(timeIntervalSince1970: 1_700_000_100))
        #expect(entries.count == 1)
        #expect(entries.first?.body == body)
        #expect(store.entryCount == 1, "the old row was not treated as damaged")
    }

    /// A row the new code writes carries the same digest the former code wrote.
    @Test func aDiskCacheEntryWrittenNowCarriesTheFormerDigest() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = DiskCacheStore(directory: directory, capacity: 4 << 20)
        let url = try #require(URL(string: "https://api.example.com/v1/blob"))
        let entry = CachedResponseEntry(
            url: url, status: .ok, headers: [.cacheControl: "max-age=60"], body: Self.mebibytePattern(),
            requestTime: Date(timeIntervalSince1970: 1_700_000_000), responseTime: Date(timeIntervalSince1970: 1_700_000_001))
        store.store(entry, urlKey: "k", now: Date(timeIntervalSince1970: 1_700_000_001))
        store.close()
        let queue = try DatabaseQueue(path: directory.appendingPathComponent("index.sqlite").path)
        let digests = try queue.read { db in try String.fetchAll(db, sql: "SELECT bodyDigest FROM entries") }
        try queue.close()
        #expect(digests == ["06b7bbfb7824aa03382051691630eb26de85102d1b08a81e907ec0744cd8a286"])
    }
}
