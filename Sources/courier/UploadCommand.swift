import ArgumentParser
import Courier
import Foundation

/// `courier upload URL FILE`: sends a file as the body of a PUT (or POST), streamed, with progress.
struct UploadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "upload",
        abstract: "Send a file as a request body (PUT by default), streamed in constant memory, with progress.")

    @Argument(help: "The absolute http(s) URL.")
    var url: String

    @Argument(help: "The file to send.")
    var file: String

    @Flag(help: "Send with POST instead of PUT.")
    var post = false

    @Option(name: .customShort("H"), help: ArgumentHelp("A request header, 'Name: value'. Repeatable.", valueName: "header"))
    var headers: [String] = []

    @Option(help: ArgumentHelp("A bandwidth limit in bytes per second, 1 to 1T (k, M, G suffixes allowed).", valueName: "rate"),
            transform: { try OptionValue.bytesPerSecond($0) })
    var limitRate: Int?

    @OptionGroup var pipeline: PipelineOptions

    @OptionGroup var connection: ConnectionOptions

    func run() async throws {
        try await upload()
    }

    nonisolated func upload() async throws {
        try RequestOptions.checkURL(url)
        guard FileManager.default.isReadableFile(atPath: file) else { throw CLIFailure.usage("cannot read '\(file)'") }
        let fields = try RequestOptions.fields(RequestOptions.headerPairs(headers))
        let engine = NetworkEngine(baseURL: PipelineOptions.withoutUserInfo(url), configuration: try pipeline.configuration(for: url, connection: connection).with {
            $0.dataDirectory = nil
            $0.acceptableStatusCodes = Set(100..<600)
        }, queue: NetworkQueue())
        let operation = engine.operation(url: PipelineOptions.withoutUserInfo(url), method: post ? .post : .put, body: .file(URL(fileURLWithPath: file)))
        for field in fields { operation.appendHeader(field.value, forName: field.name.rawName) }
        operation.maximumBytesPerSecond = limitRate
        let bar = ProgressBar(toTerminal: StandardStream.standardError.isTerminal)
        operation.onUploadProgress { bar.update($0) }
        let response: NetworkResponse
        do {
            response = try await engine.send(operation)
            await engine.configuration.cookieJar?.waitUntilPersisted()
        } catch {
            bar.finish()
            await engine.configuration.cookieJar?.waitUntilPersisted()
            throw CLIFailure(exitCode: 1, message: error.description)
        }
        bar.finish()
        try ResponsePrinter.print(response, includeHead: false, format: .automatic, bodyFile: nil)
        switch response.statusCode {
        case 400..<500: throw CLIFailure(exitCode: 4, message: "")
        case 500..<600: throw CLIFailure(exitCode: 5, message: "")
        default: return
        }
    }
}
