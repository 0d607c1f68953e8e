import ArgumentParser
import Courier
import CourierTestServer
import Foundation

@main
struct CourierBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "courier-bench",
        abstract: "Courier against raw async-http-client, URLSession and curl, in interleaved rounds.",
        subcommands: [RunBenchmarks.self, Serve.self, DownloadAHC.self, DownloadCourier.self, UploadCourier.self, Profile.self, OutboxInstance.self],
        defaultSubcommand: RunBenchmarks.self)
}

struct RunBenchmarks: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "run", abstract: "Run the benchmark suite (the default).")

    @Flag(help: "Small counts and one round: checks that every scenario works (for CI).")
    var quick = false

    @Option(help: "Rounds per scenario (default 5, or 1 with --quick).")
    var rounds: Int?

    @Option(help: "Where to write the JSON report (default: results/latest.json next to Package.swift; for --quick a temp file).")
    var output: String?

    @Option(help: "Run only the scenarios whose name contains this text (e.g. 'download').")
    var only: String?

    func run() async throws {
        try await Suite(quick: quick, rounds: rounds ?? (quick ? 1 : 5), output: output, only: only).run()
    }
}

/// Hidden: runs CourierTestServer and prints its port; the benchmark's server process.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "serve", shouldDisplay: false)

    func run() async throws {
        try await Self.serve()
    }

    nonisolated static func serve() async throws {
        let server = try await TestServer.start()
        FileHandle.standardOutput.write(Data("PORT \(server.port)\n".utf8))
        while true { try await Task.sleep(for: .seconds(3600)) }
    }
}

/// Hidden: the child process of the raw async-http-client download contender.
struct DownloadAHC: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "download-ahc", shouldDisplay: false)
    @Argument var url: String
    @Argument var path: String

    func run() async throws {
        try await LargeDownload.downloadWithAHC(url: url, to: path)
    }
}

/// Hidden: the child process of the Courier download contender.
struct DownloadCourier: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "download-courier", shouldDisplay: false)
    @Argument var url: String
    @Argument var path: String

    func run() async throws {
        try await LargeDownload.downloadWithCourier(url: url, to: path)
    }
}

/// Hidden: the child process of the Courier upload contender.
struct UploadCourier: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "upload-courier", shouldDisplay: false)
    @Argument var url: String
    @Argument var path: String

    func run() async throws {
        try await LargeUpload.uploadWithCourier(url: url, file: path)
    }
}

/// Hidden: one small-GET contender alone, for profilers (`valgrind --tool=callgrind courier-bench profile courier`).
struct Profile: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "profile", shouldDisplay: false)
    @Argument(help: "ahc, ahctask (each request in a task of its own), callers (Courier, 6 callers), fake (Courier, 6 callers, over a transport that answers at once), courier (Courier, all enqueued) hit or diskhit (memory or disk cache hits of `--url`, which must be cacheable), store (distinct cacheable GETs of `--url?n=…` stored by a memory + disk cache)") var contender: String
    @Option var requests = 2_000
    @Option var url: String

    func run() async throws {
        try await Self.profile(contender: contender, requests: requests, url: url)
    }

    nonisolated static func profile(contender: String, requests: Int, url: String) async throws {
        let urls = (0..<requests).map { "\(url)?n=\($0)" }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-bench-profile-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let figures = switch contender {
        case "ahc": try await SmallGets.rawAHC(urls, inFlight: 6)
        case "ahcdelegate": try await SmallGets.rawAHC(urls, inFlight: 6, futureBased: true)
        case "ahctask": try await SmallGets.rawAHC(urls, inFlight: 6, inATask: true)
        case "waiting": QueueScale.waitingBytes(url: url, count: requests)
        case "callers": try await SmallGets.courierCallers(urls, inFlight: 6)
        case "fake": try await SmallGets.courierCallers(urls, inFlight: 6, transport: NginxLikeTransport())
        case "hit": try await CacheHits.run(url: url, count: requests, cache: ResponseCache(directory: nil))
        case "diskhit": try await CacheHits.run(url: url, count: requests, cache: ResponseCache(memoryCapacity: 0, directory: directory))
        case "store":
            try await CacheStore.run(
                base: url, requests: requests, callers: 6, cache: ResponseCache(memoryCapacity: 8 << 20, diskCapacity: 8 << 20, directory: directory))
        default: try await SmallGets.courier(urls, inFlight: 6)
        }
        print(figures)
    }
}
