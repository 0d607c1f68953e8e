#if os(Linux) && canImport(Glibc)
import Dispatch
import Logging
import NIOConcurrencyHelpers

/// ``SystemReachability``'s monitor on Linux: re-evaluates the route to one host each time the shared
/// ``NetlinkWatcher`` hears the kernel announce a change.
///
/// An evaluation takes the interfaces (`getifaddrs`, classified from sysfs) and the kernel's route to each
/// known address of the host; at most one is pending per monitor. A host name is resolved apart from
/// that, so that a slow DNS server never delays noticing that a link went down: evaluations use the
/// addresses last resolved, and a lookup that finds new addresses triggers one more evaluation. A lookup
/// that fails keeps the addresses found before.
///
/// Every monitor of the process shares two serial queues, one for evaluations (a few system calls each)
/// and one for lookups (which may wait for DNS), so many monitors cost no more threads than one.
final class NetlinkReachabilityMonitor: PlatformReachabilityMonitor, NetlinkSubscriber {
    private enum Lookup {
        case idle
        case running
        /// Running, and something changed since it started: look up again when it finishes.
        case runningAgain
    }

    private struct State {
        /// The host's addresses; `nil` until a name resolves.
        var addresses: [RouteInspector.Address]?
        /// A lookup of the name has finished (a literal address needs none).
        var hasLookedUp: Bool
        var isEvaluationPending = false
        var lookup = Lookup.idle
        var token: Int?
        var isStopped = false
    }

    private let host: String
    /// Whether the host is a name (a literal address needs no lookup).
    private let isName: Bool
    private let logger: Logger
    private let classifier: InterfaceClassifier
    private let watcher: NetlinkWatcher
    private let onEvent: @Sendable (ReachabilityMonitorEvent) -> Void
    /// Where every monitor evaluates, in order.
    private static let evaluations = DispatchQueue(label: "courier.reachability.evaluation")
    /// Where every monitor looks its name up, one lookup at a time.
    private static let lookups = DispatchQueue(label: "courier.reachability.lookup")
    private let state: NIOLockedValueBox<State>

    /// - Parameters:
    ///   - host: A host name or a literal IPv4 or IPv6 address.
    ///   - logger: Where the monitor logs, at debug and trace level.
    ///   - classifier: How interfaces are classified; sysfs by default.
    ///   - watcher: The netlink watcher; the process's shared one by default.
    ///   - onEvent: Receives each observation, in order.
    init(
        host: String, logger: Logger, classifier: InterfaceClassifier = InterfaceClassifier(),
        watcher: NetlinkWatcher = .shared, onEvent: @escaping @Sendable (ReachabilityMonitorEvent) -> Void
    ) {
        self.host = host
        self.logger = logger
        self.classifier = classifier
        self.watcher = watcher
        self.onEvent = onEvent
        let literal = RouteInspector.resolve(host, numericOnly: true)
        isName = literal == nil
        state = NIOLockedValueBox(State(addresses: literal, hasLookedUp: literal != nil))
    }

    deinit {
        stop()
    }

    func start() {
        let token: Int
        do {
            token = try watcher.subscribe(self)
        } catch {
            logger.debug(
                "reachability monitor unavailable; reporting reachable",
                metadata: ["courier-host": "\(host)", "courier-error": "\(error)"])
            onEvent(.unavailable)
            return
        }
        let stopped = state.withLockedValue { state in
            state.token = token
            return state.isStopped
        }
        guard !stopped else { return watcher.unsubscribe(token) }
        // The first evaluation is synchronous, so the status is right when init returns; on the queue, so it
        // is ordered with the evaluations that changes trigger. A name is treated as not yet resolved.
        Self.evaluations.sync { evaluate() }
        if isName { scheduleLookup() }
    }

    func stop() {
        let token = state.withLockedValue { state in
            state.isStopped = true
            defer { state.token = nil }
            return state.token
        }
        if let token { watcher.unsubscribe(token) }
    }

    // MARK: NetlinkSubscriber

    func networkChanged() {
        scheduleEvaluation()
        if isName { scheduleLookup() }
    }

    func watcherFailed(_ error: NetlinkWatcher.Failure) {
        logger.debug(
            "reachability monitor failed; reporting reachable",
            metadata: ["courier-host": "\(host)", "courier-error": "\(error)"])
        state.withLockedValue { state in
            state.isStopped = true
            state.token = nil
        }
        onEvent(.unavailable)
    }

    // MARK: Evaluation

    private func scheduleEvaluation() {
        let shouldSchedule = state.withLockedValue { state in
            guard !state.isStopped, !state.isEvaluationPending else { return false }
            state.isEvaluationPending = true
            return true
        }
        guard shouldSchedule else { return }
        Self.evaluations.async { [weak self] in
            guard let self else { return }
            // Cleared before evaluating: a change from now on schedules another evaluation.
            let isStopped = state.withLockedValue { state in
                state.isEvaluationPending = false
                return state.isStopped
            }
            if !isStopped { evaluate() }
        }
    }

    /// Observes the interfaces and the route to the host's addresses; runs on `evaluations`.
    private func evaluate() {
        let (addresses, hasLookedUp) = state.withLockedValue { ($0.addresses, $0.hasLookedUp) }
        let snapshot = RouteInspector.snapshot(classifier: classifier)
        let route: ReachabilityStateMachine.RouteFacts
        if let addresses {
            route = .resolved(addresses.map { RouteInspector.hop(to: $0, in: snapshot) })
        } else if hasLookedUp {
            route = .unresolved(defaultRoute: RouteInspector.defaultRouteInterface(in: snapshot))
        } else {
            route = .resolving(defaultRoute: RouteInspector.defaultRouteInterface(in: snapshot))
        }
        logger.trace("reachability evaluated", metadata: ["courier-host": "\(host)", "courier-route": "\(route)"])
        onEvent(.observed(interfaces: snapshot.interfaces, route: route))
    }

    // MARK: Name lookup

    private func scheduleLookup() {
        let shouldStart = state.withLockedValue { state in
            guard !state.isStopped else { return false }
            switch state.lookup {
            case .idle:
                state.lookup = .running
                return true
            case .running, .runningAgain:
                state.lookup = .runningAgain
                return false
            }
        }
        guard shouldStart else { return }
        Self.lookups.async { [weak self] in self?.lookUp() }
    }

    /// Resolves the host until no change arrived during the last lookup; blocks on DNS.
    private func lookUp() {
        while true {
            let addresses = RouteInspector.resolve(host, numericOnly: false)
            if addresses == nil {
                logger.trace("reachability lookup failed", metadata: ["courier-host": "\(host)"])
            }
            let (changed, again) = state.withLockedValue { state -> (Bool, Bool) in
                // The first lookup always counts as a change: it turns "resolving" into an answer.
                var changed = !state.hasLookedUp
                state.hasLookedUp = true
                if let addresses, addresses != state.addresses {
                    state.addresses = addresses
                    changed = true
                }
                if state.lookup == .runningAgain, !state.isStopped {
                    state.lookup = .running
                    return (changed, true)
                }
                state.lookup = .idle
                return (changed, false)
            }
            if changed { scheduleEvaluation() }
            if !again { return }
        }
    }
}
#endif
