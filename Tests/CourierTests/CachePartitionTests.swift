import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import Testing
@testable import Courier

/// Issue 23 E2 and E5: the cache's credential partitions are keyed hashes under a secret kept owner-only
/// beside the cache, never a bare hash a dictionary attack reverses; an app may name the partition (a
/// user id) so a refreshed token keeps its user's entries.
@Suite("cache credential partitions")
struct CachePartitionTests {
    func directory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("courier-partition-\(UUID().uuidString)")
    }

    var basic: HTTPFields {
        var fields = HTTPFields()
        fields[.authorization] = "Basic " + Data("ada:password1".utf8).base64EncodedString()
        return fields
    }

    @Test func aPartitionIsAKeyedHashNeverTheBareHashOfTheCredentials() throws {
        let folder = directory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let cache = ResponseCache(directory: folder)
        let partition = try #require(cache.credentialPartition(of: basic, names: SensitiveHeaders.defaultNames))
        // What earlier versions stored: one SHA-256 per guessed password finds it.
        let bare = Digests.sha256Hex(Data("authorization: \(basic[.authorization]!)".utf8))
        #expect(partition.hasPrefix("k1:") && !partition.contains(bare))
        #expect(!partition.contains("password1"))
        // The key is kept owner-only beside the cache, and the same after a restart (another instance).
        let keyFile = folder.appendingPathComponent("partition.key")
        let attributes = try FileManager.default.attributesOfItem(atPath: keyFile.path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        #expect((attributes[.size] as? Int) == 32)
        #expect(ResponseCache(directory: folder).credentialPartition(of: basic, names: SensitiveHeaders.defaultNames) == partition)
        // Another device (another directory, another key): another partition for the same password.
        let other = directory()
        defer { try? FileManager.default.removeItem(at: other) }
        #expect(ResponseCache(directory: other).credentialPartition(of: basic, names: SensitiveHeaders.defaultNames) != partition)
        #expect(cache.credentialPartition(of: [.accept: "*/*"], names: SensitiveHeaders.defaultNames) == nil, "no credentials: public")
    }

    @Test func aLinkPlantedAtTheKeyIsNeverFollowedNorTrusted() throws {
        let folder = directory()
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let victim = folder.appendingPathComponent("victim.txt")
        try Data(repeating: 0x41, count: 32).write(to: victim)   // a 32-byte file an attacker knows
        try FileManager.default.createSymbolicLink(
            at: folder.appendingPathComponent("partition.key"), withDestinationURL: victim)
        let cache = ResponseCache(directory: folder)
        let known = CachePartitionKeyProbe.partition(withKeyBytes: Data(repeating: 0x41, count: 32), of: basic)
        #expect(cache.credentialPartition(of: basic, names: SensitiveHeaders.defaultNames) != known)
        #expect(try Data(contentsOf: victim) == Data(repeating: 0x41, count: 32), "the link's target is untouched")
        let type = try FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent("partition.key").path)[.type]
        #expect(type as? FileAttributeType == .typeRegular, "replaced by a key of its own")
    }

    /// Review of issue 23: a key someone else knows, planted as a hard link or left readable by others, is
    /// not used.
    @Test func aHardLinkedOrOpenKeyIsReplaced() throws {
        let folder = directory()
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let known = folder.appendingPathComponent("known.key")
        _ = FileManager.default.createFile(atPath: known.path, contents: Data(repeating: 0x42, count: 32), attributes: [.posixPermissions: 0o600])
        let key = folder.appendingPathComponent("partition.key")
        try FileManager.default.linkItem(at: known, to: key)
        let knownPartition = CachePartitionKeyProbe.partition(withKeyBytes: Data(repeating: 0x42, count: 32), of: basic)
        #expect(ResponseCache(directory: folder).credentialPartition(of: basic, names: SensitiveHeaders.defaultNames) != knownPartition)
        #expect(try Data(contentsOf: known) == Data(repeating: 0x42, count: 32), "the other name is untouched")

        let open = directory()
        defer { try? FileManager.default.removeItem(at: open) }
        try FileManager.default.createDirectory(at: open, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(
            atPath: open.appendingPathComponent("partition.key").path, contents: Data(repeating: 0x42, count: 32),
            attributes: [.posixPermissions: 0o644])
        #expect(ResponseCache(directory: open).credentialPartition(of: basic, names: SensitiveHeaders.defaultNames) != knownPartition)
        let mode = try FileManager.default.attributesOfItem(atPath: open.appendingPathComponent("partition.key").path)[.posixPermissions]
        #expect(mode as? Int == 0o600)
    }

    @Test func entriesStoredUnderABareHashByEarlierVersionsAreRemoved() async throws {
        let folder = directory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let transport = FakeTransport { _ in FakeTransport.reply(headers: [.cacheControl: "private, max-age=600"], body: "{\"n\":1}") }
        var engine: NetworkEngine? = NetworkEngine.fake(transport, headers: ["Authorization": "Bearer t1"]) {
            $0.cache = ResponseCache(directory: folder)
        }
        _ = try await engine?.send(try #require(engine).operation(path: "me"))
        engine = nil
        let index = folder.appendingPathComponent("index.sqlite").path
        // The response is stored off the caller's thread: wait for its row.
        #expect(await eventually { (try? sqlite(index, "SELECT count(*) FROM entries")) == "1" })
        #expect(try sqlite(index, "SELECT partition FROM entries").hasPrefix("k1:"))
        // Make the row look like an earlier version's: its partition a bare SHA-256.
        let bare = Digests.sha256Hex(of: "authorization: Bearer t1")
        try sqlite(index, "UPDATE entries SET partition = '\(bare)'")
        #expect(try sqlite(index, "SELECT partition FROM entries") == bare)
        let reopened = ResponseCache(directory: folder)
        _ = reopened.diskCandidates(for: URL(string: "https://api.example.com/v1/me")!)
        #expect(try sqlite(index, "SELECT count(*) FROM entries") == "0")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.appendingPathComponent("bodies").path).isEmpty)
    }

    @Test func aNamedPartitionSurvivesATokenRefreshAndKeepsUsersApart() async throws {
        let transport = FakeTransport { _ in FakeTransport.reply(headers: [.cacheControl: "private, max-age=600"], body: "{\"n\":1}") }
        let token = NIOLockedValueBox("token-1")
        let user = NIOLockedValueBox("ada")
        let engine = NetworkEngine.fake(transport) {
            $0.cache = ResponseCache(directory: nil)
            $0.credentialProvider = { _ in [.authorization: "Bearer \(token.withLockedValue { $0 })"] }
            $0.cachePartitionName = { _ in user.withLockedValue { $0 } }
        }
        let first = try await engine.send(engine.operation(path: "listing"))
        #expect(first.cacheOutcome == .miss)
        token.withLockedValue { $0 = "token-2" }   // refreshed
        let second = try await engine.send(engine.operation(path: "listing"))
        #expect(second.cacheOutcome == .hit, "the same user's entry, after the refresh")
        user.withLockedValue { $0 = "grace" }
        token.withLockedValue { $0 = "grace-token" }
        let third = try await engine.send(engine.operation(path: "listing"))
        #expect(third.cacheOutcome == .miss, "another user never sees it")
        #expect(transport.requestCount == 2)
    }
}

/// Computes what a partition would be under known key bytes (to show a planted key is not used).
enum CachePartitionKeyProbe {
    static func partition(withKeyBytes bytes: Data, of headers: HTTPFields) -> String {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-probe-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent("partition.key")
        _ = FileManager.default.createFile(atPath: file.path, contents: bytes, attributes: [.posixPermissions: 0o600])
        return ResponseCache(directory: folder).credentialPartition(of: headers, names: SensitiveHeaders.defaultNames) ?? ""
    }
}

/// Runs one statement with the `sqlite3` tool (Debian's sqlite3 package) and returns what it printed.
@discardableResult
func sqlite(_ path: String, _ statement: String) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
    process.arguments = [path, statement]
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
}
