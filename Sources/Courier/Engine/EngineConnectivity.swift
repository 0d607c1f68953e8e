import Foundation
import NIOConcurrencyHelpers

/// An engine's link to the network: it follows the engine's ``Reachability``, sets the engine's width
/// in the shared queue, decides what happens to an operation enqueued while the host is unreachable,
/// holds operations waiting for connectivity, and owns the engine's outbox replayer.
final class EngineConnectivity: Sendable {
    enum Admission {
        /// Into the queue.
        case go
        /// Into the outbox.
        case freeze
        /// Fail at once.
        case fail(NetworkError)
        /// Held until the host is reachable or its connectivity timeout passes.
        case held
    }

    private struct State {
        var appliedStatus: ReachabilityStatus?
        var held: [OperationID: NetworkOperation] = [:]
        var observer: Task<Void, Never>?
        var replayer: OutboxReplayer?
        var handler: (@Sendable (ReachabilityStatus) -> Void)?
        /// Builds the replay of a row (set by ``start(makeOperation:)``).
        var makeReplay: (@Sendable (OutboxRecord) -> NetworkOperation)?
        var isStopped = false
    }

    let engineID: UInt64
    let queue: NetworkQueue
    let reachability: any Reachability
    let concurrency: ConnectionConcurrency
    let wifiOnlyMode: Bool
    let dataDirectory: URL?
    let retry: OutboxRetry
    let replaysAutomatically: Bool
    let callbackQueue: DispatchQueue
    /// `scheme://host:port` of the engine, or `nil` when its base URL is invalid.
    let origin: String?
    private let state = NIOLockedValueBox(State())

    init(engineID: UInt64, queue: NetworkQueue, baseURL: URL?, configuration: NetworkEngine.Configuration) {
        self.engineID = engineID
        self.queue = queue
        self.origin = baseURL.map(OutboxRecord.origin(of:))
        self.concurrency = configuration.concurrency
        self.wifiOnlyMode = configuration.wifiOnlyMode
        self.dataDirectory = configuration.dataDirectory
        self.retry = configuration.outboxRetry
        self.replaysAutomatically = configuration.replaysOutbox
        self.callbackQueue = configuration.callbackQueue
        self.reachability = configuration.reachability
            ?? Self.systemReachability(host: baseURL?.host ?? "", port: baseURL?.port, logger: configuration.logger)
    }

    /// Starts following reachability and, when the data directory already holds an outbox (frozen by
    /// an earlier run), replaying it. `makeOperation` builds the replay of a row.
    func start(makeOperation: @escaping @Sendable (OutboxRecord) -> NetworkOperation) {
        let updates = reachability.statusUpdates()
        let observer = Task { [weak self] in
            for await status in updates {
                guard let self else { return }
                self.apply(status)
            }
        }
        var replayer: OutboxReplayer?
        if replaysAutomatically, let origin, let dataDirectory, OutboxDatabase.exists(at: dataDirectory), let database = try? OutboxDatabase.open(at: dataDirectory) {
            replayer = OutboxReplayer(
                database: database, origin: origin, retry: retry, isReachable: reachability.status.isReachable, makeOperation: makeOperation)
        }
        state.withLockedValue { state in
            state.observer = observer
            state.replayer = replayer
            state.makeReplay = makeOperation
        }
        replayer?.reachabilityChanged(reachability.status.isReachable)
    }

    /// Stops following reachability and replaying (the engine is gone). Held operations fail.
    func stop() {
        let (observer, replayer, held) = state.withLockedValue { state in
            state.isStopped = true
            defer { state.observer = nil; state.replayer = nil; state.held = [:]; state.makeReplay = nil }
            return (state.observer, state.replayer, Array(state.held.values))
        }
        observer?.cancel()
        replayer?.stop()
        for operation in held {
            operation.finish(.failure(NetworkError(.notConnected, "its engine was released while it waited for connectivity", url: operation.urlString)))
        }
    }

    // MARK: Reachability

    var reachabilityHandler: (@Sendable (ReachabilityStatus) -> Void)? {
        get { state.withLockedValue { $0.handler } }
        set { state.withLockedValue { $0.handler = newValue } }
    }

    /// Applies a status: the engine's width in the queue, held and waiting work, the replayer.
    func apply(_ status: ReachabilityStatus) {
        let (changed, released, replayer, handler) = state.withLockedValue { state in
            guard !state.isStopped, state.appliedStatus != status else { return (false, [NetworkOperation](), OutboxReplayer?.none, state.handler) }
            let isFirst = state.appliedStatus == nil
            state.appliedStatus = status
            var released: [NetworkOperation] = []
            if status.isReachable {
                released = Array(state.held.values).sorted { $0.id.rawValue < $1.id.rawValue }
                state.held = [:]
            }
            return (true, released, state.replayer, isFirst ? nil : state.handler)
        }
        guard changed else { return }
        queue.setLimit(concurrency.limit(for: status, wifiOnlyMode: wifiOnlyMode), forEngine: engineID)
        if status.isReachable {
            for operation in released { operation.enterQueue() }
        } else {
            takeWaitingWorkOut()
        }
        replayer?.reachabilityChanged(status.isReachable)
        if let handler { callbackQueue.async { handler(status) } }
    }

    /// What happens to an operation being enqueued. Reads the status now (so a change just made by
    /// ``ManualReachability/setStatus(_:)`` or the system is never missed).
    func admit(_ operation: NetworkOperation) -> Admission {
        let status = reachability.status
        apply(status)
        if status.isReachable { return .go }
        let (isFreezable, isReplay, timeout) = operation.storage.withLockedValue { ($0.isFreezable, $0.isReplay, $0.connectivityTimeout) }
        if isFreezable && !isReplay && dataDirectory != nil { return .freeze }
        if timeout != nil {
            hold(operation)
            return .held
        }
        return .fail(notConnected(operation))
    }

    private func notConnected(_ operation: NetworkOperation) -> NetworkError {
        NetworkError(.notConnected, "\(operation.requestURL?.host ?? "the host") cannot be reached (no route over an interface that is up)", url: operation.urlString)
    }

    /// The host went away: waiting work of this engine leaves the queue. Freezable operations are frozen,
    /// those that wait for connectivity are held, the others fail with `.notConnected`.
    private func takeWaitingWorkOut() {
        for operation in queue.operations where operation.context.engineID == engineID && operation.state == .waiting {
            operation.storage.withLockedValue { storage in
                if storage.isFreezable && !storage.isReplay && dataDirectory != nil {
                    storage.queueExit = .freeze
                } else if storage.connectivityTimeout != nil {
                    storage.queueExit = .hold
                } else {
                    storage.queueExit = .fail(notConnected(operation))
                }
            }
            queue.cancel(operation)
        }
    }

    /// Holds an operation until the host is reachable or its connectivity timeout passes.
    func hold(_ operation: NetworkOperation) {
        let timeout = operation.connectivityTimeout ?? .zero
        let isReachable = state.withLockedValue { state -> Bool in
            if state.appliedStatus?.isReachable == true { return true }
            state.held[operation.id] = operation
            return false
        }
        if isReachable {
            operation.enterQueue()
            return
        }
        Task { [weak self] in
            try? await Task.sleep(for: timeout)
            guard let self, self.state.withLockedValue({ $0.held.removeValue(forKey: operation.id) }) != nil else { return }
            operation.finish(.failure(NetworkError(
                .notConnected, "\(operation.requestURL?.host ?? "the host") could not be reached within \(timeout)", url: operation.urlString)))
        }
    }

    /// A held operation was cancelled.
    func cancelHeld(_ operation: NetworkOperation) {
        guard state.withLockedValue({ $0.held.removeValue(forKey: operation.id) }) != nil else { return }
        operation.finish(.failure(.cancelled(url: operation.urlString)))
    }

    // MARK: Outbox

    /// The outbox of the engine's data directory, opened on first use; `nil` without a data directory
    /// or when it cannot be opened.
    func outboxDatabase() -> OutboxDatabase? {
        guard let dataDirectory else { return nil }
        return try? OutboxDatabase.open(at: dataDirectory)
    }

    /// The engine's replayer, made on first need (only when the engine replays automatically, unless
    /// `creating` asks for one regardless, as a flush does).
    func replayer(creating: Bool = false) -> OutboxReplayer? {
        guard replaysAutomatically || creating, let origin, let database = outboxDatabase() else { return nil }
        let isReachable = reachability.status.isReachable
        let (replayer, isNew) = state.withLockedValue { state -> (OutboxReplayer?, Bool) in
            if state.isStopped { return (nil, false) }
            if let replayer = state.replayer { return (replayer, false) }
            guard let makeOperation = state.makeReplay else { return (nil, false) }
            let replayer = OutboxReplayer(database: database, origin: origin, retry: retry, isReachable: isReachable, makeOperation: makeOperation)
            state.replayer = replayer
            return (replayer, true)
        }
        // An automatic replayer starts at once; one made for a flush waits for the flush to claim.
        if isNew && replaysAutomatically { replayer?.reachabilityChanged(isReachable) }
        return replayer
    }

    /// A row was frozen: make sure it will be replayed.
    func outboxDidChange() {
        replayer()?.kick()
    }
}
