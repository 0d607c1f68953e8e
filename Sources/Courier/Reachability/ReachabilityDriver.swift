import Dispatch
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// What a platform monitor tells ``ReachabilityDriver``.
enum ReachabilityMonitorEvent: Sendable {
    /// Linux: the interfaces and the kernel's route to the host.
    case observed(interfaces: [ReachabilityStateMachine.InterfaceFacts], route: ReachabilityStateMachine.RouteFacts)
    /// A platform that answers with a status directly (Apple's path monitor).
    case path(ReachabilityStatus)
    /// The monitor cannot run; this is final.
    case unavailable
}

/// A platform's way of watching the network for one host; it reports through the handler given at init.
protocol PlatformReachabilityMonitor: AnyObject, Sendable {
    /// Starts watching; may deliver the first event before returning.
    func start()
    /// Stops watching; no event follows (one already under way may still arrive and is ignored).
    func stop()
}

/// The part of ``SystemReachability`` that is the same on every platform: it runs the
/// ``ReachabilityStateMachine`` behind a lock, hands its reports to the readers of `statusUpdates()`,
/// and runs its probes (a TCP connection through SwiftNIO) and their backoff timers.
final class ReachabilityDriver: Sendable {
    /// Connects to `host:port` within `timeout`; calls back with whether it connected.
    typealias Prober = @Sendable (_ host: String, _ port: Int, _ timeout: Duration, _ completion: @escaping @Sendable (Bool) -> Void) -> Void

    private struct State {
        var machine: ReachabilityStateMachine
        var streams: [Int: AsyncStream<ReachabilityStatus>.Continuation] = [:]
        var nextKey = 0
        var settleWaiters: [CheckedContinuation<ReachabilityStatus, Never>] = []
        var isStopped = false
    }

    /// How long a probe may take to connect.
    static let probeTimeout = Duration.seconds(2)

    private let host: String
    private let port: Int?
    private let logger: Logger
    private let prober: Prober
    private let state: NIOLockedValueBox<State>

    /// - Parameters:
    ///   - host: The host, for probes and log metadata.
    ///   - port: The port to probe; probes are off without one.
    ///   - probes: Whether to confirm a reachable route with a TCP connection.
    ///   - logger: Where changes are logged, at debug level.
    ///   - prober: How to probe; a TCP connection through SwiftNIO unless a test says otherwise.
    init(host: String, port: Int?, probes: Bool, logger: Logger, prober: @escaping Prober = ReachabilityDriver.tcpProbe) {
        self.host = host
        self.port = port
        self.logger = logger
        self.prober = prober
        state = NIOLockedValueBox(State(machine: ReachabilityStateMachine(probing: probes && port != nil)))
    }

    /// The status last reported.
    var status: ReachabilityStatus { state.withLockedValue { $0.machine.status } }

    /// The status now, then each change, until the reader stops or the driver stops.
    func statusUpdates() -> AsyncStream<ReachabilityStatus> {
        let (stream, continuation) = AsyncStream.makeStream(of: ReachabilityStatus.self, bufferingPolicy: .bufferingNewest(16))
        state.withLockedValue { state in
            continuation.yield(state.machine.status)
            guard !state.isStopped else {
                continuation.finish()
                return
            }
            let key = state.nextKey
            state.nextKey += 1
            state.streams[key] = continuation
            continuation.onTermination = { [weak self] _ in _ = self?.state.withLockedValue { $0.streams.removeValue(forKey: key) } }
        }
        return stream
    }

    /// The status once the first complete answer is known (or the driver stopped).
    func settledStatus() async -> ReachabilityStatus {
        await withCheckedContinuation { continuation in
            let now: ReachabilityStatus? = state.withLockedValue { state in
                if state.machine.isSettled || state.isStopped { return state.machine.status }
                state.settleWaiters.append(continuation)
                return nil
            }
            if let now { continuation.resume(returning: now) }
        }
    }

    /// Feeds a monitor's event to the state machine and runs what it asks for.
    func handle(_ event: ReachabilityMonitorEvent) {
        apply { machine in
            switch event {
            case .observed(let interfaces, let route): machine.observed(interfaces: interfaces, route: route)
            case .path(let status): machine.routeEvaluated(status)
            case .unavailable: machine.monitorUnavailable()
            }
        }
    }

    /// Stops: ends every stream, answers every `settledStatus()` waiter, ignores later events and probes.
    func stop() {
        let (streams, waiters, status) = state.withLockedValue { state in
            state.isStopped = true
            state.machine.stop()
            defer {
                state.streams = [:]
                state.settleWaiters = []
            }
            return (Array(state.streams.values), state.settleWaiters, state.machine.status)
        }
        for stream in streams { stream.finish() }
        for waiter in waiters { waiter.resume(returning: status) }
    }

    // MARK: Running actions

    private func apply(_ event: (inout ReachabilityStateMachine) -> ReachabilityStateMachine.Action) {
        let (action, waiters) = state.withLockedValue { state -> (ReachabilityStateMachine.Action, [CheckedContinuation<ReachabilityStatus, Never>]) in
            guard !state.isStopped else { return (.none, []) }
            let action = event(&state.machine)
            // Yielding never runs reader code synchronously: safe under the lock, and it keeps the order.
            if let report = action.report {
                for stream in state.streams.values { stream.yield(report) }
            }
            guard action.settled else { return (action, []) }
            defer { state.settleWaiters = [] }
            return (action, state.settleWaiters)
        }
        if let report = action.report {
            logger.debug("reachability changed", metadata: ["courier-host": "\(host)", "courier-reachability": "\(report)"])
        }
        if !waiters.isEmpty {
            let status = self.status
            for waiter in waiters { waiter.resume(returning: status) }
        }
        switch action.probe {
        case nil:
            break
        case .now(let generation):
            runProbe(generation: generation)
        case .after(let delay, let generation):
            logger.trace("reachability probe backing off", metadata: ["courier-host": "\(host)", "courier-delay": "\(delay)"])
            DispatchQueue.global().asyncAfter(deadline: .now() + delay.timeInterval) { [weak self] in
                self?.apply { $0.probeTimerFired(generation: generation) }
            }
        }
    }

    private func runProbe(generation: Int) {
        guard let port else { return }
        prober(host, port, Self.probeTimeout) { [weak self] connected in
            guard let self else { return }
            logger.trace("reachability probe finished", metadata: ["courier-host": "\(host)", "courier-connected": "\(connected)"])
            apply { $0.probeFinished(succeeded: connected, generation: generation) }
        }
    }

    /// A TCP connection to `host:port` on SwiftNIO's shared event loops; closed as soon as it is made.
    static let tcpProbe: Prober = { host, port, timeout, completion in
        ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.nanoseconds(Int64(timeout / .nanoseconds(1))))
            .connect(host: host, port: port)
            .whenComplete { result in
                switch result {
                case .success(let channel):
                    channel.close(promise: nil)
                    completion(true)
                case .failure:
                    completion(false)
                }
            }
    }
}

extension Duration {
    /// The duration as a Dispatch interval, to the nanosecond.
    fileprivate var timeInterval: DispatchTimeInterval {
        .nanoseconds(Int(self / .nanoseconds(1)))
    }
}
