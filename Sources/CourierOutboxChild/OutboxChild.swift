import Courier
import CourierPostgres
import Foundation
import PostgresNIO

/// A helper process for the outbox crash test (Tests/CourierTests/OutboxCrashTests.swift), built with the
/// package so the test can SIGKILL it at random moments:
///
///     courier-outbox-child freeze BASE_URL DATA_DIR COUNT [PACE_MS]   # freeze POST BASE_URL/anything/N, keys crash-N
///     courier-outbox-child freeze-files BASE_URL DATA_DIR COUNT [PACE_MS]   # the same with a multipart form
///                                                           # holding DATA_DIR-sources/N.bin, keys files-N
///     courier-outbox-child replay BASE_URL DATA_DIR         # replay until the outbox is empty
///
/// `freeze` is resumable, as an app would be: it skips the keys already in the outbox (a request whose
/// key is there was committed), so after a kill it freezes only what is missing.
///
/// DATA_DIR may be `postgres://user@127.0.0.1:PORT/DATABASE` instead (the password in `PGPASSWORD`): the
/// PostgreSQL outbox `fleet` (the fleet test, Tests/CourierTests/OutboxFleetTests.swift), where requests
/// (`POST BASE_URL/delay/20`, keys `fleet-N`) are spread over 20 ordering keys (`lane-N % 20`), a freeze that fails because the server
/// is away is tried again (as a service would), and replay leases last 10 s.
@main
enum OutboxChild {
    static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        guard arguments.count >= 3, let directory = Optional(URL(fileURLWithPath: arguments[2], isDirectory: true)) else {
            FileHandle.standardError.write(Data("usage: courier-outbox-child freeze|replay BASE_URL DATA_DIR [COUNT]\n".utf8))
            exit(2)
        }
        if arguments[2].hasPrefix("postgres://") {
            let fleet = Fleet(base: arguments[1], database: arguments[2])
            switch arguments[0] {
            case "freeze":
                await fleet.freeze(
                    count: Int(arguments.count > 3 ? arguments[3] : "") ?? 500,
                    pace: .milliseconds(Int(arguments.count > 4 ? arguments[4] : "") ?? 0))
            case "replay": await fleet.replay()
            default: exit(2)
            }
        }
        switch arguments[0] {
        case "freeze", "freeze-files":
            await freeze(
                base: arguments[1], directory: directory, count: Int(arguments.count > 3 ? arguments[3] : "") ?? 500,
                pace: .milliseconds(Int(arguments.count > 4 ? arguments[4] : "") ?? 0), files: arguments[0] == "freeze-files")
        case "replay": await replay(base: arguments[1], directory: directory)
        default: exit(2)
        }
    }

    /// `pace` spaces the operations out, so a test on a loaded machine can still kill the child mid-way.
    nonisolated static func freeze(base: String, directory: URL, count: Int, pace: Duration, files: Bool) async {
        let engine = NetworkEngine(baseURL: base, configuration: .init {
            $0.reachability = ManualReachability(.unreachable)
            $0.dataDirectory = directory
            $0.replaysOutbox = false
        }, queue: NetworkQueue())
        let prefix = files ? "files-" : "crash-"
        let done = Set(((try? Outbox(directory: directory))?.entries ?? []).map(\.idempotencyKey))
        for n in 0..<count where !done.contains("\(prefix)\(n)") {
            if pace > .zero { try? await Task.sleep(for: pace) }
            var body = RequestBody.text("payload \(n)")
            if files {
                guard let file = try? sourceFile(n, next: directory) else { exit(1) }
                var form = MultipartForm()
                form.addField("\(n)", name: "n")
                form.addFile(file, name: "file")
                body = .multipart(form)
            }
            let op = engine.operation(path: "anything/\(n)", method: .post, body: body)
            op.isFreezable = true
            op.setHeader("\(prefix)\(n)", forName: "Idempotency-Key")
            let events = op.events
            engine.enqueue(op)
            for await event in events {
                if case .frozen = event { break }
                if case .failure(let error) = event {
                    FileHandle.standardError.write(Data("not frozen: \(error)\n".utf8))
                    exit(1)
                }
            }
        }
        print("frozen all")
        exit(0)
    }

    /// `DATA_DIR-sources/N.bin`: 20,000 + 100 N bytes, `(i + N) % 251` (written if missing).
    static func sourceFile(_ n: Int, next directory: URL) throws -> URL {
        let folder = URL(fileURLWithPath: directory.standardizedFileURL.path + "-sources", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent("\(n).bin")
        if !FileManager.default.fileExists(atPath: file.path) {
            try Data((0..<(20_000 + 100 * n)).map { UInt8(($0 + n) % 251) }).write(to: file, options: .atomic)
        }
        return file
    }

    nonisolated static func replay(base: String, directory: URL) async {
        let engine = NetworkEngine(baseURL: base, configuration: .init {
            $0.reachability = ManualReachability(.reachable(via: .wired))
            $0.dataDirectory = directory
            $0.outboxRetry = OutboxRetry(initialDelay: .milliseconds(10), maximumDelay: .milliseconds(100), lease: .seconds(30))
        }, queue: NetworkQueue())
        guard let outbox = engine.outbox else { exit(1) }
        while !outbox.entries.filter({ $0.state == .pending }).isEmpty {
            try? await Task.sleep(for: .milliseconds(20))
        }
        withExtendedLifetime(engine) {}   // (the engine replays only while it lives)
        print("replayed all")
        exit(0)
    }
}
