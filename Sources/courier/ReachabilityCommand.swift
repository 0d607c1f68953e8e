import ArgumentParser
import Courier
import Foundation

/// `courier reachability HOST [--port N] [--probe] [--watch]`: whether a host can be reached, and over
/// what kind of link, as ``SystemReachability`` sees it.
struct ReachabilityCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reachability",
        abstract: "Print whether a host can be reached, and over what kind of link.",
        discussion: """
            Prints 'reachable via wifi|cellular|wired|other' or 'unreachable'. With --watch, prints the \
            status and then one line per change until interrupted.
            """)

    @Argument(help: "The host name or IP address.")
    var host: String

    @Option(help: ArgumentHelp("The TCP port that --probe connects to, 1 to 65535.", valueName: "port"),
            transform: { try OptionValue.integer($0, in: 1...65_535) })
    var port: Int?

    @Flag(help: "Confirm a reachable route with a TCP connection to the host and port.")
    var probe = false

    @Flag(help: "Keep running and print a line for each change.")
    var watch = false

    func validate() throws {
        if probe, port == nil { throw ValidationError("--probe needs --port") }
    }

    func run() async throws {
        let reachability = SystemReachability(host: host, port: port, probes: probe)
        guard watch else {
            Self.write(await reachability.settledStatus())
            return
        }
        for await status in reachability.statusUpdates() {
            Self.write(status)
        }
    }

    /// One line on standard output, written at once (not buffered), so a reader sees each change as it happens.
    private static func write(_ status: ReachabilityStatus) {
        StandardStream.standardOutput.line(status.description)
    }
}
