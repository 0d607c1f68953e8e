import CourierTestServer
import Foundation

/// The whole suite: starts the servers, runs every scenario, prints the tables, writes the JSON.
struct Suite {
    var quick: Bool
    var rounds: Int
    var output: String?
    var only: String?

    struct Report: Codable {
        var date: String
        var commit: String
        var mode: String
        var rounds: Int
        var machine: Machine.Description
        var scenarios: [ScenarioReport]
    }

    nonisolated func run() async throws {
        let packageDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        log("courier-bench: \(quick ? "quick" : "full") run, \(rounds) round(s) per scenario")
        let testServerProcess = try ServerProcess.courierTestServer()
        let nginx = try ServerProcess.nginx()
        let inProcess = try await TestServer.start()
        defer {
            testServerProcess.stop()
            nginx?.stop()
        }
        let fastServer = nginx ?? testServerProcess
        // Written on first use (only when an image scenario runs), removed at the end.
        let imageCorpus = Lazy { try Images.Corpus.make(jpegs: 4, pngs: 4) }
        defer { if let corpus = try? imageCorpus.getIfMade() { try? FileManager.default.removeItem(at: corpus.directory) } }
        if nginx == nil { log("nginx is not installed: small GETs go to CourierTestServer (apt-get install nginx for a faster server)") }

        let scenarios = [
            SmallGets.scenario(server: fastServer, requests: quick ? 600 : 20_000, inFlight: 6),
            Coalescing.scenario(server: inProcess, count: quick ? 100 : 1_000),
            QueueScale.scenario(server: fastServer, count: quick ? 2_000 : 100_000),
            LargeDownload.scenario(server: testServerProcess, bytes: quick ? 64 << 20 : 1 << 30, courierTestServerURL: testServerProcess.baseURL),
            LargeUpload.scenario(bytes: quick ? 64 << 20 : 1 << 30, courierTestServerURL: testServerProcess.baseURL),
            CacheHits.scenario(server: testServerProcess, count: quick ? 200 : 5_000),
            CacheStore.scenario(server: testServerProcess, requests: quick ? 300 : CacheStore.requestCount(default: 5_000), callers: 6),
            Latency.scenario(server: fastServer, requests: quick ? 300 : 10_000, callers: 1),
            Latency.scenario(server: fastServer, requests: quick ? 600 : 20_000, callers: 6),
            Soak.scenario(server: fastServer, segments: quick ? 4 : 8, perSegment: quick ? 500 : 10_000, warmup: quick ? 2 : 3, inFlight: 6),
            Freezing.scenario(count: quick ? 50 : 500),
            Fleet.freezeScenario(count: quick ? 100 : 2_000),
            Fleet.replayScenario(rows: quick ? 300 : 10_000, origin: inProcess),
            Images.thumbnailScenario(corpus: imageCorpus.get, size: 256),
            Images.cacheScenario(server: inProcess, corpus: imageCorpus.get, count: quick ? 1_000 : 100_000),
        ]
        var reports: [ScenarioReport] = []
        for scenario in scenarios where only.map({ scenario.name.localizedCaseInsensitiveContains($0) }) ?? true {
            log("\(scenario.name)...")
            let report = try await scenario.run(rounds: rounds) { log($0) }
            reports.append(report)
            print(Table.render(report))
        }
        try await inProcess.shutdown()
        await Fleet.cluster.stop()

        let report = Report(
            date: ISO8601DateFormatter().string(from: Date()), commit: Machine.commit(in: packageDirectory),
            mode: quick ? "quick" : "full", rounds: rounds, machine: Machine.description, scenarios: reports)
        let destination = output.map { URL(fileURLWithPath: $0) }
            ?? (quick || only != nil ? FileManager.default.temporaryDirectory.appendingPathComponent("courier-bench-partial.json")
                : packageDirectory.appendingPathComponent("results/latest.json"))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try FileManager.default.createDirectory(at: destination.deletingLastPathComponent(), withIntermediateDirectories: true)
        try encoder.encode(report).write(to: destination)
        print("\nJSON report: \(destination.path)")
    }

    func log(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }
}
