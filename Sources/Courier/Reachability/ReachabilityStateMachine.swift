/// What ``SystemReachability`` reports, decided from what the platform monitor observed: the interfaces,
/// the kernel's route to the host, and (with probes on) whether a TCP connection to the host succeeded.
///
/// A value with no I/O, no clock and no logging: each event returns an ``Action`` that says which status
/// to report (only when it differs from the last one reported) and when to probe. Probes are numbered by
/// a generation; a probe or timer from an older generation is stale and changes nothing.
struct ReachabilityStateMachine: Sendable {
    /// One network interface as the monitor saw it.
    struct InterfaceFacts: Sendable, Hashable {
        /// The interface's name (`eth0`, `wlan0`).
        var name: String
        /// Up and running (`IFF_UP` and `IFF_RUNNING`): it can carry traffic.
        var isUp: Bool
        /// The loopback interface.
        var isLoopback: Bool
        /// The kind of link (from ``InterfaceClassifier``).
        var kind: ReachabilityStatus.Interface
    }

    /// The kernel's routing decision for one address of the host.
    enum Hop: Sendable, Hashable {
        /// Traffic leaves through this interface.
        case interface(String)
        /// The address belongs to this machine: traffic goes over the loopback interface.
        case local
        /// No route.
        case none
    }

    /// What the monitor learned about the way to the host.
    enum RouteFacts: Sendable, Hashable {
        /// The host's addresses were known: the routing decision for each, in preference order.
        case resolved([Hop])
        /// The host name did not resolve (and never has). `defaultRoute` is the interface of the route
        /// to the internet, if there is one.
        case unresolved(defaultRoute: String?)
        /// The host name has not been looked up yet: decided as ``unresolved(defaultRoute:)``, but not a
        /// complete answer (the machine does not settle on it).
        case resolving(defaultRoute: String?)
    }

    /// What the owner must do after an event.
    struct Action: Sendable, Equatable {
        /// A status to hand to readers: it differs from the previous one.
        var report: ReachabilityStatus?
        /// A probe to start.
        var probe: ProbeCommand?
        /// The first complete answer is known (see ``ReachabilityStateMachine/isSettled``).
        var settled = false

        static let none = Action()
    }

    /// When to run a probe, and its generation (hand it back with the result).
    enum ProbeCommand: Sendable, Equatable {
        case now(generation: Int)
        case after(Duration, generation: Int)
    }

    private enum ProbeState: Sendable, Equatable {
        /// Probes are off, or the route says unreachable.
        case off
        case inFlight(attempt: Int)
        case backingOff(attempt: Int)
        case confirmed
    }

    private enum State: Sendable, Equatable {
        /// Nothing observed yet.
        case initial
        /// The platform monitor could not start: reachable, over an unknown link, for good.
        case unavailable
        /// The route gives `route`; with probes on, `probe` says whether a connection confirmed it.
        case routed(route: ReachabilityStatus, probe: ProbeState)
        /// Stopped: nothing changes any more.
        case stopped
    }

    /// The first delay between failed probes; it doubles up to ``maximumBackoff``.
    static let initialBackoff = Duration.milliseconds(500)
    /// The longest delay between failed probes.
    static let maximumBackoff = Duration.seconds(30)

    private let isProbing: Bool
    private var state = State.initial
    private var generation = 0

    /// The status last reported. Before the first observation it is the optimistic
    /// `.reachable(via: .other)`: a monitor that knows nothing yet must not hold requests back.
    private(set) var status = ReachabilityStatus.reachable(via: .other)

    /// Whether the first complete answer is known: a route was observed and, when it says reachable and
    /// probes are on, the first probe finished. Once settled, always settled.
    private(set) var isSettled = false

    /// The last observation was made before the host name was first looked up.
    private var isAwaitingLookup = false

    /// - Parameter probing: Whether a route that says reachable is confirmed with a TCP connection.
    init(probing: Bool) {
        isProbing = probing
    }

    // MARK: Events

    /// The monitor observed the interfaces and the route to the host (Linux).
    mutating func observed(interfaces: [InterfaceFacts], route: RouteFacts) -> Action {
        if case .resolving = route { isAwaitingLookup = true } else { isAwaitingLookup = false }
        return routeEvaluated(Self.status(interfaces: interfaces, route: route))
    }

    /// The platform's route to the host gives this status (Linux: ``status(interfaces:route:)``;
    /// Apple platforms: the path monitor's path).
    mutating func routeEvaluated(_ route: ReachabilityStatus) -> Action {
        let previous: ReachabilityStatus?
        let previousProbe: ProbeState
        switch state {
        case .stopped, .unavailable:
            // Unavailable is final: an evaluation that was under way when the monitor failed changes nothing.
            return .none
        case .initial:
            previous = nil
            previousProbe = .off
        case .routed(let oldRoute, let oldProbe):
            previous = oldRoute
            previousProbe = oldProbe
        }
        var action = Action.none
        guard isProbing, route.isReachable else {
            if previousProbe != .off { generation += 1 }
            state = .routed(route: route, probe: .off)
            action.report = report(route)
            action.settled = settle()
            return action
        }
        // Probing and the route says reachable. The same route with a probe under way or confirmed needs
        // nothing new; any other change (new interface, back from unreachable, a probe failing) restarts
        // the probe with the shortest backoff.
        if route == previous, previousProbe == .confirmed || previousProbe == .inFlight(attempt: 0) {
            return .none
        }
        generation += 1
        state = .routed(route: route, probe: .inFlight(attempt: 0))
        action.probe = .now(generation: generation)
        // A change of link while reachable shows at once; a comeback from unreachable waits for the probe.
        if previous == nil || status.isReachable {
            action.report = report(route)
        }
        return action
    }

    /// A probe of `generation` finished.
    mutating func probeFinished(succeeded: Bool, generation probeGeneration: Int) -> Action {
        guard probeGeneration == generation, case .routed(let route, .inFlight(let attempt)) = state else {
            return .none
        }
        var action = Action.none
        if succeeded {
            state = .routed(route: route, probe: .confirmed)
            action.report = report(route)
        } else {
            state = .routed(route: route, probe: .backingOff(attempt: attempt + 1))
            action.report = report(.unreachable)
            action.probe = .after(Self.backoff(afterFailures: attempt + 1), generation: generation)
        }
        action.settled = settle()
        return action
    }

    /// The backoff delay of `generation` is over.
    mutating func probeTimerFired(generation timerGeneration: Int) -> Action {
        guard timerGeneration == generation, case .routed(let route, .backingOff(let attempt)) = state else {
            return .none
        }
        state = .routed(route: route, probe: .inFlight(attempt: attempt))
        return Action(probe: .now(generation: generation))
    }

    /// The platform monitor cannot run (no netlink socket, say): report reachable over an unknown link
    /// from now on, so that requests are never held back by a missing monitor.
    mutating func monitorUnavailable() -> Action {
        guard state != .stopped else { return .none }
        generation += 1
        state = .unavailable
        return Action(report: report(.reachable(via: .other)), settled: settle())
    }

    /// The owner stopped: later events change nothing.
    mutating func stop() {
        generation += 1
        state = .stopped
    }

    // MARK: Decisions

    /// The delay before the next probe after `failures` failed probes in a row (`failures >= 1`):
    /// ``initialBackoff`` doubling up to ``maximumBackoff``.
    static func backoff(afterFailures failures: Int) -> Duration {
        var delay = initialBackoff
        for _ in 1 ..< max(1, failures) {
            delay *= 2
            if delay >= maximumBackoff { return maximumBackoff }
        }
        return delay
    }

    /// The status that follows from the interfaces and the route.
    ///
    /// - A resolved host is reachable through the first address whose outgoing interface is up and
    ///   running, over that interface's kind (`.other` for loopback and for addresses of this machine).
    /// - A name that does not resolve is unreachable only when no non-loopback interface is up: DNS may
    ///   simply be down. Otherwise it is reachable via the default route's interface, or, with no
    ///   default route, via the first up interface by name.
    static func status(interfaces: [InterfaceFacts], route: RouteFacts) -> ReachabilityStatus {
        switch route {
        case .resolved(let hops):
            for hop in hops {
                switch hop {
                case .none:
                    continue
                case .local:
                    return .reachable(via: .other)
                case .interface(let name):
                    guard let interface = interfaces.first(where: { $0.name == name }), interface.isUp else { continue }
                    return .reachable(via: interface.isLoopback ? .other : interface.kind)
                }
            }
            return .unreachable
        case .unresolved(let defaultRoute), .resolving(let defaultRoute):
            let up = interfaces.filter { $0.isUp && !$0.isLoopback }.sorted { $0.name < $1.name }
            guard let first = up.first else { return .unreachable }
            let preferred = up.first { $0.name == defaultRoute } ?? first
            return .reachable(via: preferred.kind)
        }
    }

    // MARK: Helpers

    /// Records `new` and returns it when it differs from the last status reported (readers of
    /// ``SystemReachability/statusUpdates()`` hear only changes).
    private mutating func report(_ new: ReachabilityStatus) -> ReachabilityStatus? {
        guard new != status else { return nil }
        status = new
        return new
    }

    /// Marks the machine settled; returns whether this event settled it.
    private mutating func settle() -> Bool {
        guard !isSettled, !isAwaitingLookup else { return false }
        switch state {
        case .unavailable, .routed(_, .off), .routed(_, .confirmed), .routed(_, .backingOff):
            isSettled = true
            return true
        case .initial, .stopped, .routed(_, .inFlight):
            return false
        }
    }
}
