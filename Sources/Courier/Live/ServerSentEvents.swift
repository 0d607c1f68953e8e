import Foundation

/// A server-sent event stream (`text/event-stream`) that reconnects: what
/// ``NetworkEngine/events(path:params:options:configure:)`` returns.
///
/// Each iteration opens its own stream: the first call to `next()` connects. The stream then lives as
/// long as the loop reads it:
/// - a dropped connection reconnects after the server's `retry:` time (3 s until it sends one, an hour at most) and
///   sends `Last-Event-ID`, so the server can resume where the stream was; every event arrives once and
///   in order as far as the server honours it;
/// - attempts that fail to open (no route, refused, a `503`) back off, doubling up to
///   ``Options/maximumDelay``, honouring `Retry-After`;
/// - while the engine's host is unreachable, the next attempt waits for it (it does not fail);
/// - a `204 No Content` ends the loop; a `401`, a `404` or a body that is not `text/event-stream` fails it
///   with a ``NetworkError``, as does ``Options/maximumAttempts`` failed attempts in a row.
///
/// Each connection is an ordinary operation of the engine (its interceptors, credentials, proxies and
/// trust), marked ``NetworkOperation/isLongLived``: it holds one of the queue's slots only while it
/// connects, so open streams never narrow the queue. Breaking out of the loop, or cancelling its task,
/// closes the connection; the loop then ends without an error.
///
/// ```swift
/// for try await event in engine.events(path: "/v1/chat/stream") {
///     print(event.event, event.data)
/// }
/// ```
public struct ServerSentEvents: AsyncSequence, Sendable {
    public typealias Element = ServerSentEvent
    public typealias Failure = NetworkError

    /// How a stream reconnects and what it accepts.
    public struct Options: Sendable, Hashable {
        /// The wait before reconnecting, until the server sets its own with `retry:`; 3 s by default.
        public var reconnectionTime: Duration = .seconds(3)
        /// The longest wait between failed attempts (the backoff doubles up to it); 60 s by default.
        /// A longer `Retry-After` is honoured.
        public var maximumDelay: Duration = .seconds(60)
        /// The shortest wait before any reconnection, whatever the server's `retry:` says (a `retry: 0`
        /// must not become a reconnection storm); 500 ms by default.
        public var minimumDelay: Duration = .milliseconds(500)
        /// How many attempts in a row may fail to open the stream before it fails; `nil` (the default)
        /// for no limit. A stream that opened counts from zero again.
        public var maximumAttempts: Int?
        /// The `Last-Event-ID` of the first connection: the id of the last event your app handled, to
        /// resume a stream across launches.
        public var lastEventID: String?
        /// How long a connection may stay silent before it counts as lost and reconnects: the engine's
        /// read timeout when `nil` (60 s by default). Keep it above the server's keep-alive interval.
        public var idleTimeout: Duration?
        /// How long an attempt waits for the engine's host to become reachable before it counts as failed
        /// (and the next one waits again); 10 minutes by default.
        public var connectivityTimeout: Duration = .seconds(600)
        /// The most bytes a line or an event's data may hold; 1 MiB by default. A longer one fails the
        /// stream with ``NetworkError/Code/bodyTooLarge``.
        public var maximumEventSize: Int = 1 << 20

        /// Creates options.
        /// - Parameters:
        ///   - reconnectionTime: The wait before reconnecting, until the server sets one.
        ///   - maximumDelay: The longest backoff.
        ///   - maximumAttempts: Failed attempts in a row before the stream fails; `nil` for no limit.
        ///   - lastEventID: The first connection's `Last-Event-ID`.
        ///   - idleTimeout: The silence after which a connection counts as lost; the engine's read timeout when `nil`.
        ///   - minimumDelay: The shortest wait before any reconnection.
        public init(
            reconnectionTime: Duration = .seconds(3), maximumDelay: Duration = .seconds(60), maximumAttempts: Int? = nil,
            lastEventID: String? = nil, idleTimeout: Duration? = nil, minimumDelay: Duration = .milliseconds(500)
        ) {
            self.reconnectionTime = Swift.max(.zero, reconnectionTime)
            self.maximumDelay = Swift.max(.zero, maximumDelay)
            self.minimumDelay = Swift.max(.zero, minimumDelay)
            self.maximumAttempts = maximumAttempts.map { Swift.max(0, $0) }
            self.lastEventID = lastEventID
            self.idleTimeout = idleTimeout
        }
    }

    let engine: NetworkEngine
    let options: Options
    let makeOperation: @Sendable (NetworkEngine) -> NetworkOperation

    /// Opens a stream: the first `next()` connects.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(connection: EventSourceConnection(engine: engine, options: options, makeOperation: makeOperation))
    }

    /// Reads one stream, reconnecting as it goes.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let connection: EventSourceConnection

        /// The next event; `nil` when the stream ended (a `204`, or the task was cancelled).
        /// - Throws: ``NetworkError``: the answer that failed the stream, or the last failure after
        ///   ``Options/maximumAttempts``.
        public mutating func next() async throws(NetworkError) -> ServerSentEvent? {
            try await connection.next(isolation: nil)
        }

        /// The next event, on the caller's actor; see ``next()``.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws(NetworkError) -> ServerSentEvent? {
            try await connection.next(isolation: actor)
        }

        /// The stream's last event ID: what the next connection sends as `Last-Event-ID`, and what to
        /// keep to resume after a relaunch (``Options/lastEventID``).
        public var lastEventID: String? { connection.lastEventID }

        /// How many connections this stream has made so far (1 until it first reconnects).
        public var connectionCount: Int { connection.connections }
    }
}

/// The work of one stream's iterator: connect, parse, decide, wait, connect again. Used by one task at
/// a time (the iterator's), on its actor.
final class EventSourceConnection {
    private let engine: NetworkEngine
    private let makeOperation: @Sendable (NetworkEngine) -> NetworkOperation
    private var machine: EventSourceStateMachine
    private var parser: ServerSentEventParser
    private var body: ResponseBodyStream.AsyncIterator?
    private var operation: NetworkOperation?
    /// Whether the current connection's answer opened the stream.
    private var isOpen = false {
        didSet { if isOpen, !oldValue { openedAt = .now } }
    }
    /// When the current connection's stream opened, and whether it brought an event.
    private var openedAt = ContinuousClock.now
    private var hasEvents = false
    private var pending: [ServerSentEvent] = []
    private var pendingIndex = 0
    /// The parser's failure, told once the events it completed before it were delivered.
    private var pendingFailure: NetworkError?
    private var isFinished = false
    private(set) var connections = 0
    /// The id of the last event handed to the caller, while some parsed ones wait.
    private var deliveredID: String?

    init(engine: NetworkEngine, options: ServerSentEvents.Options, makeOperation: @escaping @Sendable (NetworkEngine) -> NetworkOperation) {
        self.engine = engine
        self.makeOperation = makeOperation
        machine = EventSourceStateMachine(options: options)
        parser = ServerSentEventParser(lastEventID: options.lastEventID ?? "", maximumEventSize: options.maximumEventSize)
        deliveredID = options.lastEventID
    }

    /// The last event ID as far as the caller has been given events: the id of the last one returned while
    /// others parsed from the same chunk wait, else the stream's (which an id-only block may have moved on).
    var lastEventID: String? {
        if pendingIndex < pending.count { return deliveredID }
        return parser.lastEventID.isEmpty ? nil : parser.lastEventID
    }

    func next(isolation: isolated (any Actor)?) async throws(NetworkError) -> ServerSentEvent? {
        while true {
            if pendingIndex < pending.count {
                defer { pendingIndex += 1 }
                deliveredID = pending[pendingIndex].id
                return pending[pendingIndex]
            }
            if let failure = pendingFailure {
                pendingFailure = nil
                try await apply(.fail(failure), isolation: isolation)
            }
            guard !isFinished else { return nil }
            guard !Task.isCancelled else { return close() }
            guard var iterator = body else {
                connect()
                continue
            }
            let chunk: Data?
            do {
                chunk = try await iterator.next(isolation: isolation)
                body = iterator
            } catch {
                body = nil
                try await apply(failure(NetworkError.wrapping(error, url: operation?.urlString)), isolation: isolation)
                continue
            }
            guard let chunk else {
                // The server ended the body: an open stream reconnects; a 204 ends it.
                body = nil
                let decision = isOpen ? nil : opening()
                try await apply(decision ?? ended(), isolation: isolation)
                continue
            }
            if !isOpen, let decision = opening() {
                body = nil   // the answer is not a stream: the connection is dropped
                try await apply(decision, isolation: isolation)
                continue
            }
            isOpen = true
            pending = parser.parse(chunk)
            pendingIndex = 0
            hasEvents = hasEvents || !pending.isEmpty
            if let time = parser.reconnectionTime { machine.serverSetReconnectionTime(time) }
            if let failure = parser.failure {
                // The events completed before the line over the limit go out first; then the stream fails.
                pendingFailure = NetworkError(failure.code, failure.message, url: operation?.urlString)
                body = nil
                operation?.cancel()
            }
        }
    }

    /// Whether the current answer's head opens the stream: `nil` if it does, else what to do.
    private func opening() -> EventSourceStateMachine.Decision? {
        guard !isOpen, let head = operation?.responseHead else { return nil }
        let retryAfter = RetryAfter.delay(head.headerFields[.retryAfter], now: Date())
        switch machine.received(
            status: head.status.code, contentType: head.headerFields[.contentType], retryAfter: retryAfter, url: operation?.urlString)
        {
        case .open:
            isOpen = true
            return nil
        case .decided(let decision):
            return decision
        }
    }

    private func failure(_ error: NetworkError) -> EventSourceStateMachine.Decision {
        // Cancelled: by the task, or by the app (its engine's or its queue's operations cancelled): over.
        if error.code == .cancelled { return .end }
        // A stream that was open and is lost reconnects as one that ended: no backoff.
        if isOpen, EventSourceStateMachine.isNetworkFailure(error.code) { return ended(error) }
        // A body stream's error for an answer it does not stream carries no response: its head says
        // whether it is worth another attempt (a 503, a 429).
        if !isOpen, error.code == .unacceptableStatus, error.response == nil, let head = operation?.responseHead,
            EventSourceStateMachine.isRetryable(status: head.status.code), let decision = opening()
        {
            return decision
        }
        let retryAfter = RetryAfter.delay(error.response?.headers[.retryAfter], now: Date())
        return machine.failed(error, retryAfter: retryAfter)
    }

    /// The open stream ended (with `error` when the connection was lost).
    private func ended(_ error: NetworkError? = nil) -> EventSourceStateMachine.Decision {
        machine.openStreamEnded(deliveredEvents: hasEvents, lasted: isOpen ? .now - openedAt : .zero, error: error)
    }

    private func apply(_ decision: EventSourceStateMachine.Decision, isolation: isolated (any Actor)?) async throws(NetworkError) {
        var decision = decision
        // An answer that failed the stream: the error carries its head (status and fields; the body was
        // not read), as an operation's error carries its response.
        if case .fail(var error) = decision, error.response == nil, let operation, let head = operation.responseHead,
            let url = operation.requestURL
        {
            error.response = NetworkResponse(status: head.status, headers: head.headerFields, url: url)
            decision = .fail(error)
        }
        operation?.cancel()
        operation = nil
        body = nil
        isOpen = false
        hasEvents = false
        parser.reset()
        switch decision {
        case .end:
            _ = close()
        case .fail(let error):
            isFinished = true
            throw error
        case .reconnect(let wait):
            guard wait > .zero else { return }
            do {
                try await Task.sleep(for: wait)
            } catch {
                _ = close()
            }
        }
    }

    private func connect() {
        let operation = makeOperation(engine)
        operation.setHeader("text/event-stream", forName: "Accept")
        operation.setHeader("no-cache", forName: "Cache-Control")
        if !parser.lastEventID.isEmpty { operation.setHeader(parser.lastEventID, forName: "Last-Event-ID") }
        operation.cachePolicy = .reloadIgnoringCache
        operation.isLongLived = true
        var timeouts = operation.timeouts
        timeouts.read = machine.options.idleTimeout ?? timeouts.read
        timeouts.total = nil
        operation.timeouts = timeouts
        operation.connectivityTimeout = machine.options.connectivityTimeout
        let stream = operation.bodyStream
        self.operation = operation
        connections += 1
        engine.enqueue(operation)
        body = stream.makeAsyncIterator()
    }

    private func close() -> ServerSentEvent? {
        isFinished = true
        operation?.cancel()
        operation = nil
        body = nil
        return nil
    }

    deinit {
        operation?.cancel()
    }
}
