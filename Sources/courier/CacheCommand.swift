import ArgumentParser
import Courier
import Foundation

/// `courier cache stats|clear`: the on-disk HTTP cache that `get --cache` uses.
struct CacheCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cache",
        abstract: "Inspect or clear the HTTP cache that 'courier get --cache' uses.",
        subcommands: [Stats.self, Clear.self])

    /// The cache in `directory`, or in the platform's cache directory.
    static func openCache(_ directory: String?) -> ResponseCache {
        ResponseCache(directory: directory.map { URL(fileURLWithPath: $0, isDirectory: true) } ?? ResponseCache.defaultDirectory)
    }

    /// `--cache-dir DIR`, shared by the subcommands.
    struct DirectoryOption: ParsableArguments {
        @Option(help: ArgumentHelp("The cache directory (default: the platform cache directory).", valueName: "dir"))
        var cacheDir: String?
    }

    struct Stats: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "stats", abstract: "Print what the cache holds.")
        @OptionGroup var options: DirectoryOption

        func run() throws {
            let cache = CacheCommand.openCache(options.cacheDir)
            let statistics = cache.statistics
            StandardStream.standardOutput.line("directory: \(cache.directory?.path ?? "-")")
            StandardStream.standardOutput.line("responses: \(statistics.diskEntries)")
            StandardStream.standardOutput.line("bytes: \(statistics.diskBytes)")
        }
    }

    struct Clear: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "clear", abstract: "Remove every stored response.")
        @OptionGroup var options: DirectoryOption

        func run() throws {
            let cache = CacheCommand.openCache(options.cacheDir)
            cache.removeAll()
            StandardStream.standardOutput.line("cleared \(cache.directory?.path ?? "-")")
        }
    }
}
