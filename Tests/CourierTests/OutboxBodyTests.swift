import Foundation
import NIOCore
import Testing
@testable import Courier

/// Tier 1: frozen files and forms without a network: the layout a row keeps, the copies and their
/// limits, what the sweep removes, and the replay rule for a body whose copy is gone.
@Suite("Outbox bodies: layout, copies, sweep")
struct OutboxBodyTests {
    static let owner = "\(getpid()):testcopy"

    static func pattern(_ count: Int, seed: Int = 0) -> Data { Data((0..<count).map { UInt8(($0 + seed) % 251) }) }

    static func names(in folder: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).sorted()
    }

    static func permissions(_ url: URL) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.posixPermissions] as? NSNumber)?.intValue ?? -1
    }

    /// Every byte a body sends, measured as the executor does first.
    static func bytes(of body: RequestBody) async throws -> [UInt8] {
        var source = try #require(body.source)
        try await source.prepare()
        return try await TransferTestSupport.collect(any: source.makeStream())
    }

    @Test func aFormIsCopiedAndRebuiltToTheSameBytesWhateverHappensToItsFiles() async throws {
        try await TransferTestSupport.withTemporaryDirectory { folder in
            let photo = folder.appendingPathComponent("beach.jpg")
            let notes = folder.appendingPathComponent("notes.txt")
            try Self.pattern(700_000).write(to: photo)   // several chunks of the copy
            try Data("first draft".utf8).write(to: notes)
            var form = MultipartForm()
            form.addField("Holiday", name: "album")
            form.addFile(photo, name: "photo")
            form.addData(Self.pattern(10_000, seed: 7), name: "thumb", filename: "thumb.png")   // a segment of its own
            form.addFile(notes, name: "notes", filename: "renamed.txt", contentType: "text/markdown")
            let original = try await Self.bytes(of: .multipart(form))

            let outbox = folder.appendingPathComponent("outbox")
            try FileManager.default.createDirectory(at: outbox, withIntermediateDirectories: true)
            let store = OutboxBodyStore(directory: outbox, owner: Self.owner)
            let frozen = try store.freeze(bytes: nil, source: .multipart(form), id: "row-1", limit: 10 << 20)
            let layout = try #require(frozen.layout)
            #expect(layout.kind == .multipart && layout.boundary == form.boundary)
            #expect(layout.parts.map(\.copy) == [nil, "part-1", nil, "part-3"])
            #expect(layout.copies.map(\.size) == [700_000, 11])
            #expect(frozen.bytes == Data("Holiday".utf8) + Self.pattern(10_000, seed: 7), "fields and data parts stay with the row")
            let copies = store.folder(for: "row-1")
            #expect(Self.names(in: store.folder) == ["row-1"], "no partial copy left")
            #expect(Self.names(in: copies) == [".owner", "part-1", "part-3"], "the owner stays until the row is committed")
            #expect(Self.permissions(copies) == 0o700 && Self.permissions(copies.appendingPathComponent("part-1")) == 0o600)
            store.committed("row-1")
            #expect(Self.names(in: copies) == ["part-1", "part-3"])

            // The row keeps the layout as text; read back, it rebuilds the very same body from the copies.
            let stored = try #require(FrozenBody(text: layout.text, bytes: frozen.bytes))
            #expect(stored == layout)
            try Data("rewritten entirely".utf8).write(to: notes)
            try FileManager.default.removeItem(at: photo)
            let replayed = stored.requestBody(copiesIn: copies, bytes: frozen.bytes, contentType: form.contentType)
            #expect(replayed.contentType == form.contentType, "the same boundary, so the frozen Content-Type still fits")
            #expect(try await Self.bytes(of: replayed) == original)
            #expect(store.problem(with: stored, id: "row-1") == nil)
        }
    }

    @Test func aFileBodyIsCopiedWhole() async throws {
        try await TransferTestSupport.withTemporaryDirectory { folder in
            let file = folder.appendingPathComponent("report.pdf")
            try Self.pattern(300_001).write(to: file)
            let store = OutboxBodyStore(directory: folder, owner: Self.owner)
            let frozen = try store.freeze(bytes: nil, source: .file(file), id: "row-2", limit: 1 << 20)
            let layout = try #require(frozen.layout)
            #expect(layout.kind == .file && layout.copies.map(\.name) == ["body"] && layout.copies.map(\.size) == [300_001])
            try FileManager.default.removeItem(at: file)
            let replayed = layout.requestBody(copiesIn: store.folder(for: "row-2"), bytes: frozen.bytes, contentType: "application/pdf")
            #expect(replayed.contentType == "application/pdf")
            #expect(try await Self.bytes(of: replayed) == Array(Self.pattern(300_001)))
        }
    }

    @Test func overTheLimitMissingOrOneShotIsATypedErrorAndNothingIsLeft() async throws {
        try await TransferTestSupport.withTemporaryDirectory { folder in
            let store = OutboxBodyStore(directory: folder, owner: Self.owner)
            let big = folder.appendingPathComponent("big.bin")
            try Self.pattern(1001).write(to: big)
            let small = folder.appendingPathComponent("small.bin")
            try Self.pattern(600).write(to: small)

            #expect(Self.code { try store.freeze(bytes: nil, source: .file(big), id: "a", limit: 1000) } == .frozenBodyTooLarge)
            #expect(Self.code { try store.freeze(bytes: Self.pattern(1001), source: nil, id: "b", limit: 1000) } == .frozenBodyTooLarge)
            var form = MultipartForm()
            form.addFile(small, name: "one")
            form.addFile(small, name: "two")   // each under the limit; the form is not
            #expect(Self.code { try store.freeze(bytes: nil, source: .multipart(form), id: "c", limit: 1000) } == .frozenBodyTooLarge)
            let missing = folder.appendingPathComponent("gone.bin")
            #expect(Self.code { try store.freeze(bytes: nil, source: .file(missing), id: "d", limit: 1000) } == .fileUnavailable)
            var partlyMissing = MultipartForm()
            partlyMissing.addFile(small, name: "here")
            partlyMissing.addFile(missing, name: "gone")
            #expect(Self.code { try store.freeze(bytes: nil, source: .multipart(partlyMissing), id: "e", limit: 1 << 20) } == .fileUnavailable)
            let stream = AsyncStream<ByteBuffer> { $0.finish() }
            #expect(Self.code { try store.freeze(bytes: nil, source: .stream(stream, length: nil), id: "f", limit: 1000) } == .bodyNotReplayable)
            #expect(Self.names(in: store.folder).isEmpty, "nothing copied, nothing left: \(Self.names(in: store.folder))")

            // Exactly at the limit is allowed, a form counted whole (framing included).
            #expect(try store.freeze(bytes: nil, source: .file(big), id: "g", limit: 1001).layout != nil)
            let formLength = try await form.contentLength()
            #expect(Self.code { try store.freeze(bytes: nil, source: .multipart(form), id: "h", limit: Int(formLength) - 1) } == .frozenBodyTooLarge)
            #expect(try store.freeze(bytes: nil, source: .multipart(form), id: "h", limit: Int(formLength)).layout != nil)
        }
    }

    @Test func aMissingOrTruncatedCopyIsNamed() async throws {
        try await TransferTestSupport.withTemporaryDirectory { folder in
            let file = folder.appendingPathComponent("a.bin")
            try Self.pattern(5000).write(to: file)
            let store = OutboxBodyStore(directory: folder, owner: Self.owner)
            let layout = try #require(try store.freeze(bytes: nil, source: .file(file), id: "row", limit: 1 << 20).layout)
            let copy = store.folder(for: "row").appendingPathComponent("body")
            try Self.pattern(10).write(to: copy)
            #expect(store.problem(with: layout, id: "row")?.contains("damaged: 10 bytes where 5000 were copied") == true)
            try FileManager.default.removeItem(at: copy)
            #expect(store.problem(with: layout, id: "row")?.contains("\(copy.path) is missing") == true)
            store.remove("row")
            #expect(Self.names(in: store.folder).isEmpty)
            store.remove("../a.bin")
            #expect(FileManager.default.fileExists(atPath: file.path), "an id is never a path out of the folder")
        }
    }

    @Test func theSweepRemovesCopiesNoRowNeedsAndLeavesCopiesInTheMaking() async throws {
        try await TransferTestSupport.withTemporaryDirectory { folder in
            let store = OutboxBodyStore(directory: folder, owner: Self.owner)
            let dead = try await Self.deadProcessID()
            func make(_ name: String, owner: String? = nil) throws {
                let url = store.folder.appendingPathComponent(name)
                try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
                try Data("x".utf8).write(to: url.appendingPathComponent("body"))
                if let owner { try Data(owner.utf8).write(to: url.appendingPathComponent(OutboxBodyStore.ownerFileName)) }
            }
            try make("kept-row")
            try make("orphan")
            try make("crashed-before-commit", owner: "\(dead):deadbeef")
            try make("being-committed", owner: Self.owner)
            try make(".partial.\(dead).deadbeef.half-copied")
            try make(".partial.\(getpid()).abcd1234.being-copied")

            // Rows unreadable: only copies that can never have a row go.
            #expect(store.sweep { nil } == [".partial.\(dead).deadbeef.half-copied"])
            let removed = store.sweep { ["kept-row"] }
            #expect(Set(removed) == ["orphan", "crashed-before-commit"])
            #expect(Self.names(in: store.folder) == [".partial.\(getpid()).abcd1234.being-copied", "being-committed", "kept-row"])
        }
    }

    @Test func whileADatabaseIsSetAsideACommittedCopyWithoutALiveRowIsKept() async throws {
        try await TransferTestSupport.withTemporaryDirectory { folder in
            let store = OutboxBodyStore(directory: folder, owner: Self.owner)
            let dead = try await Self.deadProcessID()
            for (name, owner) in [("row-of-the-set-aside-database", nil), ("crashed-before-commit", "\(dead):deadbeef")] {
                let url = store.folder.appendingPathComponent(name)
                try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
                try Data("x".utf8).write(to: url.appendingPathComponent("body"))
                if let owner { try Data(owner.utf8).write(to: url.appendingPathComponent(OutboxBodyStore.ownerFileName)) }
            }
            // A damaged database set aside by an older version (which left every copy in bodies/) or by a
            // set-aside that could not move this folder: its row may be there, so the copy stays.
            try Data().write(to: folder.appendingPathComponent(OutboxDatabase.setAsidePrefix + "20261124T000000Z"))
            #expect(store.sweep { [] } == ["crashed-before-commit"], "a copy that never had a row still goes")
            #expect(Self.names(in: store.folder) == ["row-of-the-set-aside-database"])
        }
    }

    @Test func aLayoutThatDoesNotFitItsRowIsDamaged() {
        let good = FrozenBody(kind: .multipart, boundary: "b", parts: [
            FrozenBody.Part(name: "a", offset: 0, length: 3), FrozenBody.Part(name: "f", copy: "part-1", size: 9),
        ])
        #expect(FrozenBody(text: good.text, bytes: Data("abc".utf8)) == good)
        #expect(FrozenBody(text: good.text, bytes: Data("ab".utf8)) == nil, "a range past the row's bytes")
        let escaping = FrozenBody(kind: .file, boundary: nil, parts: [FrozenBody.Part(copy: "../../etc/passwd", size: 1)])
        #expect(FrozenBody(text: escaping.text, bytes: nil) == nil, "a copy is a name in its folder, never a path")
        #expect(FrozenBody(text: "{\"version\":2}", bytes: nil) == nil)
        #expect(FrozenBody(text: "not json", bytes: nil) == nil)
    }

    @Test func aHeadWhoseBodyIsUnavailableIsDeadLetteredNeverSent() {
        typealias Machine = ReplayStateMachine
        var head = Machine.Head(id: "a", attempts: 0, maximumAttempts: 10, expiresAt: nil, nextAttemptAt: 100)
        #expect(Machine.decide(head, now: 0) == .wait(until: 100))
        head.isBodyIntact = false
        #expect(Machine.decide(head, now: 0) == .deadLetter(.bodyUnavailable), "no retry time makes a missing body come back")
        head.leasedUntil = 5
        #expect(Machine.decide(head, now: 0) == .wait(until: 1), "another replayer holds it: that one decides")
        head.leasedUntil = nil
        var other = Machine.Head(id: "b", lane: "other", attempts: 0, maximumAttempts: nil, expiresAt: nil, nextAttemptAt: 0)
        other.isBodyIntact = true
        #expect(Machine.choose([other, head], now: 0, claim: Machine.Claim())?.decision == .deadLetter(.bodyUnavailable),
                "dead letters first, so their lane goes on")
    }

    // MARK: Helpers

    static func code(_ body: () throws -> OutboxBodyStore.Frozen) -> NetworkError.Code? {
        do {
            _ = try body()
            return nil
        } catch {
            return (error as? NetworkError)?.code
        }
    }

    /// The id of a process that has exited.
    static func deadProcessID() async throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "exit 0"]
        try process.run()
        await process.exited()
        return process.processIdentifier
    }
}
