public import Dispatch
import Foundation
import NIOConcurrencyHelpers

/// A group of operations that start together and finish together: ASINetworkQueue on top of the
/// shared queue.
///
/// ```swift
/// let batch = NetworkBatch(usesAccurateProgress: true)
/// for url in imageURLs { batch.add(engine.operation(url: url)) }
/// batch.onProgress { bar.value = $0.fractionCompleted ?? 0 }
/// batch.go()
/// let result = await batch.result()
/// ```
/// Members run on their own engines' queues, under the same limits as everything else; the batch
/// only starts them, watches them and reports on the whole:
/// - nothing starts before ``go()``;
/// - with ``cancelsAllOnFailure`` (the default, as ASINetworkQueue's `shouldCancelAllRequestsOnFailure`),
///   the first member to fail or be cancelled cancels the others;
/// - with ``usesAccurateProgress``, `go()` first sends a HEAD request for each GET member to learn its
///   size, so ``progress`` has an exact total from the start;
/// - ``events`` reports each member starting, finishing and failing, then `.queueFinished` once, after
///   every member has finished, whatever their outcomes.
public final class NetworkBatch: Sendable {
    /// How a batch ended.
    public struct Result: Sendable {
        /// Members that succeeded, in the order they were added.
        public var succeeded: [NetworkOperation]
        /// Members that failed.
        public var failed: [NetworkOperation]
        /// Members that were cancelled (by you, or because another failed).
        public var cancelled: [NetworkOperation]
        /// Whether every member succeeded.
        public var isSuccess: Bool { failed.isEmpty && cancelled.isEmpty }
    }

    private struct State {
        var machine: BatchStateMachine
        var operations: [OperationID: NetworkOperation] = [:]
        var progressHandlers: [@Sendable (TransferProgress) -> Void] = []
        var finishHandlers: [@Sendable (Result) -> Void] = []
        var waiters: [CheckedContinuation<Result, Never>] = []
        var eventStreams: [AsyncStream<QueueEvent>.Continuation] = []
        var result: Result?
    }

    /// Whether one member failing or being cancelled cancels the rest.
    public let cancelsAllOnFailure: Bool
    /// Whether ``go()`` learns every GET member's size with a HEAD request first.
    public let usesAccurateProgress: Bool
    private let callbackQueue: DispatchQueue
    private let state: NIOLockedValueBox<State>

    /// Creates an empty batch.
    /// - Parameters:
    ///   - cancelsAllOnFailure: Whether a failure or cancellation cancels the other members; `true` by default.
    ///   - usesAccurateProgress: Whether to learn sizes with HEAD requests before starting; `false` by default.
    ///   - callbackQueue: Where the batch's handlers run; Courier's serial callback queue by default.
    public init(cancelsAllOnFailure: Bool = true, usesAccurateProgress: Bool = false, callbackQueue: DispatchQueue = .courierCallbacks) {
        self.cancelsAllOnFailure = cancelsAllOnFailure
        self.usesAccurateProgress = usesAccurateProgress
        self.callbackQueue = callbackQueue
        self.state = NIOLockedValueBox(State(machine: BatchStateMachine(cancelsAllOnFailure: cancelsAllOnFailure)))
    }

    /// Adds an operation that has not been enqueued. Ignored after ``go()``.
    /// - Parameter operation: The operation.
    public func add(_ operation: NetworkOperation) {
        state.withLockedValue { state in
            if state.machine.add(operation.id) { state.operations[operation.id] = operation }
        }
    }

    /// The members, in the order they were added.
    public var operations: [NetworkOperation] {
        state.withLockedValue { state in state.machine.memberIDs.compactMap { state.operations[$0] } }
    }

    /// Bytes received by all members over their total, once every size is known.
    public var progress: TransferProgress { state.withLockedValue { $0.machine.progress } }

    /// Adds a handler called with the batch's progress as it changes.
    /// - Parameter handler: The handler, called on the batch's callback queue.
    /// - Returns: The batch, for chaining.
    @discardableResult
    public func onProgress(_ handler: @escaping @Sendable (TransferProgress) -> Void) -> Self {
        state.withLockedValue { $0.progressHandlers.append(handler) }
        return self
    }

    /// Adds a handler called once, when every member has finished.
    /// - Parameter handler: The handler, called on the batch's callback queue.
    /// - Returns: The batch, for chaining.
    @discardableResult
    public func onFinish(_ handler: @escaping @Sendable (Result) -> Void) -> Self {
        let result: Result? = state.withLockedValue { state in
            if state.result == nil { state.finishHandlers.append(handler) }
            return state.result
        }
        if let result { callbackQueue.async { handler(result) } }
        return self
    }

    /// Members starting, finishing and failing, then `.queueFinished` when the batch is over.
    public var events: AsyncStream<QueueEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: QueueEvent.self, bufferingPolicy: .bufferingNewest(1024))
        state.withLockedValue { state in
            if state.result != nil {
                continuation.yield(.queueFinished)
                continuation.finish()
            } else {
                state.eventStreams.append(continuation)
            }
        }
        return stream
    }

    /// Starts the batch: enqueues every member (after the HEAD probes, with accurate progress).
    public func go() {
        let (action, members) = state.withLockedValue { state in
            (state.machine.go(probingSizes: usesAccurateProgress), state.machine.memberIDs.compactMap { state.operations[$0] })
        }
        perform(action)
        for operation in members { observe(operation) }
        if usesAccurateProgress {
            Task {
                await self.probeSizes(of: members)
                self.apply { $0.sizesProbed() }
                for operation in members { operation.submit() }
            }
        } else {
            for operation in members { operation.submit() }
        }
    }

    /// Waits until every member has finished.
    /// - Returns: How the batch ended.
    public func result() async -> Result {
        await withCheckedContinuation { continuation in
            let result: Result? = state.withLockedValue { state in
                if state.result == nil { state.waiters.append(continuation) }
                return state.result
            }
            if let result { continuation.resume(returning: result) }
        }
    }

    /// Cancels every member.
    public func cancelAll() {
        for operation in operations { operation.cancel() }
    }

    // MARK: Internals

    /// Every observation is handled on the member's own callback queue, so a member's start, progress and
    /// outcome reach the batch in order. The outcome comes from an internal observer, which
    /// `clearHandlersAndCancel()` does not remove: a batch always learns how each member ended.
    private func observe(_ operation: NetworkOperation) {
        let id = operation.id
        operation.onStateChange { [weak self, weak operation] newState in
            guard newState == .executing, let self, let operation else { return }
            self.publish(.started(operation))
        }
        operation.onDownloadProgress { [weak self] progress in
            self?.apply { $0.received(progress, by: id) }
        }
        let queue = operation.context.configuration.callbackQueue
        // Strong on purpose: a batch the caller did not keep lives until its last member finished (the
        // observer is dropped once it has run), so its finish handlers are still called.
        operation.whenFinished { result in
            queue.async {
                switch result {
                case .success(let response):
                    self.publish(.finished(operation, response))
                    self.apply { $0.finished(id, .succeeded) }
                case .failure(let error):
                    self.publish(.failed(operation, error))
                    self.apply { $0.finished(id, error.code == .cancelled ? .cancelled : .failed) }
                }
            }
        }
    }

    private func probeSizes(of members: [NetworkOperation]) async {
        await withTaskGroup(of: Void.self) { group in
            for operation in members where operation.method == .get && operation.state == .ready {
                guard let url = operation.requestURL else { continue }
                group.addTask {
                    let probe = NetworkOperation(
                        method: .head, url: .success(url), urlString: operation.urlString, headers: operation.headers,
                        body: nil, context: operation.context, inputError: nil)
                    guard let length = try? await probe.response().headers[.contentLength].flatMap({ Int64($0) }) else { return }
                    self.apply { $0.learnedSize(length, of: operation.id) }
                }
            }
        }
    }

    private func apply(_ event: (inout BatchStateMachine) -> BatchStateMachine.Action) {
        let action = state.withLockedValue { event(&$0.machine) }
        perform(action)
    }

    private func perform(_ action: BatchStateMachine.Action) {
        let toCancel = state.withLockedValue { state in action.cancel.compactMap { state.operations[$0] } }
        for operation in toCancel { operation.cancelKeepingResumeData() }   // a side effect: resumable downloads keep their bytes
        if let progress = action.progress {
            state.withLockedValue { state in
                let handlers = state.progressHandlers
                if !handlers.isEmpty { callbackQueue.async { for handler in handlers { handler(progress) } } }
            }
        }
        if let summary = action.finished { finish(summary) }
    }

    private func finish(_ summary: BatchStateMachine.Summary) {
        let (result, waiters) = state.withLockedValue { state in
            let operations = state.operations
            let lookup = { (ids: [OperationID]) in ids.compactMap { operations[$0] } }
            let result = Result(succeeded: lookup(summary.succeeded), failed: lookup(summary.failed), cancelled: lookup(summary.cancelled))
            state.result = result
            let handlers = state.finishHandlers
            state.finishHandlers = []
            state.progressHandlers = []
            if !handlers.isEmpty { callbackQueue.async { for handler in handlers { handler(result) } } }
            for stream in state.eventStreams {
                stream.yield(.queueFinished)
                stream.finish()
            }
            state.eventStreams = []
            defer { state.waiters = [] }
            return (result, state.waiters)
        }
        for waiter in waiters { waiter.resume(returning: result) }
    }

    private func publish(_ event: QueueEvent) {
        state.withLockedValue { state in
            for stream in state.eventStreams { stream.yield(event) }
        }
    }
}
