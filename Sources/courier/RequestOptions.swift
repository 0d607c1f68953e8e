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

    @Option(help: ArgumentHelp("Give up after this many seconds.", valueName: "seconds"))
    var timeout: Double?

    @Flag(help: "Use the HTTP cache on disk; say on stderr whether the answer was a hit, a revalidation or a miss.")
    var cache = false

    @Option(help: ArgumentHelp("The cache directory (implies --cache; default: the platform cache directory).", valueName: "dir"))
    var cacheDir: String?

    /// The headers as name/value pairs; a malformed one is a usage error.
    func parsedHeaders() throws -> [(String, String)] {
        try headers.map { header in
            guard let colon = header.firstIndex(of: ":"), colon != header.startIndex else {
                throw CLIFailure.usage("header '\(header)' is not 'Name: value'")
            }
            return (String(header[..<colon]), String(header[header.index(after: colon)...]).trimmingCharacters(in: .whitespaces))
        }
    }

    /// An engine for this one request: every status is a response (the exit code tells them apart).
    func makeEngine(_ adjust: (inout NetworkEngine.Configuration) -> Void = { _ in }) throws -> NetworkEngine {
        if let timeout, !(timeout > 0 && timeout.isFinite) {
            throw CLIFailure.usage("--timeout must be a positive number of seconds")
        }
        let responseCache = (cache || cacheDir != nil) ? CacheCommand.openCache(cacheDir) : nil
        let configuration = NetworkEngine.Configuration {
            $0.cache = responseCache
            $0.acceptableStatusCodes = Set(100..<600)
            if let timeout {
                $0.timeouts.total = .milliseconds(Int64(timeout * 1000))
                $0.timeouts.read = .milliseconds(Int64(timeout * 1000))
                $0.timeouts.connect = .milliseconds(Int64(min(timeout, 10) * 1000))
            }
            adjust(&$0)
        }
        return NetworkEngine(baseURL: url, configuration: configuration, queue: NetworkQueue())
    }

    /// Sends the operation, prints the answer, and turns the outcome into the exit status.
    func run(_ operation: NetworkOperation, on engine: NetworkEngine) async throws {
        for (name, value) in try parsedHeaders() { operation.setHeader(value, forName: name) }
        let response: NetworkResponse
        do {
            if operation.isFreezable {
                // Frozen is an answer of its own: print the entry's id and stop (the outbox replays it later).
                let events = operation.events
                engine.enqueue(operation)
                for await event in events {
                    if case .frozen(let entry) = event {
                        print("frozen \(entry.id)")
                        return
                    }
                }
            }
            response = try await engine.send(operation)
        } catch {
            throw CLIFailure(exitCode: 1, message: error.description)
        }
        // The cache writes to disk on its own queue: the process must not exit before it has.
        await engine.configuration.cache?.synchronize()
        ResponsePrinter.print(response, includeHead: include)
        if let outcome = response.cacheOutcome {
            FileHandle.standardError.write(Data("courier: cache \(outcome.rawValue)\n".utf8))
        }
        switch response.statusCode {
        case 400..<500: throw CLIFailure(exitCode: 4, message: "")
        case 500..<600: throw CLIFailure(exitCode: 5, message: "")
        default: return
        }
    }
}
