import ArgumentParser
import Foundation

/// `courier`: an httpie-like client on Courier, and a demo of the shared queue.
struct CourierCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "courier",
        abstract: "An HTTP client built on Courier, and a tour of its shared queue.",
        discussion: """
            Exit codes: 0 for a 1xx-3xx answer, 4 for 4xx, 5 for 5xx, 1 for network and other errors, \
            2 for bad usage (an invalid URL, header or option), 23 when the reader of the output has gone \
            (a closed pipe, as with 'courier get URL | head').
            """,
        version: "courier 0.1.0",
        subcommands: [GetCommand.self, PostCommand.self, EventsCommand.self, DownloadCommand.self, UploadCommand.self, ImageCommand.self, CacheCommand.self, OutboxCommand.self, ReachabilityCommand.self, DemoCommand.self]
    )
}

/// A failure that ends the program with a message and an exit code.
struct CLIFailure: Error {
    var exitCode: Int32
    var message: String

    static func usage(_ message: String) -> CLIFailure { CLIFailure(exitCode: 2, message: message) }
}

@main
enum Main {
    static func main() async {
        StandardStream.ignoreBrokenPipeSignal()
        let status = await run(Array(CommandLine.arguments.dropFirst()))
        exit(status)
    }

    /// Parses and runs a command line; returns the exit status. Errors are one line on stderr.
    nonisolated static func run(_ arguments: [String]) async -> Int32 {
        do {
            var command = try CourierCommand.parseAsRoot(arguments)
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            return 0
        } catch let failure as CLIFailure {
            if !failure.message.isEmpty { printError(failure.message) }
            return failure.exitCode
        } catch let exit as ExitCode {
            return exit.rawValue
        } catch {
            if CourierCommand.exitCode(for: error) == .success {
                StandardStream.standardOutput.line(CourierCommand.fullMessage(for: error))
                return 0
            }
            let message = CourierCommand.message(for: error).split(separator: "\n").first.map(String.init) ?? "invalid usage"
            printError("\(message) (see 'courier --help')")
            return 2
        }
    }

    static func printError(_ message: String) {
        let line = "courier: error: " + message.replacingOccurrences(of: "\n", with: " ") + "\n"
        StandardStream.standardError.write(line)
    }
}
