/// Thread-safe request statistics. Every property returns a snapshot taken under a lock.
extension TestServer {
    /// Number of requests whose head was received since start or the last ``resetStatistics()``.
    public var requestCount: Int { statistics.requestCount }

    /// How many connections the server accepted since it started (a client's pool reusing one connection
    /// makes one).
    public var acceptedConnectionCount: Int { connections.counts.accepted }

    /// How many client connections are open now.
    public var openConnectionCount: Int { connections.counts.open }

    /// The most connections open at once since the server started.
    public var maxOpenConnections: Int { connections.counts.maxOpen }

    /// Number of requests for exactly `path` (without query) since start or the last reset.
    ///
    /// - Parameter path: The request path, e.g. `"/get"`.
    public func requestCount(path: String) -> Int { statistics.requestCount(path: path) }

    /// Number of requests received and not yet fully answered.
    ///
    /// A request stops being in flight when the last part of its response is handed to the
    /// connection, i.e. before the client can have received the final byte; requests cut off
    /// by a closed connection stop being in flight when the connection closes.
    public var inFlight: Int { statistics.inFlight }

    /// Highest value ``inFlight`` reached since start or the last ``resetStatistics()``.
    public var maxInFlight: Int { statistics.maxInFlight }

    /// Number of requests whose connection the client closed before the response was complete
    /// (including responses whose final bytes could no longer be delivered).
    /// Connections the server closes itself (`/drop-mid-body`, `Connection: close`, malformed
    /// requests, ``shutdown()``) do not count.
    public var abortedRequestCount: Int { statistics.abortedRequestCount }

    /// The received requests in arrival order. A request appears as soon as its head arrived;
    /// its ``RecordedRequest/body`` (at most 1 MiB) is filled in once the body is complete.
    ///
    /// To keep memory bounded during long runs only the most recent 10 000 requests (and at
    /// most 256 MiB of recorded bodies in total) are kept; older ones are dropped first.
    public var recordedRequests: [RecordedRequest] { statistics.recordedRequests }

    /// Zeroes the counters, clears ``recordedRequests`` and sets ``maxInFlight`` to the current
    /// ``inFlight``. Requests in flight stay in flight.
    public func resetStatistics() { statistics.reset() }

    /// Suspends until ``requestCount`` is at least `count` or `timeout` has passed.
    ///
    /// The waiter is resumed directly by the connection handler that receives the request
    /// (no polling); the timeout is an event-loop timer. Cancelling the task returns `false`.
    ///
    /// - Returns: Whether the count was reached in time.
    public func waitForRequests(count: Int, timeout: Duration) async -> Bool {
        await statistics.wait(for: .requests, count: count, timeout: timeout)
    }

    /// Suspends until ``abortedRequestCount`` is at least `count` or `timeout` has passed.
    ///
    /// Works like ``waitForRequests(count:timeout:)``.
    ///
    /// - Returns: Whether the count was reached in time.
    public func waitForAbortedRequests(count: Int, timeout: Duration) async -> Bool {
        await statistics.wait(for: .abortedRequests, count: count, timeout: timeout)
    }
}
