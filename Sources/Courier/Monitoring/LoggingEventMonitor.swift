public import Foundation
public import HTTPTypes
public import Logging

/// An ``EventMonitor`` that logs every event of an engine's operations through swift-log, with every
/// secret masked as ``NetworkOperation/curlCommand`` masks it.
///
/// ```swift
/// var logger = Logger(label: "api")
/// logger.logLevel = .debug
/// let configuration = NetworkEngine.Configuration { $0.eventMonitors = [LoggingEventMonitor(logger: logger)] }
/// ```
///
/// Messages are fixed (`courier request`, `courier response`, `courier finished`, ...) and the data is in
/// metadata keys prefixed `courier-`: the operation (`courier-operation-id`), the method and URL, the
/// header fields as `name: value` lines (`courier-headers`), the status, the timings in milliseconds.
/// Request and response heads and the other events are logged at ``level`` (`debug` by default); body
/// progress at `trace`.
///
/// Nothing secret is written: `Authorization` and `Proxy-Authorization` keep only their scheme
/// (`Bearer ***`), `Cookie` and `Set-Cookie` only the cookie names, every other
/// ``NetworkEngine/Configuration/sensitiveHeaderNames`` field and the credential provider's fields show
/// `***`, and so do the values of the query items named in
/// ``NetworkEngine/Configuration/sensitiveParameterNames`` and a password in the URL. Bodies are never
/// logged; errors are logged by their code only (a message may quote what the server said).
public struct LoggingEventMonitor: EventMonitor {
    /// Where the events go.
    public var logger: Logger
    /// The level of every event but body progress (which is `trace`).
    public var level: Logger.Level

    /// Creates a monitor.
    /// - Parameters:
    ///   - logger: Where the events go; they are written when its level lets `level` through.
    ///   - level: The level of the request and response heads and the other events; `debug` by default.
    public init(logger: Logger, level: Logger.Level = .debug) {
        self.logger = logger
        self.level = level
    }

    /// Logs `courier enqueued`.
    public func operationDidEnqueue(_ operation: NetworkOperation) {
        log("courier enqueued", operation, [
            "courier-method": "\(operation.method.rawValue)", "courier-url": "\(Self.maskedURL(operation.urlString, for: operation))",
        ])
    }

    /// Logs `courier cache lookup` with `courier-cache`.
    public func operation(_ operation: NetworkOperation, didLookUpCache result: CacheLookupResult) {
        log("courier cache lookup", operation, ["courier-cache": "\(result.rawValue)"])
    }

    /// Logs `courier request`: the method, URL and header fields as sent, secrets masked.
    public func operation(_ operation: NetworkOperation, didStartRequest request: HTTPRequest) {
        let url = request.url.map { Self.maskedURL($0.absoluteString, for: operation) } ?? "<no URL>"
        log("courier request", operation, [
            "courier-method": "\(request.method.rawValue)", "courier-url": "\(url)",
            "courier-headers": Self.masked(request.headerFields, for: operation, url: request.url),
        ])
    }

    /// Logs `courier interim response` with its status and header fields.
    public func operation(_ operation: NetworkOperation, didReceiveInterimResponse response: InformationalResponse) {
        log("courier interim response", operation, [
            "courier-status": "\(response.status.code)", "courier-headers": Self.masked(response.headers, for: operation),
        ])
    }

    /// Logs `courier response`: the status and header fields, secrets (`Set-Cookie` values) masked.
    public func operation(_ operation: NetworkOperation, didReceiveResponseHead response: HTTPResponse) {
        log("courier response", operation, [
            "courier-status": "\(response.status.code)", "courier-reason": "\(response.status.reasonPhrase)",
            "courier-headers": Self.masked(response.headerFields, for: operation),
        ])
    }

    /// Logs `courier upload progress` at `trace`.
    public func operation(_ operation: NetworkOperation, didSendBody progress: TransferProgress) {
        log("courier upload progress", operation, Self.metadata(progress), level: .trace)
    }

    /// Logs `courier download progress` at `trace`.
    public func operation(_ operation: NetworkOperation, didReceiveBody progress: TransferProgress) {
        log("courier download progress", operation, Self.metadata(progress), level: .trace)
    }

    /// Logs `courier redirect` with the next URL.
    public func operation(_ operation: NetworkOperation, willFollowRedirectTo url: URL) {
        log("courier redirect", operation, ["courier-url": "\(Self.maskedURL(url.absoluteString, for: operation))"])
    }

    /// Logs `courier retry scheduled` with the attempt, the delay and the failure's code.
    public func operation(_ operation: NetworkOperation, willRetry attempt: Int, after delay: Duration, failure: NetworkError) {
        var metadata: Logger.Metadata = [
            "courier-attempt": "\(attempt)", "courier-delay-ms": "\(Self.milliseconds(delay))", "courier-error": "\(failure.code)",
        ]
        if let status = failure.response?.statusCode { metadata["courier-status"] = "\(status)" }
        log("courier retry scheduled", operation, metadata)
    }

    /// Logs `courier frozen` with the outbox row.
    public func operation(_ operation: NetworkOperation, didFreeze entry: OutboxEntry) {
        log("courier frozen", operation, ["courier-outbox-id": "\(entry.id)"])
    }

    /// Logs `courier replaying` with the outbox row.
    public func operation(_ operation: NetworkOperation, willReplay entry: OutboxEntry) {
        log("courier replaying", operation, [
            "courier-outbox-id": "\(entry.id)", "courier-method": "\(operation.method.rawValue)",
            "courier-url": "\(Self.maskedURL(operation.urlString, for: operation))",
        ])
    }

    /// Logs `courier finished` with the status (or the error's code) and the timings in milliseconds.
    public func operation(
        _ operation: NetworkOperation, didFinish result: Result<NetworkResponse, NetworkError>, metrics: OperationMetrics
    ) {
        var metadata: Logger.Metadata = [
            "courier-total-ms": "\(Self.milliseconds(metrics.totalDuration))", "courier-attempts": "\(metrics.attempts)",
        ]
        if let queued = metrics.queuedDuration { metadata["courier-queued-ms"] = "\(Self.milliseconds(queued))" }
        if let ttfb = metrics.timeToFirstByte { metadata["courier-ttfb-ms"] = "\(Self.milliseconds(ttfb))" }
        switch result {
        case .success(let response):
            metadata["courier-status"] = "\(response.statusCode)"
            if let outcome = response.cacheOutcome { metadata["courier-cache"] = "\(outcome.rawValue)" }
        case .failure(let error):
            metadata["courier-error"] = "\(error.code)"
            if let status = error.response?.statusCode { metadata["courier-status"] = "\(status)" }
        }
        log("courier finished", operation, metadata)
    }

    // MARK: Masking

    /// Header fields as `name: value` lines, credentials masked as in ``NetworkOperation/curlCommand``.
    /// - Parameter url: The URL the fields were sent to or came from (the operation's own by default): the
    ///   interceptors declare their credentials per URL (``RequestInterceptor/cacheCredentials(for:)``).
    static func masked(_ fields: HTTPFields, for operation: NetworkOperation, url: URL? = nil) -> Logger.MetadataValue {
        // The names curlCommand masks: the engine's and the credential provider's fields (asked now), and
        // the fields the interceptors declare as theirs, from the first request on.
        var sensitive = operation.sensitiveNames.union(operation.context.sensitiveNames(with: operation.currentCredentials()))
        if let url = url ?? operation.requestURL {
            sensitive.formUnion(operation.interceptorCacheCredentials(for: url).map(\.name.canonicalName))
        }
        return .array(fields.http1Fields.map { field in
            // Fields that carry a URL (a redirect's Location) mask it as a URL is masked: a token in a query.
            if Self.urlFields.contains(field.name.lowercased()) {
                return .string("\(field.name): \(maskedURL(field.value, for: operation))")
            }
            return .string("\(field.name): \(NetworkOperation.masked(name: field.name, value: field.value, sensitive: sensitive))")
        })
    }

    /// Header fields whose value is a URL.
    static let urlFields: Set<String> = ["location", "content-location", "referer"]

    /// A URL with its sensitive query items masked as in ``NetworkOperation/curlCommand``, and a password
    /// in its user info too.
    static func maskedURL(_ url: String, for operation: NetworkOperation) -> String {
        SensitiveParameters.masked(url: url, names: operation.context.configuration.sensitiveParameterNames)
    }

    // MARK: Writing

    /// Builds the metadata (which masks fields and asks the credential provider) only when the logger
    /// keeps records of this level.
    private func log(
        _ message: Logger.Message, _ operation: NetworkOperation, _ metadata: @autoclosure () -> Logger.Metadata,
        level: Logger.Level? = nil
    ) {
        let level = level ?? self.level
        guard logger.logLevel <= level else { return }
        var metadata = metadata()
        metadata["courier-operation-id"] = "\(operation.id)"
        logger.log(level: level, message, metadata: metadata)
    }

    private static func metadata(_ progress: TransferProgress) -> Logger.Metadata {
        var metadata: Logger.Metadata = ["courier-bytes": "\(progress.completedBytes)"]
        if let total = progress.totalBytes { metadata["courier-total-bytes"] = "\(total)" }
        return metadata
    }

    private static func milliseconds(_ duration: Duration) -> String {
        String(format: "%.3f", duration.seconds * 1000)
    }
}
