@testable import Courier
import CourierTestServer
import Foundation
import Testing

/// Issue 18 item 6, with a second process: another process settles a row this process waits for; a
/// slow replay keeps its lease against another process; a busy database is retried, not taken for
/// "nothing pending".
@Suite("Outbox across processes", .serialized)
struct OutboxProcessTests {
    static func directory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("courier-procs-\(UUID().uuidString)")
    }

    /// Runs a program to its end; returns its exit status and standard output.
    @discardableResult
    static func run(_ executable: URL, _ arguments: [String]) async throws -> (status: Int32, stdout: String) {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.standardError
        try process.run()
        let data = try await out.fileHandleForReading.readAll()
        await process.exited()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// An engine of this process that freezes (its host looks unreachable) and does not replay by itself.
    static func freezingEngine(_ server: TestServer, _ directory: URL) -> NetworkEngine {
        NetworkEngine(baseURL: server.baseURL, configuration: .init {
            $0.reachability = ManualReachability(.unreachable)
            $0.dataDirectory = directory
            $0.replaysOutbox = false
            $0.callbackQueue = DispatchQueue(label: "test.procs")
        }, queue: NetworkQueue())
    }

    /// An engine of this process that replays its outbox, with short retries.
    static func replayingEngine(
        _ server: TestServer, _ directory: URL, _ reachability: ManualReachability, lease: Duration = .seconds(120)
    ) -> NetworkEngine {
        NetworkEngine(baseURL: server.baseURL, configuration: .init {
            $0.reachability = reachability
            $0.dataDirectory = directory
            $0.outboxRetry = OutboxRetry(initialDelay: .milliseconds(20), maximumDelay: .milliseconds(200), lease: lease)
            $0.callbackQueue = DispatchQueue(label: "test.procs")
        }, queue: NetworkQueue())
    }

    static func freeze(_ engine: NetworkEngine, path: String, _ configure: (NetworkOperation) -> Void = { _ in }) async throws -> NetworkOperation {
        let op = engine.operation(path: path, method: .post, body: .text("from this process"))
        op.isFreezable = true
        configure(op)
        engine.enqueue(op)
        #expect(await eventually { op.state == .frozen })
        return op
    }

    @Test(.timeLimit(.minutes(1))) func whatAnotherProcessDoesWithARowReachesTheOperationWaitingForIt() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let engine = Self.freezingEngine(server, directory)

        // Delivered by another process (`courier outbox flush`).
        let delivered = try await Self.freeze(engine, path: "anything/delivered")
        let flush = try await Self.run(CLITests.binary, ["outbox", "flush", "--data-dir", directory.path])
        #expect(flush.status == 0, "\(flush.stdout)")
        #expect(try await delivered.response().statusCode == 200, "delivered elsewhere, and this process hears it")
        #expect(server.requestCount(path: "/anything/delivered") == 1)

        // Dropped by another process.
        let dropped = try await Self.freeze(engine, path: "anything/dropped")
        let id = try #require(dropped.outboxID)
        #expect(try await Self.run(CLITests.binary, ["outbox", "drop", id, "--data-dir", directory.path]).status == 0)
        #expect(await failure(of: dropped)?.code == .cancelled)

        // Dead-lettered by another process (its time to live ran out before that process claimed it).
        let expired = try await Self.freeze(engine, path: "anything/expired") { $0.timeToLive = .milliseconds(100) }
        try await Task.sleep(for: .milliseconds(200))
        _ = try await Self.run(CLITests.binary, ["outbox", "flush", "--data-dir", directory.path])
        #expect(await failure(of: expired)?.code == .deadLettered)
        #expect(server.requestCount(path: "/anything/expired") == 0)
    }

    @Test(.timeLimit(.minutes(1))) func aReplaySlowerThanItsLeaseIsNotSentAgainByAnotherProcess() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let reachability = ManualReachability(.unreachable)
        let engine = Self.replayingEngine(server, directory, reachability, lease: .seconds(1))
        let op = try await Self.freeze(engine, path: "delay/2500")
        reachability.setStatus(.reachable(via: .wired))
        #expect(await server.waitForRequests(count: 1, timeout: .seconds(10)))
        // Another process starts replaying the same outbox while the answer takes 2.5 lease lengths.
        async let other = Self.run(OutboxCrashTests.child, ["replay", server.baseURL, directory.path])
        #expect(try await op.response().statusCode == 200)
        #expect(try await other.status == 0)
        #expect(server.requestCount(path: "/delay/2500") == 1, "sent once, although the answer outlived the lease twice over")
    }

    @Test(.timeLimit(.minutes(1))) func aBusyDatabaseIsRetriedNotTakenForAnEmptyOutbox() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        OutboxDatabase.busyTimeouts.withLockedValue { $0[directory.standardizedFileURL.path] = 0.1 }
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let reachability = ManualReachability(.unreachable)
        let engine = Self.replayingEngine(server, directory, reachability)
        let op = try await Self.freeze(engine, path: "anything/busy")
        // Another process holds the database's write lock for a while (a long transaction, a slow disk).
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        holder.arguments = ["python3", "-c", """
            import sqlite3, sys, time
            c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=5)
            c.execute("BEGIN EXCLUSIVE")
            print("locked", flush=True)
            time.sleep(1.5)
            c.execute("COMMIT")
            """, directory.appendingPathComponent("outbox.sqlite").path]
        let out = Pipe()
        holder.standardOutput = out
        try holder.run()
        let line = await offThePool { out.fileHandleForReading.availableData }
        #expect(String(decoding: line, as: UTF8.self).contains("locked"))
        // The host comes back while the lock is held: the claim fails, and must be tried again.
        reachability.setStatus(.reachable(via: .wired))
        #expect(try await op.response().statusCode == 200)
        await holder.exited()
        #expect(server.requestCount(path: "/anything/busy") == 1)
    }
}
