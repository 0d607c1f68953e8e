import Courier
import Foundation
import Logging
import NIOConcurrencyHelpers

/// `-v/--verbose`: the request and response heads on standard error, curl style (`> ` sent, `< `
/// received, `* ` what Courier did), written by the library's ``LoggingEventMonitor`` so secrets are
/// masked as in `curlCommand`. Placed after the logging monitor, it also tells the command when an
/// operation's last event was written, so the heads come before the body.
final class VerboseOutput: EventMonitor {
    private let finished = NIOLockedValueBox<(done: Set<ObjectIdentifier>, waiters: [ObjectIdentifier: [CheckedContinuation<Void, Never>]])>(([], [:]))

    /// The monitors to give an engine: the logging monitor writing heads to stderr, then this one.
    func monitors() -> [any EventMonitor] {
        var logger = Logger(label: "courier.verbose") { _ in HeadPrinter() }
        logger.logLevel = .info
        return [LoggingEventMonitor(logger: logger, level: .info), self]
    }

    /// Returns once every event of `operation` was written (at once if it already was).
    func waitUntilWritten(_ operation: NetworkOperation) async {
        let id = ObjectIdentifier(operation)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let isDone = finished.withLockedValue { state in
                if state.done.contains(id) { return true }
                state.waiters[id, default: []].append(continuation)
                return false
            }
            if isDone { continuation.resume() }
        }
    }

    func operation(_ operation: NetworkOperation, didFinish result: Result<NetworkResponse, NetworkError>, metrics: OperationMetrics) {
        let id = ObjectIdentifier(operation)
        let waiters = finished.withLockedValue { state in
            state.done.insert(id)
            return state.waiters.removeValue(forKey: id) ?? []
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Turns the logging monitor's records into curl-style lines on standard error.
    struct HeadPrinter: LogHandler {
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .info

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let metadata = event.metadata ?? [:]
            func value(_ key: String) -> String { metadata[key].map { "\($0)" } ?? "" }
            var lines: [String] = []
            switch event.message.description {
            case "courier request":
                lines = ["> \(value("courier-method")) \(value("courier-url"))"] + Self.headers(metadata).map { "> " + $0 } + [">"]
            case "courier interim response", "courier response":
                lines = ["< \(value("courier-status")) \(value("courier-reason"))".trimmingCharacters(in: .whitespaces)]
                    + Self.headers(metadata).map { "< " + $0 } + ["<"]
            case "courier redirect":
                lines = ["* following the redirect to \(value("courier-url"))"]
            case "courier retry scheduled":
                lines = ["* attempt \(value("courier-attempt")) in \(value("courier-delay-ms")) ms after \(value("courier-error"))"]
            case "courier cache lookup":
                lines = ["* cache: \(value("courier-cache"))"]
            default:
                return
            }
            StandardStream.standardError.write(Data(lines.map { $0 + "\n" }.joined().utf8))
        }

        private static func headers(_ metadata: Logger.Metadata) -> [String] {
            guard case .array(let fields)? = metadata["courier-headers"] else { return [] }
            return fields.map { "\($0)" }
        }
    }
}
