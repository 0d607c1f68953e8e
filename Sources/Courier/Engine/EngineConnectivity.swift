import Foundation
import HTTPTypes
import Logging
import NIOConcurrencyHelpers
import Synchronization

/// An engine's link to the network: it follows the engine's ``Reachability``, sets the engine's width
/// in the shared queue, decides what happens to an operation enqueued while the host is unreachable,
/// holds operations waiting for connectivity, and owns the engine's outbox replayer.
///
/// It lives as long as the engine or any of the engine's operations (queued, held, frozen or being
/// replayed) refers to it, so releasing an engine never strands the work it started: a frozen
/// operation keeps its engine's replayer going until its outcome is known. The replayer refers back
/// to it weakly; when the last reference goes, `deinit` stops following reachability and replaying,
/// and removes the engine's width from the queue.
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
        var held: [OperationID: (operation: NetworkOperation, timer: Task<Void, Never>?)] = [:]
        var observer: Task<Void, Never>?
        var replayer: OutboxReplayer?
        var handler: (@Sendable (ReachabilityStatus) -> Void)?
        /// Builds the replay of a row (set by ``start(makeOperation:)``).
        var makeReplay: (@Sendable (OutboxRecord) -> NetworkOperation?)?
        var isStopped = false
    }

    let engineID: UInt64
    /// The engine's group in the queue (engines that reach the network the same way share one).
    let link: LinkGroup
    let group: UInt64
    let queue: NetworkQueue
    let reachability: any Reachability
    let concurrency: ConnectionConcurrency
    let wifiOnlyMode: Bool
    /// Where the engine's outbox is; `nil` for none.
    let outboxLocation: OutboxLocation?
    let retry: OutboxRetry
    let replaysAutomatically: Bool
    let callbackQueue: DispatchQueue
    /// The engine's logger: told when the outbox is found damaged and set aside.
    let logger: Logger
    /// `scheme://host:port` of the engine, or `nil` when its base URL is invalid.
    let origin: String?
    /// The engine's request pipeline, as its outbox rows name it; `nil` when its base URL is invalid.
    let pipeline: OutboxPipeline?
    private let state = NIOLockedValueBox(State())
    /// The status last applied (``code(of:)``; 0 before the first), read without the lock by ``admit(_:)``.
    private let appliedCode = Atomic<UInt8>(0)

    init(
        engineID: UInt64, queue: NetworkQueue, baseURL: URL?, configuration: NetworkEngine.Configuration,
        defaultHeaders: HTTPFields
    ) {
        self.engineID = engineID
        self.queue = queue
        let origin = baseURL.map(OutboxRecord.origin(of:))
        self.origin = origin
        self.pipeline = origin.map { OutboxPipeline(origin: $0, configuration: configuration, defaultHeaders: defaultHeaders) }
        self.concurrency = configuration.concurrency
        self.wifiOnlyMode = configuration.wifiOnlyMode
        self.outboxLocation = configuration.outbox
        self.retry = configuration.outboxRetry
        self.replaysAutomatically = configuration.replaysOutbox
        self.callbackQueue = configuration.callbackQueue
        self.logger = configuration.logger
        self.reachability = configuration.reachability
            ?? Self.systemReachability(host: baseURL?.host ?? "", port: baseURL?.port, logger: configuration.logger)
        self.link = LinkGroup(
            queue: ObjectIdentifier(queue), source: ObjectIdentifier(reachability), concurrency: configuration.concurrency,
            wifiOnlyMode: configuration.wifiOnlyMode)
        self.group = link.acquire()
    }

    /// Starts following reachability and, when the data directory already holds an outbox (frozen by
    /// an earlier run), replaying it. `makeOperation` builds the replay of a row; it must not keep this
    /// object alive (it is handed `self`), or the engine's connectivity would never go away.
    func start(makeOperation: @escaping @Sendable (OutboxRecord, EngineConnectivity) -> NetworkOperation) {
        let updates = reachability.statusUpdates()
        let observer = Task { [weak self] in
            for await status in updates {
                guard let self else { return }
                self.apply(status)
            }
        }
        let makeReplay: @Sendable (OutboxRecord) -> NetworkOperation? = { [weak self] record in
            self.map { makeOperation(record, $0) }
        }
        state.withLockedValue { state in
            state.observer = observer
            state.makeReplay = makeReplay
        }
        // An outbox left by an earlier run is looked for and opened on the outbox's I/O queue: making an
        // engine never waits for the disk or a server.
        guard replaysAutomatically, origin != nil, let outboxLocation else { return }
        outboxLocation.io.async { [weak self] in self?.startReplaying(failures: 0) }
    }

    /// Opens the outbox, if there is one, and starts its replay. An outbox that cannot be opened now (its
    /// server down or slow to answer, a database busy) is tried again, sooner at first, then every 30 s,
    /// for as long as the engine lives: an instance started during an outage replays once it is over,
    /// without freezing anything first.
    private func startReplaying(failures: Int) {
        guard let outboxLocation, !state.withLockedValue({ $0.isStopped }), outboxLocation.exists() else { return }
        do {
            _ = try openOutbox()
        } catch {
            // Said at warning level the first time and every tenth (a wrong name or password never heals by
            // itself; a server restarting does), at debug level otherwise.
            let level: Logger.Level = failures % 10 == 0 ? .warning : .debug
            logger.log(level: level, "courier outbox cannot be opened yet; trying again", metadata: [
                "courier-error": "\(error.message)", "courier-attempt": "\(failures + 1)"])
            let delay = min(30, 0.5 * Double(1 << min(failures, 6)))
            // Not on the I/O queue: every freeze of the process waits behind what runs there.
            DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + delay) { [weak self] in
                self?.startReplaying(failures: failures + 1)
            }
            return
        }
        _ = replayer()
    }

    deinit {
        // Nothing refers to the engine's connectivity any more: no engine, no operation queued, held,
        // frozen or being replayed. (Held operations refer to it, so none is left here.)
        let (observer, replayer) = state.withLockedValue { state in
            state.isStopped = true
            return (state.observer, state.replayer)
        }
        observer?.cancel()
        replayer?.stop()
        if link.release() { queue.setLimit(nil, forGroup: group, version: LinkGroup.nextVersion()) }
    }

    // MARK: Reachability

    var reachabilityHandler: (@Sendable (ReachabilityStatus) -> Void)? {
        get { state.withLockedValue { $0.handler } }
        set { state.withLockedValue { $0.handler = newValue } }
    }

    /// Applies the live status: the engine's width in the queue, held and waiting work, the replayer.
    ///
    /// The status is read now, not taken from the update that triggered the call: the stream buffers
    /// values, and applying an old one after a newer one (two threads, or `admit` racing the observer)
    /// would fail or park work although the host is reachable. The queue's width carries a version
    /// taken under the lock, so widths applied out of order still end with the newest.
    func apply(_ reported: ReachabilityStatus? = nil) {
        let (changed, released, replayer, handler, status, version) = state.withLockedValue { state in
            let (status, version) = LinkGroup.versioned { reachability.status }
            guard !state.isStopped, state.appliedStatus != status else {
                return (false, [NetworkOperation](), OutboxReplayer?.none, state.handler, status, version)
            }
            let isFirst = state.appliedStatus == nil
            state.appliedStatus = status
            appliedCode.store(Self.code(of: status), ordering: .releasing)
            var released: [NetworkOperation] = []
            if status.isReachable {
                for (_, entry) in state.held { entry.timer?.cancel() }
                released = state.held.values.map(\.operation).sorted { $0.id.rawValue < $1.id.rawValue }
                state.held = [:]
            }
            return (true, released, state.replayer, isFirst ? nil : state.handler, status, version)
        }
        guard changed else { return }
        queue.setLimit(concurrency.limit(for: status, wifiOnlyMode: wifiOnlyMode), forGroup: group, version: version)
        if status.isReachable {
            for operation in released { operation.enterQueue() }
        } else {
            takeWaitingWorkOut()
        }
        // Read again now: of two applies racing, the one that calls last passes the newest value.
        replayer?.reachabilityChanged(reachability.status.isReachable)
        if let handler { callbackQueue.async { handler(status) } }
    }

    /// A status as a small number: 1 unreachable, 2 and up reachable over each kind of link.
    private static func code(of status: ReachabilityStatus) -> UInt8 {
        switch status {
        case .unreachable: 1
        case .reachable(.wifi): 2
        case .reachable(.cellular): 3
        case .reachable(.wired): 4
        case .reachable(.other): 5
        }
    }

    /// Whether the status last applied says the host cannot be reached.
    private var isUnreachable: Bool { state.withLockedValue { $0.appliedStatus.map { !$0.isReachable } ?? false } }

    /// What happens to an operation being enqueued. Reads the status now (so a change just made by
    /// ``ManualReachability/setStatus(_:)`` or the system is never missed).
    func admit(_ operation: NetworkOperation) -> Admission {
        let status = reachability.status
        // The status read is the one applied already (every request but those after a change): nothing to
        // apply, and no lock to take for it. A changed status goes through ``apply(_:)`` as before.
        if Self.code(of: status) != appliedCode.load(ordering: .acquiring) { apply() }
        if status.isReachable { return .go }
        let (isFreezable, isReplay, timeout) = operation.storage.withLockedValue { ($0.isFreezable, $0.isReplay, $0.connectivityTimeout) }
        if isFreezable && !isReplay && outboxLocation != nil { return .freeze }
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
    /// those that wait for connectivity are held, the others fail with `.notConnected`. Operations still
    /// waiting for dependencies stay (they are not ready: freezing one would send it without its
    /// dependencies); each is looked at again when its dependencies are met (``dependenciesMet(_:)``).
    private func takeWaitingWorkOut() {
        for operation in queue.operations where operation.context.engineID == engineID {
            takeOut(operation)
        }
    }

    /// An operation's dependencies finished: if its host is unreachable, it leaves the queue now.
    func dependenciesMet(_ operation: NetworkOperation) {
        guard isUnreachable else { return }
        takeOut(operation)
    }

    private func takeOut(_ operation: NetworkOperation) {
        guard operation.state == .waiting, !queue.isBlocked(operation), isUnreachable else { return }
        // Only if its request has not started meanwhile (decided under the queue's lock): a request on
        // the wire is left to finish, never aborted and then frozen or failed.
        operation.storage.withLockedValue { storage in
            if storage.isFreezable && !storage.isReplay && outboxLocation != nil {
                storage.queueExit = .freeze
            } else if storage.connectivityTimeout != nil {
                storage.queueExit = .hold
            } else {
                storage.queueExit = .fail(notConnected(operation))
            }
        }
        queue.cancelIfNotStarted(operation)
    }

    /// Holds an operation until the host is reachable or its connectivity timeout passes.
    func hold(_ operation: NetworkOperation) {
        let timeout = operation.connectivityTimeout ?? .zero
        let isReachable = state.withLockedValue { state -> Bool in
            if state.appliedStatus?.isReachable == true { return true }
            state.held[operation.id] = (operation, nil)
            return false
        }
        if isReachable {
            operation.enterQueue()
            return
        }
        let id = operation.id
        let timer = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            guard !Task.isCancelled, let self, let held = self.state.withLockedValue({ $0.held.removeValue(forKey: id) }) else { return }
            held.operation.finish(.failure(NetworkError(
                .notConnected, "\(held.operation.requestURL?.host ?? "the host") could not be reached within \(timeout)",
                url: held.operation.urlString)))
        }
        let attached = state.withLockedValue { state -> Bool in
            guard state.held[id] != nil else { return false }
            state.held[id]?.timer = timer
            return true
        }
        if !attached { timer.cancel() }
        // A cancel that came while the operation was being held found nothing to take out.
        if operation.isCancelled { cancelHeld(operation) }
    }

    /// A held operation was cancelled: it finishes now, and its timer goes with it.
    func cancelHeld(_ operation: NetworkOperation) {
        guard let held = state.withLockedValue({ $0.held.removeValue(forKey: operation.id) }) else { return }
        held.timer?.cancel()
        operation.finish(.failure(.cancelled(url: operation.urlString)))
    }

    /// The operations held for connectivity, for cancellation by the queue's predicates.
    var heldOperations: [NetworkOperation] { state.withLockedValue { $0.held.values.map(\.operation) } }

    // MARK: Outbox

    /// The engine's outbox, opened on first use; `nil` without one or when it cannot be opened.
    func outboxDatabase() -> (any OutboxStore)? {
        try? openOutbox()
    }

    /// The engine's outbox, opened on first use; `nil` without one.
    /// - Throws: ``NetworkError/Code/outboxUnavailable`` when it cannot be opened (a damaged SQLite one is
    ///   set aside and a fresh one made instead: that is reported, not thrown).
    func openOutbox() throws(NetworkError) -> (any OutboxStore)? {
        guard let outboxLocation else { return nil }
        return try outboxLocation.open(logger)
    }

    /// The engine's replayer, made on first need (only when the engine replays automatically, unless
    /// `creating` asks for one regardless, as a flush does).
    func replayer(creating: Bool = false) -> OutboxReplayer? {
        guard replaysAutomatically || creating, let pipeline, let database = outboxDatabase() else { return nil }
        let isReachable = reachability.status.isReachable
        let (replayer, isNew) = state.withLockedValue { state -> (OutboxReplayer?, Bool) in
            if state.isStopped { return (nil, false) }
            if let replayer = state.replayer { return (replayer, false) }
            guard let makeOperation = state.makeReplay else { return (nil, false) }
            let replayer = OutboxReplayer(database: database, pipeline: pipeline, retry: retry, isReachable: isReachable, makeOperation: makeOperation)
            database.listeners.register(replayer)
            state.replayer = replayer
            return (replayer, true)
        }
        // An automatic replayer starts at once; one made for a flush waits for the flush to claim.
        if isNew && replaysAutomatically { replayer?.reachabilityChanged(isReachable) }
        return replayer
    }

    /// A request of this engine got an answer: the host is there (loopback or a host whose route never
    /// goes down may never look unreachable), so a replay waiting out a backoff goes now.
    func hostAnswered() {
        state.withLockedValue { $0.replayer }?.hostAnswered()
    }

    /// A row was frozen: make sure it will be replayed.
    func outboxDidChange() {
        replayer()?.kick()
    }
}
