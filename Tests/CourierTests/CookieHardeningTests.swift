import Foundation
import GRDB
import Testing
@testable import Courier

/// Issue 23 part E1c: `__Host-` needs an explicit `Path=/`; trailing-dot hosts are other hosts (as in
/// Chromium) and pass no guard by their dot; removed values do not linger in the cookie file.
@Suite("Cookie hardening")
struct CookieHardeningTests {
    static let t0 = Date(timeIntervalSince1970: 1_700_000_000)
    static func url(_ text: String) -> URL { URL(string: text)! }

    // MARK: __Host-

    /// RFC 6265bis §4.1.3.2: the attribute list must hold `Path=/`; a request to `/` (whose default
    /// path is `/`) does not make up for it.
    @Test func hostPrefixNeedsAnExplicitPathAttribute() {
        var storage = CookieStorage()
        _ = storage.store(["__Host-implicit=1; Secure", "__Host-explicit=2; Secure; Path=/", "__Host-other=3; Secure; Path=/a"],
            from: Self.url("https://example.com/"), now: Self.t0)
        _ = storage.store(["__Host-login=4; Secure"], from: Self.url("https://example.com/login"), now: Self.t0)
        #expect(storage.allCookies.map(\.name) == ["__Host-explicit"])
    }

    // MARK: Trailing dots

    @Test func aTrailingDotIPAddressIsStillAnIPAddress() {
        #expect(CookieMatching.isIPAddress("1.2.3.4.") && CookieMatching.isIPAddress("127.0.0.1"))
        #expect(!CookieMatching.isIPAddress("a.com.") && !CookieMatching.isIPAddress("."))
        var storage = CookieStorage()
        _ = storage.store(["wide=1; Domain=2.3.4."], from: Self.url("http://1.2.3.4./"), now: Self.t0)
        _ = storage.store(["own=1; Domain=1.2.3.4."], from: Self.url("http://1.2.3.4./"), now: Self.t0)
        #expect(storage.allCookies.map(\.name) == ["own"] && storage.allCookies.first?.isHostOnly == true)
    }

    @Test func aTrailingDotPublicSuffixIsRefusedAsADomain() {
        var storage = CookieStorage()
        // Before: `com.` has a dot, so it passed the single-label guard and went to every `*.com.` host.
        _ = storage.store(["a=1; Domain=com."], from: Self.url("https://a.com./"), now: Self.t0)
        _ = storage.store(["b=1; Domain=co.uk."], from: Self.url("https://a.co.uk./"), now: Self.t0)
        #expect(storage.count == 0)
        #expect(storage.cookieHeader(for: Self.url("https://b.com./"), now: Self.t0).value == nil)
        // `com.` from the host `com.` itself: host-only, as for `com`.
        _ = storage.store(["c=1; Domain=com."], from: Self.url("https://com./"), now: Self.t0)
        #expect(storage.allCookies.first?.isHostOnly == true)
    }

    /// Chromium: `a.com.` and `a.com` are two hosts; a cookie of one never goes to the other.
    @Test func aTrailingDotHostIsAnotherHost() {
        var storage = CookieStorage()
        _ = storage.store(["dotted=1", "wide=1; Domain=a.com."], from: Self.url("https://www.a.com./"), now: Self.t0)
        _ = storage.store(["mismatch=1; Domain=a.com"], from: Self.url("https://www.a.com./"), now: Self.t0)
        _ = storage.store(["plain=1"], from: Self.url("https://www.a.com/"), now: Self.t0)
        #expect(Set(storage.allCookies.map(\.name)) == ["dotted", "wide", "plain"])
        #expect(storage.cookieHeader(for: Self.url("https://www.a.com/"), now: Self.t0).value == "plain=1")
        #expect(storage.cookieHeader(for: Self.url("https://x.a.com./"), now: Self.t0).value == "wide=1")
        #expect(storage.cookieHeader(for: Self.url("https://x.a.com/"), now: Self.t0).value == nil)
    }

    // MARK: secure_delete

    static func directory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("courier-cookies-\(UUID().uuidString)")
    }

    static func fileHolds(_ text: String, in directory: URL) throws -> Bool {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        return try names.contains { name in
            try Data(contentsOf: directory.appendingPathComponent(name)).range(of: Data(text.utf8)) != nil
        }
    }

    /// The report's scenario: write a cookie, delete it (and replace another), then look for the old
    /// values in the file's bytes.
    @Test func removedAndReplacedValuesAreNotLeftInTheFile() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = Self.url("https://example.com/")
        let jar = CookieJar(persistingIn: directory)
        jar.setCookies(["gone=REMOVED-VALUE-4711; Max-Age=3600", "kept=OLD-VALUE-0815; Max-Age=3600"], for: origin)
        await jar.waitUntilPersisted()
        #expect(try Self.fileHolds("REMOVED-VALUE-4711", in: directory), "written first")
        jar.remove(name: "gone", domain: "example.com")
        jar.setCookies(["kept=NEW-VALUE-2222; Max-Age=3600"], for: origin)
        await jar.waitUntilPersisted()
        let database = try DatabaseQueue(path: directory.appendingPathComponent("cookies.sqlite").path)
        _ = try database.writeWithoutTransaction { db in try Row.fetchAll(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        try database.close()
        #expect(try Self.fileHolds("NEW-VALUE-2222", in: directory))
        #expect(try !Self.fileHolds("REMOVED-VALUE-4711", in: directory))
        #expect(try !Self.fileHolds("OLD-VALUE-0815", in: directory))
    }

    /// A cookie file as Courier wrote it before secure_delete: one row removed, one kept.
    static func writeAnOldFile(_ file: URL) throws {
        var configuration = Configuration()
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA secure_delete = OFF") }
        let old = try DatabaseQueue(path: file.path, configuration: configuration)
        try old.write { db in
            try db.execute(sql: """
                CREATE TABLE cookie (name TEXT NOT NULL, domain TEXT NOT NULL, path TEXT NOT NULL, value TEXT NOT NULL,
                    hostOnly INTEGER NOT NULL, expires DOUBLE, secure INTEGER NOT NULL, httpOnly INTEGER NOT NULL,
                    sameSite TEXT NOT NULL, creation DOUBLE NOT NULL, lastAccess DOUBLE NOT NULL, PRIMARY KEY (name, domain, path))
                """)
            for (name, value) in [("gone", "OLD-FILE-SECRET-31"), ("kept", "STILL-HERE-32")] {
                try db.execute(
                    sql: "INSERT INTO cookie VALUES (?, 'example.com', '/', ?, 1, 4102444800, 0, 0, 'unspecified', 1700000000, 1700000000)",
                    arguments: [name, value])
            }
        }
        try old.write { db in try db.execute(sql: "DELETE FROM cookie WHERE name = 'gone'") }
        try old.close()
    }

    /// A file written by an earlier Courier (no secure_delete) with a removed value in its free space is
    /// rewritten once when a jar opens it.
    @Test func aFileFromBeforeIsRewrittenOnce() async throws {
        let directory = Self.directory()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Self.writeAnOldFile(directory.appendingPathComponent("cookies.sqlite"))
        #expect(try Self.fileHolds("OLD-FILE-SECRET-31", in: directory), "the old file kept the removed value")
        let jar = CookieJar(persistingIn: directory)
        #expect(await jar.allCookies.map(\.value) == ["STILL-HERE-32"])
        await jar.waitUntilPersisted()
        #expect(try !Self.fileHolds("OLD-FILE-SECRET-31", in: directory))
        #expect(try Self.fileHolds("STILL-HERE-32", in: directory))
    }

    /// This machine's SQLite (Debian's) is built with `SQLITE_SECURE_DELETE`, so its default is already
    /// on; upstream's (and other builds') is off. Start each connection with it off, then apply the
    /// jar's configuration: the jar must turn it back on.
    @Test func theJarsConfigurationTurnsSecureDeleteOnWhereTheDefaultIsOff() throws {
        let directory = Self.directory()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var configuration = Configuration()
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA secure_delete = OFF") }
        CookieDatabase.configure(&configuration)
        let database = try DatabaseQueue(path: directory.appendingPathComponent("c.sqlite").path, configuration: configuration)
        #expect(try database.read { db in try Int.fetchOne(db, sql: "PRAGMA secure_delete") } == 1)
        try database.write { db in
            try db.execute(sql: "CREATE TABLE t (v TEXT)")
            try db.execute(sql: "INSERT INTO t VALUES ('LINGERING-SECRET-9')")
        }
        try database.write { db in try db.execute(sql: "DELETE FROM t") }
        try database.close()
        #expect(try !Self.fileHolds("LINGERING-SECRET-9", in: directory))
    }
}
