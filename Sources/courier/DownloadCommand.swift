import ArgumentParser
import Courier
import Dispatch
import Foundation
import NIOConcurrencyHelpers

/// `courier download URL [-o FILE] [--continue]`: streams a body to a file with a progress bar.
struct DownloadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "download",
        abstract: "Download a URL to a file in constant memory, with progress; --continue resumes an interrupted download.")

    @Argument(help: "The absolute http(s) URL.")
    var url: String

    @Option(name: [.customShort("o"), .long], help: ArgumentHelp(
        "The file to write (default: the last segment of the URL's path, in the current folder). A file is replaced only "
            + "once the whole body is there; /dev/null, a named pipe and the like are written as the body arrives.",
        valueName: "file"))
    var output: String?

    @Flag(name: [.customShort("C"), .customLong("continue")], help: "Resume from the bytes an interrupted download left (Ctrl-C keeps them).")
    var resume = false

    @Option(name: .customShort("H"), help: ArgumentHelp("A request header, 'Name: value'. Repeatable.", valueName: "header"))
    var headers: [String] = []

    @Option(help: ArgumentHelp("A bandwidth limit in bytes per second, 1 to 1T (k, M, G suffixes allowed).", valueName: "rate"),
            transform: { try OptionValue.bytesPerSecond($0) })
    var limitRate: Int?

    @Option(help: ArgumentHelp("Give up when nothing arrives for this many seconds (0.001 to 2592000).", valueName: "seconds"),
            transform: { try OptionValue.seconds($0) })
    var timeout: Duration?

    @OptionGroup var pipeline: PipelineOptions

    @OptionGroup var connection: ConnectionOptions

    @Flag(name: [.customShort("v"), .long], help: "Print the request and response heads on standard error, credentials masked.")
    var verbose = false

    func run() async throws {
        try await download()
    }

    /// Where the body goes: `-o` (a regular file replaced once complete; a named pipe, a device and the
    /// like written in place, as `get -o` does), else a file of the current folder named after the URL's
    /// last path segment (``OptionValue/downloadFileName(percentEncodedPath:)``; a segment that would name
    /// anything else, `..%2F..%2Fx`, or an entry there that is not a regular file, such as a link pointing
    /// out of the folder, is a usage error and nothing is written).
    func destination() throws(CLIFailure) -> OutputFile {
        if let output { return OutputFile.at(output) }
        guard let components = URLComponents(string: url) else { throw CLIFailure.usage("'\(url)' is not an absolute http(s) URL") }
        let name: String
        do {
            name = try OptionValue.downloadFileName(percentEncodedPath: components.percentEncodedPath)
        } catch {
            throw CLIFailure.usage("\(error.description); give the file to write with -o")
        }
        guard let file = OutputFile.inCurrentFolder(name) else {
            throw CLIFailure.usage("'\(name)' in the current folder is not a regular file (a link, a pipe, a folder); give the file to write with -o")
        }
        return file
    }

    nonisolated func download() async throws {
        try RequestOptions.checkURL(url)
        let fields = try RequestOptions.fields(RequestOptions.headerPairs(headers))
        let target = try destination()
        if resume, case .inPlace(let path) = target { throw CLIFailure.usage("--continue needs a regular file to resume, not \(path)") }
        let verboseOutput = verbose ? VerboseOutput() : nil
        let engine = NetworkEngine(baseURL: PipelineOptions.withoutUserInfo(url), configuration: try pipeline.configuration(for: url, connection: connection).with {
            $0.dataDirectory = nil
            if let timeout { $0.timeouts.read = timeout }
            if let verboseOutput { $0.eventMonitors = verboseOutput.monitors() }
        }, queue: NetworkQueue())
        let operation = engine.operation(url: PipelineOptions.withoutUserInfo(url))
        for field in fields { operation.appendHeader(field.value, forName: field.name.rawName) }
        operation.maximumBytesPerSecond = limitRate
        // The same targets as `get -o`: a regular file through the resumable download machinery, anything
        // else (a named pipe, /dev/null) written in place, never replaced.
        var writer: InPlaceWriter?
        switch target {
        case .replaced(let file):
            operation.download(to: file, resumable: true)
            // Without --continue, what an earlier run kept goes, through the library's rule: never from
            // under another process that is writing it (that one holds its lock).
            if !resume { await DownloadResumeData.discard(for: file) }
        case .inPlace(let path):
            writer = InPlaceWriter(operation, to: path)
        }
        let bar = ProgressBar(toTerminal: StandardStream.standardError.isTerminal)
        operation.onDownloadProgress { bar.update($0) }
        // Ctrl-C stops the transfer and keeps what arrived, for --continue.
        signal(SIGINT, SIG_IGN)
        let interrupt = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        interrupt.setEventHandler { operation.cancelKeepingResumeData() }
        interrupt.resume()
        defer { interrupt.cancel() }
        let response: NetworkResponse
        do {
            response = try await engine.send(operation)
            await engine.configuration.cookieJar?.waitUntilPersisted()
            await verboseOutput?.waitUntilWritten(operation)
        } catch {
            await verboseOutput?.waitUntilWritten(operation)
            bar.finish()
            await engine.configuration.cookieJar?.waitUntilPersisted()
            // A body that could not be written cancelled the operation: that is what went wrong.
            if let failure = writer?.failure { throw failure }
            if error.code == .cancelled {
                await operation.waitForFiles()   // the bytes gathered so far, and the record that counts them
                // Only a file keeps what arrived; a pipe or a device has nothing to resume.
                throw CLIFailure(exitCode: 130, message: writer == nil ? "interrupted; run again with --continue to resume" : "interrupted")
            }
            if let answer = error.response, error.code == .unacceptableStatus {
                throw CLIFailure(exitCode: answer.statusCode >= 500 ? 5 : 4, message: "the server answered \(answer.statusCode) \(answer.status.reasonPhrase)")
            }
            throw CLIFailure(exitCode: 1, message: error.description)
        }
        await writer?.finish()
        bar.finish()
        if let failure = writer?.failure { throw failure }
        StandardStream.standardError.line("courier: saved \(response.fileURLs.first?.path ?? target.path)")
    }
}
