import Foundation
/// When a server-sent event stream reconnects, and when it ends: a pure value (events in, decisions out,
/// no I/O; time is only ever a duration it hands back).
///
/// The rules (the WHATWG standard's, with the backoff it allows):
/// - a `200` with `Content-Type: text/event-stream` opens the stream; any other `2xx` content type fails it
///   (``NetworkError/Code/unacceptableContentType``);
/// - a `204 No Content` ends it: the server says there is nothing more to follow;
/// - a `408`, `429` or `5xx` answer, or a failure to connect or a connection lost (the network's errors),
///   reconnects after a backoff; `Retry-After` is honoured when longer (up to an hour);
/// - any other answer (a `401`, a `404`, a redirect loop, ...) fails the stream with its error;
/// - a stream that was open and ended reconnects after the reconnection time (the server's last
///   `retry:`, up to an hour, else the options'), with no backoff: ending is what streams do; but one that
///   ended within ``shortLived`` of opening without a single event counts as a failed attempt (a server
///   that accepts and hangs up at once must not get a reconnection storm);
/// - consecutive failed attempts double the wait, up to ``ServerSentEvents/Options/maximumDelay``;
///   after ``ServerSentEvents/Options/maximumAttempts`` of them in a row the stream fails with the last error;
/// - no wait is shorter than ``ServerSentEvents/Options/minimumDelay`` (500 ms), whatever `retry:` says.
struct EventSourceStateMachine {
    /// What to do next.
    enum Decision: Equatable {
        /// Connect again after this wait.
        case reconnect(after: Duration)
        /// The stream is over (a `204`, or the caller stopped).
        case end
        /// The stream fails with this error.
        case fail(NetworkError)

        static func == (lhs: Decision, rhs: Decision) -> Bool {
            switch (lhs, rhs) {
            case (.reconnect(let a), .reconnect(let b)): a == b
            case (.end, .end): true
            case (.fail(let a), .fail(let b)): a.code == b.code
            default: false
            }
        }
    }

    /// What a response head means for the stream.
    enum Opening: Equatable {
        case open
        case decided(Decision)
    }

    let options: ServerSentEvents.Options
    /// The server's reconnection time (its last `retry:`), if it sent one.
    private(set) var serverReconnectionTime: Duration?
    /// Attempts in a row that did not open the stream.
    private(set) var failedAttempts = 0

    init(options: ServerSentEvents.Options) {
        self.options = options
    }

    /// The wait before reconnecting after an open stream ended.
    var reconnectionTime: Duration { serverReconnectionTime ?? options.reconnectionTime }

    /// The server set its reconnection time (`retry:`): honoured up to an hour, as `Retry-After` is (a
    /// `retry:` of a century would end the stream without saying so).
    mutating func serverSetReconnectionTime(_ time: Duration) {
        serverReconnectionTime = min(time, Self.longestRetryAfter)
    }

    /// A response head arrived.
    mutating func received(status: Int, contentType: String?, retryAfter: Duration?, url: String?) -> Opening {
        if status == 204 { return .decided(.end) }
        if (200..<300).contains(status) {
            guard Self.isEventStream(contentType) else {
                return .decided(.fail(NetworkError(
                    .unacceptableContentType, "the server answered \(contentType ?? "no Content-Type") instead of text/event-stream", url: url)))
            }
            guard status == 200 else {
                return .decided(.fail(NetworkError(.unacceptableStatus, "the server answered \(status) to an event stream", url: url)))
            }
            return .open
        }
        guard Self.isRetryable(status: status) else {
            return .decided(.fail(NetworkError(.unacceptableStatus, "the server answered \(status) to an event stream", url: url)))
        }
        return .decided(attemptFailed(NetworkError(.unacceptableStatus, "the server answered \(status) to an event stream", url: url), retryAfter: retryAfter))
    }

    /// How long a stream must have been open, when it sent no event, for its end to count as a stream
    /// that ended rather than an attempt that failed.
    static let shortLived = Duration.seconds(5)

    /// An open stream ended: the server closed it, or the connection was lost after it opened.
    /// - Parameters:
    ///   - deliveredEvents: Whether this connection brought at least one event.
    ///   - lasted: How long it was open.
    ///   - error: The failure that ended it, if any.
    mutating func openStreamEnded(deliveredEvents: Bool, lasted: Duration, error: NetworkError? = nil) -> Decision {
        guard deliveredEvents || lasted >= Self.shortLived else {
            return attemptFailed(
                error ?? NetworkError(.connectionLost, "the server ended the event stream \(lasted) after opening it, before its first event"),
                retryAfter: nil)
        }
        failedAttempts = 0
        return .reconnect(after: max(reconnectionTime, options.minimumDelay))
    }

    /// An attempt failed before the stream opened (or with an error that is not the network's).
    mutating func failed(_ error: NetworkError, retryAfter: Duration? = nil) -> Decision {
        if error.code == .cancelled { return .end }
        if let status = error.response?.statusCode {
            switch received(status: status, contentType: error.response?.headers[.contentType], retryAfter: retryAfter, url: error.url) {
            case .open: return .fail(error)
            case .decided(let decision): return decision
            }
        }
        guard Self.isNetworkFailure(error.code) else { return .fail(error) }
        return attemptFailed(error, retryAfter: retryAfter)
    }

    private mutating func attemptFailed(_ error: NetworkError, retryAfter: Duration?) -> Decision {
        failedAttempts += 1
        if let maximum = options.maximumAttempts, failedAttempts > maximum { return .fail(error) }
        var wait = reconnectionTime
        var doublings = min(failedAttempts - 1, 64)
        while doublings > 0, wait < options.maximumDelay {
            // Never past the maximum, so never past what a Duration holds.
            wait = wait > options.maximumDelay / 2 ? options.maximumDelay : wait * 2
            doublings -= 1
        }
        wait = min(wait, max(options.maximumDelay, reconnectionTime))
        if let retryAfter, retryAfter > wait { wait = min(retryAfter, max(wait, Self.longestRetryAfter)) }
        return .reconnect(after: max(wait, options.minimumDelay))
    }

    /// The longest `Retry-After` honoured: a server's "come back next year" waits an hour.
    static let longestRetryAfter = Duration.seconds(3600)

    /// `text/event-stream`, with any parameters.
    static func isEventStream(_ contentType: String?) -> Bool {
        guard let contentType else { return false }
        let essence = contentType.split(separator: ";", maxSplits: 1).first.map(String.init) ?? ""
        return CacheHeaderSyntax.asciiLowercased(essence.trimmingCharacters(in: .whitespaces)) == "text/event-stream"
    }

    static func isRetryable(status: Int) -> Bool {
        status == 408 || status == 429 || (500..<600).contains(status)
    }

    /// Failures of the network, not of the request: worth trying again.
    static func isNetworkFailure(_ code: NetworkError.Code) -> Bool {
        [.cannotConnect, .notConnected, .timeout, .connectionLost, .transport, .invalidResponse].contains(code)
    }
}
