import ArgumentParser
import Courier
import Foundation

/// Options shared by `get` and `post`.
struct RequestOptions: ParsableArguments {
    @Argument(help: "The absolute http(s) URL.")
    var url: String

    @Option(name: .customShort("H"), help: ArgumentHelp("A request header, 'Name: value'. Repeatable.", valueName: "header"))
    var headers: [String] = []

    @Flag(name: [.customShort("i"), .long], help: "Print the status line and response headers before the body.")
    var include = false

    @Option(help: ArgumentHelp("Give up after this many seconds (0.001 to 2592000).", valueName: "seconds"), transform: { try OptionValue.seconds($0) })
    var timeout: Duration?

    @Flag(help: "Use the HTTP cache on disk; say on stderr whether the answer was a hit, a revalidation or a miss.")
    var cache = false

    @Option(help: ArgumentHelp("The cache directory (implies --cache; default: the platform cache directory).", valueName: "dir"))
    var cacheDir: String?

    @Flag(name: [.customShort("v"), .long], help: "Print the request and response heads on standard error, credentials masked.")
    var verbose = false

    @Flag(help: "Pretty-print JSON (and end text with a newline) even when standard output is not a terminal.")
    var pretty = false

    @Flag(help: "Write the body exactly as received even to a terminal (binary bodies are still not shown there).")
    var raw = false

    @Option(name: [.customShort("o"), .long], help: ArgumentHelp(
        "Write the body, as received, to this file: streamed in constant memory, whatever its size (held in memory with --cache). "
            + "A file is replaced only once the whole body is there; /dev/null, a named pipe and the like are written as the body arrives.",
        valueName: "file"))
    var output: String?

    @OptionGroup var pipeline: PipelineOptions

    @OptionGroup var connection: ConnectionOptions

    /// `--pretty`, `--raw` or neither.
    var format: ResponsePrinter.Format { pretty ? .pretty : raw ? .raw : .automatic }

    /// The headers as name/value pairs; a malformed one is a usage error.
    func parsedHeaders() throws(CLIFailure) -> [(String, String)] {
        try Self.parse(headers)
    }

    /// `Name: value` strings as name/value pairs; a malformed one is a usage error.
    static func headerPairs(_ headers: [String]) throws(CLIFailure) -> [(String, String)] {
        try parse(headers)
    }

    /// `Name: value` strings as name/value pairs; a malformed one is a usage error.
    static func parse(_ headers: [String]) throws(CLIFailure) -> [(String, String)] {
        var parsed: [(String, String)] = []
        for header in headers {
            guard let colon = header.firstIndex(of: ":"), colon != header.startIndex else {
                throw CLIFailure.usage("header '\(header)' is not 'Name: value'")
            }
            parsed.append((String(header[..<colon]), String(header[header.index(after: colon)...]).trimmingCharacters(in: .whitespaces)))
        }
        return parsed
    }

    /// Checks what can be checked before anything is sent; a problem is a usage error (exit 2).
    func checkUsage() throws(CLIFailure) {
        try Self.checkURL(url)
        if pretty && raw { throw CLIFailure.usage("use either --pretty or --raw, not both") }
        _ = try Self.fields(parsedHeaders())
    }

    /// An absolute http(s) URL with a host; anything else is a usage error (exit 2).
    static func checkURL(_ url: String) throws(CLIFailure) {
        guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(), scheme == "http" || scheme == "https",
            parsed.host?.isEmpty == false
        else { throw CLIFailure.usage("'\(url)' is not an absolute http(s) URL") }
    }

    /// Header fields from name/value pairs; an invalid name, or a value with a line break or another
    /// control character (a header injection), is a usage error.
    static func fields(_ headers: [(String, String)]) throws(CLIFailure) -> HTTPFields {
        var fields = HTTPFields()
        for (name, value) in headers {
            guard let fieldName = HTTPField.Name(name) else { throw CLIFailure.usage("'\(name)' is not a valid header name") }
            guard !value.unicodeScalars.contains(where: { ($0.value < 0x20 && $0 != "\t") || $0.value == 0x7F }) else {
                throw CLIFailure.usage("the value of header '\(name)' contains a line break or another control character")
            }
            fields.append(HTTPField(name: fieldName, value: value))
        }
        return fields
    }

    /// An engine for this one request: every status is a response (the exit code tells them apart).
    func makeEngine(_ adjust: (inout NetworkEngine.Configuration) -> Void = { _ in }) throws -> NetworkEngine {
        try checkUsage()
        let responseCache = (cache || cacheDir != nil) ? CacheCommand.openCache(cacheDir) : nil
        let configuration = try pipeline.configuration(for: url, connection: connection).with {
            $0.cache = responseCache
            $0.acceptableStatusCodes = Set(100..<600)
            if let timeout {
                $0.timeouts.total = timeout
                $0.timeouts.read = timeout
                $0.timeouts.connect = min(timeout, .seconds(10))
            }
            if verbose { $0.eventMonitors = VerboseOutput().monitors() }
            adjust(&$0)
        }
        return NetworkEngine(baseURL: PipelineOptions.withoutUserInfo(url), configuration: configuration, queue: NetworkQueue())
    }

    /// Whether `-o` streams the body to its file with the download machinery (constant memory, the
    /// in-memory limit does not apply). Not with the cache, which holds and stores bodies in memory.
    var streamsToFile: Bool { output != nil && !cache && cacheDir == nil }

    /// Whether the body goes to standard output as it arrives (NDJSON, a log tail, server-sent events):
    /// when standard output is a pipe or a file and the bytes are written as received. A terminal gets the
    /// whole body, formatted (JSON pretty-printed, binary replaced by a notice); so does `--pretty`, the
    /// cache (which holds bodies in memory), and a request that may be sent again (`--retry`, Digest):
    /// the answer it retries must not be printed.
    var streamsToStandardOutput: Bool {
        output == nil && !cache && cacheDir == nil && format != .pretty && !pipeline.maySendAgain
            && !StandardStream.standardOutput.isTerminal
    }

    /// Sends the operation, prints the answer, and turns the outcome into the exit status.
    func run(_ operation: NetworkOperation, on engine: NetworkEngine) async throws {
        let headers = try parsedHeaders()
        for (name, value) in headers { operation.setHeader(value, forName: name) }
        // A file is written beside itself under a temporary name and moved into place once the whole body
        // is there (every status is acceptable here, so an error page is saved too, as before); what cannot
        // be replaced (/dev/null, a named pipe) is written in place as the body arrives.
        var writer: InPlaceWriter?
        if streamsToFile, let output {
            switch OutputFile.at(output) {
            case .replaced(let file): operation.download(to: file)
            case .inPlace(let path): writer = InPlaceWriter(operation, to: path)
            }
        } else if streamsToStandardOutput, !operation.isFreezable {
            writer = InPlaceWriter(operation, to: InPlaceWriter.standardOutput, writesHead: include, isStandardOutput: true)
        }
        let streamsHead = writer != nil && output == nil
        let response: NetworkResponse
        // With --verbose, the heads are written (by the engine's monitors) before anything else is printed.
        let verbose = engine.configuration.eventMonitors.lazy.compactMap { $0 as? VerboseOutput }.first
        do {
            if operation.isFreezable {
                // Frozen is an answer of its own: print the entry's id and stop (the outbox replays it later).
                let events = operation.events
                engine.enqueue(operation)
                for await event in events {
                    if case .frozen(let entry) = event {
                        StandardStream.standardOutput.line("frozen \(entry.id)")
                        warnAboutUnkept(headers.map(\.0), sensitiveNames: engine.configuration.sensitiveHeaderNames)
                        return
                    }
                }
            }
            response = try await engine.send(operation)
            await verbose?.waitUntilWritten(operation)
        } catch {
            await verbose?.waitUntilWritten(operation)
            await engine.configuration.cookieJar?.waitUntilPersisted()
            // A body that could not be written cancelled the operation: that is what went wrong.
            if let failure = writer?.failure { throw failure }
            throw CLIFailure(exitCode: 1, message: error.description)
        }
        // Every byte written before anything is printed or the exit status chosen.
        await writer?.finish()
        if let failure = writer?.failure { throw failure }
        // The cache and the cookie jar write to disk on their own queues: the process must not exit before
        // they have.
        await engine.configuration.cache?.synchronize()
        await engine.configuration.cookieJar?.waitUntilPersisted()
        if !streamsHead {
            try ResponsePrinter.print(
                response, includeHead: include, format: format, bodyFile: output.map { URL(fileURLWithPath: $0) },
                isBodyWritten: writer != nil)
        }
        if let outcome = response.cacheOutcome {
            StandardStream.standardError.line("courier: cache \(outcome.rawValue)")
        }
        switch response.statusCode {
        case 400..<500: throw CLIFailure(exitCode: 4, message: "")
        case 500..<600: throw CLIFailure(exitCode: 5, message: "")
        default: return
        }
    }

    /// The outbox never keeps credentials: says on stderr which of the `-H` fields a frozen request lost
    /// and how to give them back when it is flushed.
    /// - Parameters:
    ///   - names: The names of the `-H` fields.
    ///   - sensitiveNames: The engine's ``NetworkEngine/Configuration/sensitiveHeaderNames``.
    func warnAboutUnkept(_ names: [String], sensitiveNames: Set<String>) {
        let unkept = Self.unkeptHeaderNames(names, sensitiveNames: sensitiveNames)
        guard !unkept.isEmpty else { return }
        let flags = unkept.map { "-H '\($0): ...'" }.joined(separator: " ")
        StandardStream.standardError.line(
            "courier: the outbox does not keep \(unkept.joined(separator: ", ")) (credentials are never written to disk); "
                + "give \(unkept.count == 1 ? "it" : "them") again when flushing: courier outbox flush \(flags)")
    }

    /// The names among `names` that the outbox does not keep, each once, in order.
    /// - Parameters:
    ///   - names: Header names as given on the command line.
    ///   - sensitiveNames: The engine's sensitive names; `Authorization`, `Proxy-Authorization` and `Cookie` always count.
    static func unkeptHeaderNames(_ names: [String], sensitiveNames: Set<String>) -> [String] {
        let sensitive = Set(sensitiveNames.map { $0.lowercased() }).union(["authorization", "proxy-authorization", "cookie"])
        var seen = Set<String>()
        return names.filter { sensitive.contains($0.lowercased()) && seen.insert($0.lowercased()).inserted }
    }
}
