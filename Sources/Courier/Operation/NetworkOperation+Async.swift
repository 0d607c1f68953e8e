import NIOConcurrencyHelpers
import Synchronization
extension NetworkOperation {
    /// What happens to an operation, as an element of ``events``.
    public enum Event: Sendable {
        /// Request body bytes were sent.
        case uploadProgress(TransferProgress)
        /// Response body bytes arrived.
        case downloadProgress(TransferProgress)
        /// A stored response, delivered before the network's answer (``CachePolicy/cachedThenFresh``).
        case cached(NetworkResponse)
        /// The operation could not be sent and was committed to its engine's outbox
        /// (``NetworkOperation/isFreezable``); the outcome follows when it is replayed.
        case frozen(OutboxEntry)
        /// The operation succeeded; the sequence ends.
        case response(NetworkResponse)
        /// The operation failed or was cancelled; the sequence ends.
        case failure(NetworkError)
    }

    /// Waits for the operation's response, enqueueing it first if it is not yet enqueued.
    ///
    /// ```swift
    /// let response = try await engine.operation(path: "/rates").response()
    /// ```
    /// Cancelling the waiting task cancels the operation, unless it is frozen or on its way to the outbox
    /// (``NetworkOperation/isFreezable``): a frozen request is something the user asked to keep, so
    /// cancelling the task only stops the waiting (it throws ``NetworkError/Code/stillFrozen``) and the
    /// request stays in the outbox; only ``cancel()`` or `Outbox.drop(_:)` removes it.
    ///
    /// Every handler of the operation (completion, error, progress, state) has run before this returns.
    /// - Returns: The response.
    /// - Throws: ``NetworkError``, as the error handlers would hear it.
    public func response() async throws(NetworkError) -> NetworkResponse {
        if state == .ready { submit() }
        let waiter = OutcomeWaiter()
        let result = await withTaskCancellationHandler {
            await withUnsafeContinuation { continuation in
                waiter.wait(continuation)
                let finished = storage.withLockedValue { storage -> (Result<NetworkResponse, NetworkError>, Bool)? in
                    if let outcome = storage.machine.outcome { return (outcome, storage.hasHadHandlers) }
                    if storage.waiter == nil {
                        storage.waiter = waiter
                    } else {
                        storage.observers.append { [self] outcome in
                            resume(waiter, with: outcome, hadHandlers: self.storage.withLockedValue { $0.hasHadHandlers })
                        }
                    }
                    return nil
                }
                if let (outcome, hadHandlers) = finished { resume(waiter, with: outcome, hadHandlers: hadHandlers) }
            }
        } onCancel: {
            if isKept {
                waiter.resume(.failure(NetworkError(
                    .stillFrozen, "the waiting task was cancelled; the request stays in the outbox and will be sent",
                    url: urlString)))
            } else {
                // A cancelled task is not a decision about a resumable download's partial file: it is kept.
                cancel(discardingPartialDownload: false)
            }
        }
        waiter.settled()
        return try result.get()
    }

    /// Resumes a task awaiting ``response()``. The handlers were dispatched on the callback queue before the
    /// outcome was published: hopping through that queue delivers the result after every one of them ran.
    /// An operation that never had a handler has nothing there, and does not wait for that queue. Only
    /// schedules work (``notify(_:)`` calls it once the operation's lock is released).
    func resume(_ waiter: OutcomeWaiter, with outcome: Result<NetworkResponse, NetworkError>, hadHandlers: Bool) {
        if hadHandlers {
            context.configuration.callbackQueue.async { waiter.resume(outcome) }
        } else {
            waiter.resume(outcome)
        }
    }

    /// The answers of a ``CachePolicy/cachedThenFresh`` operation: `.cached` when something is stored,
    /// then `.fresh` or `.notModified`; the sequence throws the operation's ``NetworkError`` instead of a
    /// final answer. Enqueues the operation if it is not yet enqueued.
    ///
    /// ```swift
    /// for try await update in engine.operation(path: "timeline").cacheUpdates() {
    ///     switch update {
    ///     case .cached(let response), .fresh(let response): show(response)
    ///     case .notModified: break
    ///     }
    /// }
    /// ```
    /// - Returns: The updates, in order.
    public func cacheUpdates() -> CacheUpdates {
        let events = self.events
        if state == .ready { submit() }
        return CacheUpdates(events: events)
    }

    /// The sequence of ``cacheUpdates()``; it throws ``NetworkError``.
    public struct CacheUpdates: AsyncSequence, Sendable {
        public typealias Element = CacheUpdate
        public typealias Failure = NetworkError
        let events: Events

        /// Reads the operation's events and keeps the cache answers.
        public struct AsyncIterator: AsyncIteratorProtocol {
            public typealias Element = CacheUpdate
            public typealias Failure = NetworkError
            var base: AsyncStream<Event>.Iterator
            var isDone = false

            /// The next answer, `nil` after the final one.
            /// - Throws: The operation's error, instead of a final answer.
            public mutating func next(isolation actor: isolated (any Actor)?) async throws(NetworkError) -> CacheUpdate? {
                while !isDone, let event = await base.next(isolation: actor) {
                    switch event {
                    case .cached(let response):
                        return .cached(response)
                    case .response(let response):
                        isDone = true
                        return response.cacheOutcome == .revalidated ? .notModified(response) : .fresh(response)
                    case .failure(let error):
                        isDone = true
                        throw error
                    case .uploadProgress, .downloadProgress, .frozen:
                        continue
                    }
                }
                return nil
            }

            /// The next answer, `nil` after the final one.
            public mutating func next() async throws(NetworkError) -> CacheUpdate? {
                try await next(isolation: nil)
            }
        }

        /// Starts reading.
        public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: events.makeAsyncIterator()) }
    }

    /// The operation's progress and outcome as an asynchronous sequence that ends with
    /// `.response` or `.failure`.
    ///
    /// ```swift
    /// for await event in op.events {
    ///     if case .downloadProgress(let progress) = event { bar.value = progress.fractionCompleted ?? 0 }
    /// }
    /// ```
    /// Each access makes a new sequence that sees the events from then on (a finished operation's
    /// sequence holds just its outcome). Progress is buffered up to the newest 256 events for a slow
    /// reader; the outcome is never dropped. Like ``response()``, iterating enqueues the operation if
    /// it is not yet enqueued, so the loop above never waits for an operation nobody started.
    public var events: Events {
        let (stream, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(256))
        storage.withLockedValue { storage in
            switch storage.machine.outcome {
            case .success(let response)?:
                continuation.yield(.response(response))
                continuation.finish()
            case .failure(let error)?:
                continuation.yield(.failure(error))
                continuation.finish()
            case nil:
                // No onTermination: finishing under the lock must not call back into the lock.
                // A reader that stops early leaves an idle continuation until the operation ends.
                storage.streams[storage.nextStreamKey] = continuation
                storage.nextStreamKey += 1
            }
        }
        return Events(stream: stream, operation: self)
    }

    /// The sequence of ``events``: iterating it enqueues the operation if it is not yet enqueued.
    public struct Events: AsyncSequence, Sendable {
        public typealias Element = Event
        public typealias Failure = Never
        let stream: AsyncStream<Event>
        let operation: NetworkOperation

        /// Starts iterating; enqueues the operation first if it is still `.ready`.
        public func makeAsyncIterator() -> AsyncStream<Event>.Iterator {
            if operation.state == .ready { operation.submit() }
            return stream.makeAsyncIterator()
        }
    }
}

/// One waiter of ``NetworkOperation/response()``: resumed exactly once, by the outcome or by a cancelled
/// wait, whichever comes first, even when the wait is cancelled before the continuation exists.
final class OutcomeWaiter: Sendable {
    private typealias Outcome = Result<NetworkResponse, NetworkError>
    /// Inline in the waiter (a `Mutex`, not a separately allocated box): one allocation per awaited response.
    private let state = Mutex<(continuation: UnsafeContinuation<Outcome, Never>?, early: Outcome?, isDone: Bool)>((nil, nil, false))

    func wait(_ continuation: UnsafeContinuation<Result<NetworkResponse, NetworkError>, Never>) {
        state.withLock { state in
            if let early = state.early {
                continuation.resume(returning: early)
            } else {
                state.continuation = continuation
            }
        }
    }

    func resume(_ outcome: Result<NetworkResponse, NetworkError>) {
        // Resumed under the lock (resuming only schedules the task), and the task takes the lock once it
        // runs again (``settled()``): that orders everything the resuming thread did before the task goes
        // on, which ThreadSanitizer cannot otherwise see for a continuation resumed from a dispatch queue.
        state.withLock { state in
            guard !state.isDone else { return }
            state.isDone = true
            guard let continuation = state.continuation else {
                state.early = outcome
                return
            }
            state.continuation = nil
            continuation.resume(returning: outcome)
        }
    }

    /// Called by the waiting task after it resumed (see ``resume(_:)``).
    func settled() {
        state.withLock { _ in }
    }
}
