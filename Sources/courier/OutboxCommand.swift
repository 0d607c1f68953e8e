import ArgumentParser
import Courier
import Foundation

/// `courier outbox list|flush|drop|clear`: the requests `post --freezable` froze.
struct OutboxCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "outbox",
        abstract: "Look at, send or remove the requests frozen by 'courier post --freezable'.",
        subcommands: [List.self, Flush.self, Drop.self, Clear.self])

    /// The outbox pipeline name of `post --freezable` (``NetworkEngine/Configuration/outboxName``), whatever
    /// options it was given; `outbox flush` replays every pipeline's requests of the origins it flushes.
    static let pipelineName = "courier"

    /// `--data-dir DIR`, or `--database postgres://…`: where the outbox is, shared by `post` and the subcommands.
    struct DataDirectoryOption: ParsableArguments {
        @Option(help: ArgumentHelp("The data directory holding the outbox (default: the platform data directory).", valueName: "dir"))
        var dataDir: String?

        @Option(help: ArgumentHelp(
            "A PostgreSQL outbox instead, shared by many instances: postgres://user@host:port/database. The password comes from PGPASSWORD or --password-file, never from the URL.",
            valueName: "url"))
        var database: String?

        @Option(help: ArgumentHelp("A file holding the PostgreSQL password (its first line).", valueName: "file"))
        var passwordFile: String?

        @Option(help: ArgumentHelp("The PostgreSQL outbox's name (its table is courier_outbox_<name>).", valueName: "name"))
        var outboxName: String = "courier"

        var url: URL { dataDir.map { URL(fileURLWithPath: $0, isDirectory: true) } ?? Outbox.defaultDirectory }

        /// Where the outbox is; a PostgreSQL client is made and run for the rest of the process.
        func location() async throws -> OutboxLocation {
            guard let database else { return .sqlite(directory: url) }
            do {
                return try await PostgresOutboxOption.location(url: database, passwordFile: passwordFile, name: outboxName)
            } catch let failure as CLIFailure {
                throw failure
            } catch {
                throw CLIFailure(exitCode: 1, message: "\(error)")
            }
        }

        func open() async throws -> Outbox {
            try await Self.open(try await location())
        }

        static func open(_ location: OutboxLocation) async throws -> Outbox {
            do {
                return try await Outbox.open(location)
            } catch {
                throw CLIFailure(exitCode: 1, message: error.description)
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "Print each frozen request: id, method, URL, attempts, age, state.")
        @OptionGroup var options: DataDirectoryOption

        func run() async throws {
            let outbox = try await options.open()
            for report in outbox.damageReports { print("warning: \(report.message)") }
            for file in outbox.setAsideDatabases { print("a damaged outbox was set aside: \(file.path)") }
            let entries = try await OutboxCommand.entries(of: outbox)
            if entries.isEmpty {
                print("the outbox is empty")
                return
            }
            print(["ID", "METHOD", "URL", "ATTEMPTS", "AGE", "STATE"].joined(separator: "\t"))
            for entry in entries {
                print([entry.id, entry.method.rawValue, entry.url.absoluteString, "\(entry.attempts)",
                       OutboxCommand.age(since: entry.createdAt), OutboxCommand.describe(entry)].joined(separator: "\t"))
            }
        }
    }

    struct Flush: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "flush", abstract: "Send now, in order, what can be sent; print each outcome. Exit 1 if anything is left pending.",
            discussion: """
                The outbox never keeps credentials (Authorization, Cookie, X-API-Key...): give them again with -H; \
                each -H field is added to every request this flush sends.
                """)
        @OptionGroup var options: DataDirectoryOption

        @Option(name: .customShort("H"), help: ArgumentHelp("A header added to every request sent, 'Name: value'. Repeatable.", valueName: "header"))
        var headers: [String] = []

        func run() async throws {
            try await flush()
        }

        nonisolated func flush() async throws {
            let fields = try RequestOptions.fields(RequestOptions.parse(headers))
            let location = try await options.location()
            let outbox = try await DataDirectoryOption.open(location)
            let origins = Set(try await OutboxCommand.entries(of: outbox).filter { $0.state == .pending }.map { OutboxCommand.origin(of: $0.url) })
            for origin in origins.sorted() {
                let engine = NetworkEngine(baseURL: origin, configuration: .init {
                    $0.outbox = location
                    $0.replaysOutbox = false
                    // An operator's flush, given the credentials (-H): every frozen request of the origin,
                    // whichever engine or tool froze it.
                    $0.replaysEveryPipeline = true
                    $0.timeouts.connect = .seconds(5)
                    $0.timeouts.read = .seconds(30)
                    // A replay gets these just before it goes out, replacing fields of the same name; as a
                    // credential provider's fields they count as sensitive (masked, never written to the outbox).
                    if !fields.isEmpty { $0.credentialProvider = { _ in fields } }
                }, queue: NetworkQueue())
                for event in await engine.flushOutbox() { StandardStream.standardOutput.line(OutboxCommand.describe(event)) }
            }
            let left = try await OutboxCommand.entries(of: outbox).filter { $0.state == .pending }.count
            if left > 0 { throw CLIFailure(exitCode: 1, message: "\(left) frozen request(s) still pending") }
        }
    }

    struct Drop: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "drop", abstract: "Remove one frozen request; it will not be sent.")
        @OptionGroup var options: DataDirectoryOption
        @Argument(help: "The id, as 'courier outbox list' prints it.") var id: String

        func run() async throws {
            guard try await options.open().drop(id) else {
                throw CLIFailure(exitCode: 1, message: "no frozen request with id \(id) (or another instance is sending it now)")
            }
            print("dropped \(id)")
        }
    }

    struct Clear: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "clear", abstract: "Remove every frozen request.")
        @OptionGroup var options: DataDirectoryOption

        func run() async throws {
            print("cleared \(try await options.open().clear()) frozen request(s)")
        }
    }

    /// The outbox's entries, or the reason they cannot be read (never an empty list for a server that is down).
    static func entries(of outbox: Outbox) async throws -> [OutboxEntry] {
        do {
            return try await outbox.readEntries()
        } catch {
            throw CLIFailure(exitCode: 1, message: error.description)
        }
    }

    static func origin(of url: URL) -> String {
        let scheme = url.scheme ?? "http"
        return "\(scheme)://\(url.host ?? "")" + (url.port.map { ":\($0)" } ?? "")
    }

    static func age(since date: Date) -> String {
        let seconds = wholeSeconds(Date().timeIntervalSince(date))
        switch seconds {
        case ..<60: return "\(seconds)s"
        case ..<3600: return "\(seconds / 60)m"
        case ..<86400: return "\(seconds / 3600)h"
        default: return "\(seconds / 86400)d"
        }
    }

    /// An interval in whole seconds, at least 0: a date read from a damaged outbox may be NaN or centuries
    /// away, and `Int(x)` traps on such a `Double` (`Int(exactly:)` does not).
    static func wholeSeconds(_ interval: TimeInterval) -> Int {
        guard interval > 0 else { return 0 }
        return Int(exactly: interval.rounded(.down)) ?? .max
    }

    static func describe(_ entry: OutboxEntry) -> String {
        switch entry.state {
        case .pending: entry.lastStatus.map { "pending (last answer \($0))" } ?? (entry.lastError != nil ? "pending (no answer yet)" : "pending")
        case .deadLettered(let reason): "dead (\(reason.rawValue))"
        case .delivered: "delivered"
        case .failedPermanently: "failed"
        }
    }

    static func describe(_ event: OutboxEvent) -> String {
        switch event {
        case .frozen(let entry): "frozen \(entry.id)"
        case .delivered(let entry, let response): "delivered \(entry.id) \(response.statusCode) \(entry.method) \(entry.url)"
        case .failedPermanently(let entry, let response): "failed \(entry.id) \(response.statusCode) \(entry.method) \(entry.url)"
        case .retryScheduled(let entry):
            "retry \(entry.id) \(entry.lastStatus.map(String.init) ?? "no answer") (next attempt in \(wholeSeconds(entry.nextAttemptAt.timeIntervalSinceNow.rounded()))s)"
        case .deadLettered(let entry): "dead \(entry.id) \(describe(entry))"
        }
    }
}
