@testable import Courier
import CourierTestServer
import Foundation
import Testing

/// The outbox survives SIGKILL: a child process freezes 500 requests and replays them, killed at random
/// moments several times over in both phases. In the end the server has every Idempotency-Key, and a
/// key it saw twice was always resent after a kill (an attempt whose answer died with the process).
@Suite("Outbox crash test", .serialized)
struct OutboxCrashTests {
    static var child: URL {
        CLITests.binary.deletingLastPathComponent().appendingPathComponent("courier-outbox-child")
    }

    /// Runs the child; kills it with SIGKILL as soon as `killWhen` holds, unless it ended first, and then
    /// calls `afterKill`. Returns whether it was killed.
    func runChild(_ arguments: [String], killWhen: (@Sendable () -> Bool)? = nil) async throws -> (killed: Bool, status: Int32) {
        try await Self.runChild(arguments, killWhen: killWhen)
    }

    /// ``runChild(_:killWhen:)`` with more: `environment` added to this process's, the child's standard
    /// output to `output` (or nowhere), and `afterKill` called once the killed child is gone.
    static func runChild(
        _ arguments: [String], environment: [String: String] = [:], output: URL? = nil,
        killWhen: (@Sendable () -> Bool)? = nil, afterKill: (@Sendable () -> Void)? = nil
    ) async throws -> (killed: Bool, status: Int32) {
        let process = Process()
        process.executableURL = Self.child
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        if let output {
            _ = FileManager.default.createFile(atPath: output.path, contents: nil)
            process.standardOutput = try FileHandle(forWritingTo: output)
        } else {
            process.standardOutput = FileHandle.nullDevice
        }
        process.standardError = FileHandle.standardError
        try process.run()
        // Watched from a thread of its own, not the test's cooperative pool, which other suites may keep
        // busy: the kill must land while the child is still at work.
        return await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                while process.isRunning {
                    if let killWhen, killWhen() {
                        kill(process.processIdentifier, SIGKILL)
                        process.waitUntilExit()
                        afterKill?()
                        continuation.resume(returning: (true, process.terminationStatus))
                        return
                    }
                    usleep(500)
                }
                process.waitUntilExit()
                continuation.resume(returning: (false, process.terminationStatus))
            }
        }
    }

    /// Rows in the outbox, read as another process would (WAL lets readers in while the child writes).
    func rowCount(_ outbox: Outbox) -> Int { outbox.database!.count() }

    @Test(.timeLimit(.minutes(5))) func fiveHundredFrozenRequestsSurviveRandomKills() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-crash-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        var generator = SystemRandomNumberGenerator()
        var kills = 0

        // Freezing, killed at random moments (after a random number of rows more); then run to the end.
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let outbox = try Outbox(directory: directory)
        var freezeKills = 0
        for _ in 0..<6 where freezeKills < 3 && rowCount(outbox) < 450 {
            let target = min(rowCount(outbox) + Int.random(in: 1...100, using: &generator), 480)
            let (killed, status) = try await runChild(["freeze", server.baseURL, directory.path, "500", "3"]) { rowCount(outbox) >= target }
            if killed { freezeKills += 1 } else { #expect(status == 0, "the freezing child failed") }
        }
        #expect(freezeKills >= 2, "the child was killed while freezing")
        kills += freezeKills
        let frozen = try await runChild(["freeze", server.baseURL, directory.path, "500"])
        #expect(frozen.status == 0)
        #expect(server.requestCount == 0, "nothing is sent while freezing")

        // Replaying, killed at random moments: remember how many requests the server had seen at each kill.
        var killMarks: [Int] = []
        for _ in 0..<6 where killMarks.count < 4 && server.requestCount < 400 {
            let target = min(server.requestCount + Int.random(in: 1...100, using: &generator), 450)
            let (killed, _) = try await runChild(["replay", server.baseURL, directory.path]) { server.requestCount >= target }
            if killed {
                kills += 1
                killMarks.append(server.requestCount)
            }
        }
        #expect(killMarks.count >= 3, "the child was killed while replaying")
        let replayed = try await runChild(["replay", server.baseURL, directory.path])
        #expect(replayed.status == 0)

        let keys = server.recordedRequests.map { $0.header("idempotency-key") ?? "" }
        let expected = Set((0..<500).map { "crash-\($0)" })
        #expect(Set(keys) == expected, "every frozen request reached the server")
        var seen: [String: Int] = [:]
        for (index, key) in keys.enumerated() {
            if let previous = seen[key] {
                // A resend is only allowed across a kill: some kill happened after the earlier receipt.
                #expect(killMarks.contains { $0 > previous && $0 <= index }, "\(key) was sent twice without a crash in between")
            }
            seen[key] = index
        }
        // Bodies are intact: every key arrived at least once with the payload frozen with it (a request
        // cut short by a kill is recorded with part of its body, or none).
        var intact: Set<String> = []
        for request in server.recordedRequests {
            let key = request.header("idempotency-key") ?? ""
            if String(decoding: request.body, as: UTF8.self) == "payload \(key.dropFirst("crash-".count))" { intact.insert(key) }
        }
        #expect(intact == expected)
        print("crash test: \(kills) kills, \(keys.count) requests for 500 keys")
    }

    @Test(.timeLimit(.minutes(2))) func threeProcessesReplayingOneOutboxSendEachRequestOnce() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-shared-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        #expect(try await runChild(["freeze", server.baseURL, directory.path, "200"]).status == 0)
        async let first = runChild(["replay", server.baseURL, directory.path])
        async let second = runChild(["replay", server.baseURL, directory.path])
        async let third = runChild(["replay", server.baseURL, directory.path])
        let statuses = try await [first.status, second.status, third.status]
        #expect(statuses == [0, 0, 0])
        let keys = server.recordedRequests.map { $0.header("idempotency-key") ?? "" }
        #expect(keys.count == 200, "each frozen request replayed by exactly one process")
        #expect(Set(keys) == Set((0..<200).map { "crash-\($0)" }))
        #expect(server.maxInFlight == 1, "one at a time, in order, per host")
        #expect(keys == (0..<200).map { "crash-\($0)" })
    }
}
