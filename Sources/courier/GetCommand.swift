import ArgumentParser
import Courier

/// `courier get URL`: prints the response body.
struct GetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Send a GET request and print the response body (JSON pretty-printed at a terminal or with --pretty).")

    @OptionGroup var options: RequestOptions

    func run() async throws {
        try await runGet()
    }

    nonisolated func runGet() async throws {
        let engine = try options.makeEngine()
        try await options.run(engine.operation(url: PipelineOptions.withoutUserInfo(options.url)), on: engine)
    }
}
