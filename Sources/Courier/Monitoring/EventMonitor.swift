public import Foundation
public import HTTPTypes

/// Sees everything that happens to an engine's operations: to log, measure or trace them (Alamofire's
/// `EventMonitor`, OkHttp's `EventListener`).
///
/// Give an engine monitors with ``NetworkEngine/Configuration/eventMonitors``; each one hears every
/// event of every operation the engine builds (replays from its outbox included). Every method has a
/// default that does nothing, so a monitor implements only what it needs:
/// ```swift
/// struct SlowRequests: EventMonitor {
///     func operation(_ operation: NetworkOperation, didFinish result: Result<NetworkResponse, NetworkError>, metrics: OperationMetrics) {
///         if metrics.totalDuration > .seconds(2) { print("slow:", operation.method, metrics.totalDuration) }
///     }
/// }
/// ```
///
/// The events of one operation arrive in the order they happened, one at a time, on a private serial
/// queue of the engine: never on the thread that enqueued or cancelled the operation, and never while
/// Courier holds a lock, so a monitor may call back into the operation (``NetworkOperation/state``,
/// ``NetworkOperation/cancel()``). Each event is delivered once. A slow monitor delays the monitors
/// after it (and later events), never the requests themselves. An engine without monitors pays nothing
/// for them.
///
/// An operation's events, in order: ``operationDidEnqueue(_:)``; for a GET or HEAD with a cache,
/// ``operation(_:didLookUpCache:)``; then for each request that goes on the wire (each attempt and each
/// redirect hop) ``operation(_:didStartRequest:)``, its interim responses, its
/// ``operation(_:didReceiveResponseHead:)``, then ``operation(_:willFollowRedirectTo:)`` or body
/// progress; ``operation(_:willRetry:after:failure:)`` before another attempt; ``operation(_:didFreeze:)``
/// when it goes to the outbox; and last, always, ``operation(_:didFinish:metrics:)``. A replay from the
/// outbox is an operation of its own, announced by ``operation(_:willReplay:)``; the operation that froze
/// hears ``operation(_:didFinish:metrics:)`` with the replay's outcome. Operations that share one request
/// (coalescing) each hear the events from the moment they joined it.
public protocol EventMonitor: Sendable {
    /// The operation was enqueued (``NetworkEngine/enqueue(_:)`` or ``NetworkEngine/send(_:)``).
    /// - Parameter operation: The operation.
    func operationDidEnqueue(_ operation: NetworkOperation)

    /// The engine's cache was consulted for the operation, before the network.
    /// - Parameters:
    ///   - operation: The operation.
    ///   - result: What the cache found: an answer (``CacheLookupResult/hit`` or ``CacheLookupResult/stale``),
    ///     a response to revalidate, or nothing. A revalidation's outcome is the finished response's
    ///     ``NetworkResponse/cacheOutcome`` (``CacheOutcome/revalidated`` after a `304`).
    func operation(_ operation: NetworkOperation, didLookUpCache result: CacheLookupResult)

    /// A request of the operation goes on the wire now, as sent: after the interceptors adapted it, with
    /// its credentials (mask them before logging, as ``LoggingEventMonitor`` does). Called for each
    /// attempt and each redirect hop.
    /// - Parameters:
    ///   - operation: The operation.
    ///   - request: The method, URL and header fields sent.
    func operation(_ operation: NetworkOperation, didStartRequest request: HTTPRequest)

    /// An interim (`1xx`) response arrived (reported for operations with an
    /// ``NetworkOperation/onInformationalResponse(_:)`` handler, which run on a connection of their own).
    /// - Parameters:
    ///   - operation: The operation.
    ///   - response: The interim response.
    func operation(_ operation: NetworkOperation, didReceiveInterimResponse response: InformationalResponse)

    /// The head of a final response arrived: each redirect's, then the answer's. The body follows.
    /// - Parameters:
    ///   - operation: The operation.
    ///   - response: The status and header fields.
    func operation(_ operation: NetworkOperation, didReceiveResponseHead response: HTTPResponse)

    /// Request body bytes were sent.
    ///
    /// Progress events are the ones a monitor can miss: while more than 1024 events wait for the
    /// monitors (one of them is slow or blocked), new progress events are dropped, so memory stays bounded.
    /// Each event carries the running totals, so the next one delivered is still right.
    /// - Parameters:
    ///   - operation: The operation.
    ///   - progress: The bytes sent so far.
    func operation(_ operation: NetworkOperation, didSendBody progress: TransferProgress)

    /// Response body bytes arrived.
    ///
    /// Progress events are the ones a monitor can miss: while more than 1024 events wait for the
    /// monitors (one of them is slow or blocked), new progress events are dropped, so memory stays bounded.
    /// Each event carries the running totals, so the next one delivered is still right.
    /// - Parameters:
    ///   - operation: The operation.
    ///   - progress: The bytes received so far.
    func operation(_ operation: NetworkOperation, didReceiveBody progress: TransferProgress)

    /// The last response head was a redirect the operation follows.
    /// - Parameters:
    ///   - operation: The operation.
    ///   - url: Where the next request goes.
    func operation(_ operation: NetworkOperation, willFollowRedirectTo url: URL)

    /// An attempt failed and an interceptor (a ``RetryPolicy``, an authenticator) asked for another.
    /// The operation waits outside the queue's slots, then starts again from its original URL.
    /// - Parameters:
    ///   - operation: The operation.
    ///   - attempt: The number of the coming attempt: 2 for the first retry.
    ///   - delay: How long it waits first.
    ///   - failure: Why the previous attempt failed (for an unacceptable status, ``NetworkError/response``
    ///     is the response).
    func operation(_ operation: NetworkOperation, willRetry attempt: Int, after delay: Duration, failure: NetworkError)

    /// The operation could not be sent and was committed to the outbox (``NetworkOperation/isFreezable``).
    /// - Parameters:
    ///   - operation: The operation.
    ///   - entry: Its row in the outbox.
    func operation(_ operation: NetworkOperation, didFreeze entry: OutboxEntry)

    /// The outbox sends a frozen request again: `operation` is the replay, an operation of its own whose
    /// events follow. ``OutboxEntry/id`` is the frozen operation's ``NetworkOperation/outboxID``.
    /// - Parameters:
    ///   - operation: The replay.
    ///   - entry: The row it replays.
    func operation(_ operation: NetworkOperation, willReplay entry: OutboxEntry)

    /// The operation has its outcome; its last event.
    /// - Parameters:
    ///   - operation: The operation.
    ///   - result: The response, or the error (cancellation included), as its handlers hear it.
    ///   - metrics: When it was enqueued, started, answered and finished.
    func operation(_ operation: NetworkOperation, didFinish result: Result<NetworkResponse, NetworkError>, metrics: OperationMetrics)
}

extension EventMonitor {
    /// Does nothing.
    public func operationDidEnqueue(_ operation: NetworkOperation) {}
    /// Does nothing.
    public func operation(_ operation: NetworkOperation, didLookUpCache result: CacheLookupResult) {}
    /// Does nothing.
    public func operation(_ operation: NetworkOperation, didStartRequest request: HTTPRequest) {}
    /// Does nothing.
    public func operation(_ operation: NetworkOperation, didReceiveInterimResponse response: InformationalResponse) {}
    /// Does nothing.
    public func operation(_ operation: NetworkOperation, didReceiveResponseHead response: HTTPResponse) {}
    /// Does nothing.
    public func operation(_ operation: NetworkOperation, didSendBody progress: TransferProgress) {}
    /// Does nothing.
    public func operation(_ operation: NetworkOperation, didReceiveBody progress: TransferProgress) {}
    /// Does nothing.
    public func operation(_ operation: NetworkOperation, willFollowRedirectTo url: URL) {}
    /// Does nothing.
    public func operation(_ operation: NetworkOperation, willRetry attempt: Int, after delay: Duration, failure: NetworkError) {}
    /// Does nothing.
    public func operation(_ operation: NetworkOperation, didFreeze entry: OutboxEntry) {}
    /// Does nothing.
    public func operation(_ operation: NetworkOperation, willReplay entry: OutboxEntry) {}
    /// Does nothing.
    public func operation(
        _ operation: NetworkOperation, didFinish result: Result<NetworkResponse, NetworkError>, metrics: OperationMetrics
    ) {}
}
