import Logging
import NIOConcurrencyHelpers

/// Captures log records for assertions.
final class LogRecorder: Sendable {
    struct Record: Sendable {
        var level: Logger.Level
        var message: String
        var metadata: [String: String]
    }

    private let records = NIOLockedValueBox<[Record]>([])
    /// Called with each record as it is logged, on the logging thread (a test acting at an exact point).
    private let onRecord: (@Sendable (Record) -> Void)?
    var all: [Record] { records.withLockedValue { $0 } }

    init(onRecord: (@Sendable (Record) -> Void)? = nil) {
        self.onRecord = onRecord
    }

    func append(_ record: Record) {
        records.withLockedValue { $0.append(record) }
        onRecord?(record)
    }

    /// A logger at `level` that records into this recorder.
    func logger(level: Logger.Level = .trace) -> Logger {
        var logger = Logger(label: "test") { _ in Handler(recorder: self) }
        logger.logLevel = level
        return logger
    }

    struct Handler: LogHandler {
        let recorder: LogRecorder
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            var merged = metadata
            for (key, value) in event.metadata ?? [:] { merged[key] = value }
            recorder.append(Record(
                level: event.level, message: event.message.description,
                metadata: merged.mapValues { "\($0)" }))
        }
    }
}
