import CourierTestServer
import Foundation
import Testing

/// Issue 23 item 1: every numeric option of every subcommand, given hostile values, is a usage error
/// (exit status 2, one line on stderr), never a crash (`courier download --limit-rate 1e30` and
/// `courier get --timeout 1e300` died of SIGILL: `Int(x)` on a huge `Double`).
extension CLITests {
    /// How a run of the binary ended.
    struct Ending: Sendable {
        var status: Int32
        var wasSignalled: Bool
        var stderr: String
    }

    /// Runs `courier` with `arguments` (no URL is ever contacted: each one is refused first).
    static func ending(_ arguments: [String]) async throws -> Ending {
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        let err = Pipe()
        process.standardError = err
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let stderr = String(decoding: try await err.fileHandleForReading.readAll(), as: UTF8.self)
        await process.exited()
        return Ending(status: process.terminationStatus, wasSignalled: process.terminationReason == .uncaughtSignal, stderr: stderr)
    }

    /// Values no numeric option takes (`0` is a valid `--retry`, so it is given to the others only): negative, NaN, infinite, huge, overflowing, not numbers at all.
    static let hostileNumbers = [
        "1e30", "1e300", "-1", "-0.5", "nan", "NaN", "inf", "-inf", "infinity", "1.8e308", "0x1p1023", "1e-300",
        "0.0000001", "99999999999999999999999", "9223372036854775808", "9223372036854775807", "-9223372036854775808",
        "18446744073709551616", "", " ", "ten", "١",
    ]

    /// Each numeric option, with the arguments it is given with, and the hostile values of its own kind.
    static let numericOptions: [(arguments: [String], option: String, extra: [String])] = {
        let url = "http://127.0.0.1:1/x"
        let rates = ["10000000000000000G", "1e30k", "99999999999999999999M", "9007199254740993k", "1025G", "0", "0.5", "0.0001k", "1T", "k"]
        let sizes = ["0", "0x0", "65536x65536", "9223372036854775807x1", "99999999999999999999x2", "1x", "x1", "1x1x1", "-1x-1", "1e9x1"]
        return [
            (["get", url], "--timeout", ["0", "2592001"]),
            (["post", url, "-d", "a=1"], "--timeout", ["0", "2592001"]),
            (["download", url, "-o", "/dev/null"], "--timeout", ["0", "2592001"]),
            (["download", url, "-o", "/dev/null"], "--limit-rate", rates),
            (["upload", url, "/dev/null"], "--limit-rate", rates),
            (["get", url], "--retry", ["101"]),
            (["post", url, "-d", "a=1"], "--retry", ["101"]),
            (["download", url, "-o", "/dev/null"], "--retry", ["101"]),
            (["upload", url, "/dev/null"], "--retry", ["101"]),
            (["image", url], "--retry", ["101"]),
            (["image", url], "--thumbnail", ["0", "65536"]),
            (["image", url], "--size", sizes),
            (["image", url], "--quality", ["0", "101"]),
            (["image", url], "--max-pixels", ["0", "1073741825"]),
            (["reachability", "127.0.0.1"], "--port", ["0", "65536"]),
        ]
    }()

    /// Not under the thread sanitizer (`scripts/test --sanitize=thread`): it starts about 380 processes that
    /// parse their arguments and exit, which finds no data race and took 141 s of that serial run.
    @Test(
        .timeLimit(.minutes(5)),
        .disabled(if: ProcessInfo.processInfo.environment["COURIER_SANITIZER"] != nil, "argument parsing only; the plain run covers it"))
    func hostileNumbersForEveryNumericOptionAreUsageErrors() async throws {
        var runs: [[String]] = []
        for (arguments, option, extra) in Self.numericOptions {
            for value in Self.hostileNumbers + extra { runs.append(arguments + ["\(option)=\(value)"]) }
        }
        // A few at a time: each is a process start on a 2-core machine.
        var endings: [([String], Ending)] = []
        for batch in stride(from: 0, to: runs.count, by: 4).map({ Array(runs[$0..<min($0 + 4, runs.count)]) }) {
            endings += try await withThrowingTaskGroup(of: ([String], Ending).self) { group in
                for arguments in batch { group.addTask { (arguments, try await Self.ending(arguments)) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }
        #expect(endings.count == runs.count)
        for (arguments, ending) in endings {
            #expect(!ending.wasSignalled, "\(arguments) crashed: signal \(ending.status)")
            #expect(ending.status == 2, "\(arguments): \(ending.status) \(ending.stderr)")
            #expect(ending.stderr.hasPrefix("courier: error: ") && ending.stderr.split(separator: "\n").count == 1, "\(arguments): \(ending.stderr)")
        }
    }

    /// The two commands of the report, and the message a user sees.
    @Test func theReportedCrashesAreUsageErrorsNamingTheOption() async throws {
        let rate = try await Self.ending(["download", "--limit-rate", "1e30", "http://127.0.0.1:1/x", "-o", "/dev/null"])
        #expect(rate.status == 2 && !rate.wasSignalled)
        #expect(rate.stderr.contains("'--limit-rate <rate>'") && rate.stderr.contains("bytes per second"), "\(rate.stderr)")
        let timeout = try await Self.ending(["get", "--timeout", "1e300", "http://127.0.0.1:1/x"])
        #expect(timeout.status == 2 && !timeout.wasSignalled)
        #expect(timeout.stderr.contains("'--timeout <seconds>'") && timeout.stderr.contains("number of seconds"), "\(timeout.stderr)")
    }

    /// Values in range still work: a 1 GiB/s limit and a fractional timeout against the server.
    @Test func valuesInRangeAreTaken() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let get = try await courier("get", "--timeout", "2.5", "--retry", "0", server.url("/bytes/100"))
        #expect(get.status == 0, "\(get.stderr)")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("courier-cli-rate-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        let download = try await courier("download", "--limit-rate", "1G", "--timeout", "30", "-o", file.path, server.url("/bytes/100000"))
        #expect(download.status == 0, "\(download.stderr)")
        #expect(try Data(contentsOf: file) == Self.served(100_000))
    }
}
