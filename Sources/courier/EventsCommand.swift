import ArgumentParser
import Courier
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// `courier events URL`: prints a server-sent event stream as its events arrive, reconnecting with
/// `Last-Event-ID` when the connection drops.
struct EventsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "events",
        abstract: "Print a server-sent event stream (text/event-stream) as its events arrive; reconnect when it drops.",
        discussion: """
            Each event is printed as a group of lines, as the stream format writes it (id, event, one data \
            line per line of data), followed by a blank line. The stream reconnects with Last-Event-ID when \
            the connection drops, after the server's retry: time. It ends (exit 0) when the server answers \
            204, or after --count events; an answer that is not an event stream exits 1 (4 or 5 for an \
            error status).
            """)

    @Argument(help: "The absolute http(s) URL of the stream.")
    var url: String

    @Option(name: .customShort("H"), help: ArgumentHelp("A request header, 'Name: value'. Repeatable.", valueName: "header"))
    var headers: [String] = []

    @Option(help: ArgumentHelp("Resume after this event id (sent as Last-Event-ID on the first connection).", valueName: "id"))
    var lastEventId: String?

    @Option(help: ArgumentHelp("Stop after this many events (1 to 1000000000).", valueName: "n"),
            transform: { try OptionValue.integer($0, in: 1...1_000_000_000) })
    var count: Int?

    @Option(help: ArgumentHelp("Reconnect when the server is silent this long, in seconds (default 60).", valueName: "seconds"),
            transform: { try OptionValue.seconds($0) })
    var idleTimeout: Duration?

    @Option(help: ArgumentHelp("Give up after this many failed attempts in a row (default: never).", valueName: "n"),
            transform: { try OptionValue.integer($0, in: 0...1_000_000) })
    var maxAttempts: Int?

    @OptionGroup var pipeline: PipelineOptions

    @OptionGroup var connection: ConnectionOptions

    func run() async throws {
        try await runEvents()
    }

    nonisolated func runEvents() async throws {
        try RequestOptions.checkURL(url)
        let fields = try RequestOptions.fields(RequestOptions.headerPairs(headers))
        let engine = try makeEngine()
        let options = ServerSentEvents.Options(maximumAttempts: maxAttempts, lastEventID: lastEventId, idleTimeout: idleTimeout)
        let stream = engine.events(url: PipelineOptions.withoutUserInfo(url), options: options) { operation in
            for field in fields { operation.setHeader(field.value, forName: field.name.rawName) }
        }
        var printed = 0
        var writeError: Int32?
        // A terminal shows the server's control characters, it does not obey them.
        let toTerminal = StandardStream.standardOutput.isTerminal
        do {
            for try await event in stream {
                let text = toTerminal ? TerminalText.sanitized(Self.text(of: event)) : Self.text(of: event)
                writeError = await OutputFile.onQueue { StandardStream.writeAll(Data(text.utf8), to: 1) }
                if writeError != nil { break }   // leaving the loop closes the stream
                printed += 1
                if let count, printed >= count { break }
            }
        } catch {
            await engine.configuration.cookieJar?.waitUntilPersisted()
            switch error.response?.statusCode ?? 0 {
            case 400..<500: throw CLIFailure(exitCode: 4, message: error.description)
            case 500..<600: throw CLIFailure(exitCode: 5, message: error.description)
            default: throw CLIFailure(exitCode: 1, message: error.description)
            }
        }
        await engine.configuration.cookieJar?.waitUntilPersisted()
        if let writeError {
            // The reader went away (`courier events URL | head`): quietly, with status 23, as every command.
            if writeError == EPIPE { throw CLIFailure(exitCode: StandardStream.brokenPipeStatus, message: "") }
            throw CLIFailure(exitCode: 1, message: "cannot write the standard output: \(String(cString: strerror(writeError)))")
        }
    }

    /// An event as the stream format writes it: `id:`, `event:` (when not "message"), a `data:` line per
    /// line of data, then a blank line.
    static func text(of event: ServerSentEvent) -> String {
        var text = ""
        if let id = event.id { text += "id: \(id)\n" }
        if event.event != "message" { text += "event: \(event.event)\n" }
        for line in event.data.split(separator: "\n", omittingEmptySubsequences: false) { text += "data: \(line)\n" }
        return text + "\n"
    }

    private func makeEngine() throws -> NetworkEngine {
        let configuration = try pipeline.configuration(for: url, connection: connection)
        return NetworkEngine(baseURL: PipelineOptions.withoutUserInfo(url), configuration: configuration, queue: NetworkQueue())
    }
}
