import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import Testing
@testable import Courier

/// Issue 11 item 4, tier 2: the cookie jar, in memory and persisted in SQLite (reopened, owner-only,
/// damaged files set aside), with no network.
@Suite("Cookie jar")
struct CookieJarTests {
    static func directory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("courier-cookies-\(UUID().uuidString)")
    }

    static let origin = URL(string: "https://www.example.com/account/login")!

    static func fields(_ values: [String]) -> HTTPFields {
        var fields = HTTPFields()
        for value in values { fields.append(HTTPField(name: .setCookie, value: value)) }
        return fields
    }

    @Test func inMemory() async {
        let jar = CookieJar()
        jar.setCookies(from: Self.fields(["SID=s3cr3t; Path=/; Secure; HttpOnly", "lang=en; Domain=example.com; Max-Age=3600; Path=/"]), for: Self.origin)
        #expect(await jar.cookieHeader(for: URL(string: "https://www.example.com/home")!) == "SID=s3cr3t; lang=en")
        #expect(await jar.cookieHeader(for: URL(string: "http://www.example.com/home")!) == "lang=en")
        #expect(await jar.cookies(for: URL(string: "https://api.example.com/")!).map(\.name) == ["lang"])
        jar.remove(name: "lang", domain: "example.com")
        #expect(await jar.allCookies.map(\.name) == ["SID"])
        jar.removeAll()
        #expect(await jar.allCookies.isEmpty)
        await jar.waitUntilPersisted()
    }

    @Test func expiryFollowsTheJarsClock() async {
        let now = NIOLockedValueBoxForTests(Date(timeIntervalSince1970: 1_700_000_000))
        let jar = CookieJar(storage: CookieStorage(), clock: { now.value })
        jar.setCookies(["a=1; Max-Age=60"], for: Self.origin)
        #expect(await jar.cookieHeader(for: Self.origin) == "a=1")
        now.value = now.value.addingTimeInterval(60)
        #expect(await jar.cookieHeader(for: Self.origin) == nil)
        #expect(await jar.allCookies.isEmpty)
    }

    @Test func sharedByManyTasks() async {
        let jar = CookieJar(persistingIn: Self.directory())
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<40 {
                group.addTask {
                    jar.setCookies(["c\(index % 10)=\(index); Max-Age=600"], for: URL(string: "https://h\(index % 4).example.com/")!)
                    _ = await jar.cookieHeader(for: URL(string: "https://h\(index % 4).example.com/x")!)
                }
            }
        }
        await jar.waitUntilPersisted()
        // 20 distinct (name, host) pairs.
        #expect(await jar.allCookies.count == 20)
    }

    // MARK: Persistence

    @Test func persistentCookiesSurviveAReopenAndSessionCookiesDoNot() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let jar = CookieJar(persistingIn: directory)
            jar.setCookies(["kept=1; Max-Age=3600; Path=/; Secure; HttpOnly; SameSite=Strict", "session=2; Path=/"], for: Self.origin)
            jar.setCookies(["domain=3; Domain=example.com; Expires=Fri, 01 Jan 2100 00:00:00 GMT; Path=/"], for: Self.origin)
            #expect(await jar.cookieHeader(for: Self.origin) == "kept=1; session=2; domain=3")
            await jar.waitUntilPersisted()
        }
        let reopened = CookieJar(persistingIn: directory)
        let cookies = await reopened.allCookies
        #expect(Set(cookies.map(\.name)) == ["kept", "domain"])
        let kept = try #require(cookies.first { $0.name == "kept" })
        #expect(kept.isSecure && kept.isHTTPOnly && kept.sameSite == .strict && kept.isHostOnly && kept.domain == "www.example.com")
        #expect(cookies.first { $0.name == "domain" }?.isHostOnly == false)
        #expect(await reopened.cookieHeader(for: URL(string: "https://api.example.com/")!) == "domain=3")
    }

    @Test func sessionCookiesSurviveWhenAsked() async {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let jar = CookieJar(persistingIn: directory, keepsSessionCookies: true)
            jar.setCookies(["session=2"], for: Self.origin)
            await jar.waitUntilPersisted()
        }
        #expect(await CookieJar(persistingIn: directory, keepsSessionCookies: true).allCookies.map(\.name) == ["session"])
        // A jar that does not keep them drops them from the file too.
        let forgetful = CookieJar(persistingIn: directory)
        #expect(await forgetful.allCookies.isEmpty)
        await forgetful.waitUntilPersisted()
        #expect(await CookieJar(persistingIn: directory, keepsSessionCookies: true).allCookies.isEmpty)
    }

    @Test func deletionsArePersisted() async {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let jar = CookieJar(persistingIn: directory)
            jar.setCookies(["a=1; Max-Age=600", "b=2; Max-Age=600", "c=3; Max-Age=600", "d=4; Max-Age=600"], for: Self.origin)
            await jar.waitUntilPersisted()
            jar.setCookies(["a=; Max-Age=0", "b=2; Path=/account"], for: Self.origin)   // b becomes a session cookie
            jar.remove(name: "c", domain: "www.example.com")
            await jar.waitUntilPersisted()
        }
        #expect(await CookieJar(persistingIn: directory).allCookies.map(\.name) == ["d"])
        do {
            let jar = CookieJar(persistingIn: directory)
            jar.removeAll()
            jar.setCookies(["e=5; Max-Age=600"], for: Self.origin)
            await jar.waitUntilPersisted()
        }
        #expect(await CookieJar(persistingIn: directory).allCookies.map(\.name) == ["e"])
    }

    @Test func changesMadeWhileTheFileIsReadApplyOnTopInOrder() async {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let jar = CookieJar(persistingIn: directory)
            jar.setCookies(["a=old; Max-Age=600", "b=old; Max-Age=600"], for: Self.origin)
            await jar.waitUntilPersisted()
        }
        let jar = CookieJar(persistingIn: directory)
        jar.setCookies(["a=new; Max-Age=600"], for: Self.origin)
        jar.remove(name: "b", domain: "www.example.com")
        #expect(await jar.cookieHeader(for: Self.origin) == "a=new")
        await jar.waitUntilPersisted()
        #expect(await CookieJar(persistingIn: directory).cookieHeader(for: Self.origin) == "a=new")
    }

    @Test func expiredCookiesAreNotLoaded() async {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("cookies.sqlite")
        let start = Date(timeIntervalSince1970: 1_700_000_000)
        do {
            let jar = CookieJar(file: file, keepsSessionCookies: false, logger: nil, limits: .init(), clock: { start })
            jar.setCookies(["short=1; Max-Age=10", "long=2; Max-Age=1000"], for: Self.origin)
            await jar.waitUntilPersisted()
        }
        let later = CookieJar(file: file, keepsSessionCookies: false, logger: nil, limits: .init(), clock: { start.addingTimeInterval(100) })
        #expect(await later.allCookies.map(\.name) == ["long"])
    }

    @Test func theFileIsOwnerOnly() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let jar = CookieJar(persistingIn: directory)
        jar.setCookies(["a=1; Max-Age=600"], for: Self.origin)
        await jar.waitUntilPersisted()
        let fileMode = try FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent("cookies.sqlite").path)[.posixPermissions] as? Int
        let directoryMode = try FileManager.default.attributesOfItem(atPath: directory.path)[.posixPermissions] as? Int
        #expect(fileMode == 0o600)
        #expect(directoryMode == 0o700)
    }

    @Test func aFileOfYourChoosing() async {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("nested/jar.db")
        do {
            let jar = CookieJar(persistingAt: file)
            jar.setCookies(["a=1; Max-Age=600"], for: Self.origin)
            await jar.waitUntilPersisted()
        }
        #expect(FileManager.default.fileExists(atPath: file.path))
        #expect(await CookieJar(persistingAt: file).allCookies.map(\.name) == ["a"])
    }

    // MARK: Damage

    @Test func aDamagedFileIsSetAsideAndTheJarStartsEmpty() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = directory.appendingPathComponent("cookies.sqlite")
        try Data(repeating: 0xA5, count: 8192).write(to: file)
        let recorder = LogRecorder()
        let jar = CookieJar(persistingIn: directory, logger: recorder.logger())
        #expect(await jar.allCookies.isEmpty)
        jar.setCookies(["SID=topsecretvalue; Max-Age=600"], for: Self.origin)
        await jar.waitUntilPersisted()
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(names.contains { $0.hasPrefix("cookies.sqlite.damaged-") })
        #expect(recorder.all.contains { $0.level == .error && $0.message.contains("damaged") })
        #expect(await CookieJar(persistingIn: directory).allCookies.map(\.name) == ["SID"])
        #expect(!recorder.all.contains { "\($0.message) \($0.metadata)".contains("topsecretvalue") })
    }

    @Test func aFileDamagedWhileInUseIsSetAsideAndRewrittenFromMemory() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let recorder = LogRecorder()
        let jar = CookieJar(persistingIn: directory, logger: recorder.logger())
        jar.setCookies(["a=1; Max-Age=600"], for: Self.origin)
        await jar.waitUntilPersisted()
        let file = directory.appendingPathComponent("cookies.sqlite")
        let handle = try FileHandle(forWritingTo: file)
        try handle.write(contentsOf: Data(repeating: 0xA5, count: 100))
        try handle.close()
        jar.setCookies(["b=2; Max-Age=600"], for: Self.origin)
        await jar.waitUntilPersisted()
        #expect(jar.database?.problems.withLockedValue { $0 }.contains { $0.contains("damaged") } == true)
        #expect(Set(await CookieJar(persistingIn: directory).allCookies.map(\.name)) == ["a", "b"])
        #expect(!recorder.all.contains { "\($0.message) \($0.metadata)".contains("a=1") })
    }
}

/// A mutable value shared with a `@Sendable` clock.
final class NIOLockedValueBoxForTests<Value: Sendable>: Sendable {
    private let box: NIOLockedValueBox<Value>
    init(_ value: Value) { box = NIOLockedValueBox(value) }
    var value: Value {
        get { box.withLockedValue { $0 } }
        set { box.withLockedValue { $0 = newValue } }
    }
}
