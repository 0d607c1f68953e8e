import Testing
@testable import Courier

/// Tier 1: what SystemReachability reports, event by event, with no sockets and no sleeps.
@Suite("ReachabilityStateMachine")
struct ReachabilityStateMachineTests {
    typealias Machine = ReachabilityStateMachine
    typealias Facts = ReachabilityStateMachine.InterfaceFacts

    static let lo = Facts(name: "lo", isUp: true, isLoopback: true, kind: .other)
    static let eth0 = Facts(name: "eth0", isUp: true, isLoopback: false, kind: .wired)
    static let wlan0 = Facts(name: "wlan0", isUp: true, isLoopback: false, kind: .wifi)
    static let wwan0 = Facts(name: "wwan0", isUp: true, isLoopback: false, kind: .cellular)
    static func down(_ facts: Facts) -> Facts {
        var facts = facts
        facts.isUp = false
        return facts
    }

    // MARK: The decision

    @Test func aRouteThroughAnUpInterfaceIsReachableOverItsKind() {
        let interfaces = [Self.lo, Self.eth0, Self.wlan0, Self.wwan0]
        #expect(Machine.status(interfaces: interfaces, route: .resolved([.interface("eth0")])) == .reachable(via: .wired))
        #expect(Machine.status(interfaces: interfaces, route: .resolved([.interface("wlan0")])) == .reachable(via: .wifi))
        #expect(Machine.status(interfaces: interfaces, route: .resolved([.interface("wwan0")])) == .reachable(via: .cellular))
        #expect(Machine.status(interfaces: interfaces, route: .resolved([.interface("lo")])) == .reachable(via: .other))
        #expect(Machine.status(interfaces: interfaces, route: .resolved([.local])) == .reachable(via: .other))
    }

    @Test func aRouteThroughADownOrUnknownInterfaceIsUnreachable() {
        #expect(Machine.status(interfaces: [Self.lo, Self.down(Self.eth0)], route: .resolved([.interface("eth0")])) == .unreachable)
        #expect(Machine.status(interfaces: [Self.lo], route: .resolved([.interface("eth0")])) == .unreachable)
        #expect(Machine.status(interfaces: [Self.lo, Self.eth0], route: .resolved([.none])) == .unreachable)
        #expect(Machine.status(interfaces: [Self.lo, Self.eth0], route: .resolved([])) == .unreachable)
    }

    @Test func theFirstAddressWithAWorkingRouteWins() {
        let interfaces = [Self.lo, Self.down(Self.eth0), Self.wlan0]
        // An IPv6 address with no route, then the IPv4 one over Wi-Fi.
        #expect(Machine.status(interfaces: interfaces, route: .resolved([.none, .interface("eth0"), .interface("wlan0")])) == .reachable(via: .wifi))
    }

    @Test func anUnresolvedNameIsReachableWhileAnyRealInterfaceIsUp() {
        // DNS may be down: reachable via the default route's interface.
        #expect(Machine.status(interfaces: [Self.lo, Self.eth0, Self.wlan0], route: .unresolved(defaultRoute: "wlan0")) == .reachable(via: .wifi))
        // No default route: the first up interface by name.
        #expect(Machine.status(interfaces: [Self.lo, Self.wlan0, Self.eth0], route: .unresolved(defaultRoute: nil)) == .reachable(via: .wired))
        // A default route over an interface that is down does not count.
        #expect(Machine.status(interfaces: [Self.lo, Self.down(Self.wlan0), Self.wwan0], route: .unresolved(defaultRoute: "wlan0")) == .reachable(via: .cellular))
        // Only loopback up: unreachable.
        #expect(Machine.status(interfaces: [Self.lo, Self.down(Self.eth0)], route: .unresolved(defaultRoute: nil)) == .unreachable)
        #expect(Machine.status(interfaces: [Self.lo, Self.eth0], route: .resolving(defaultRoute: "eth0")) == .reachable(via: .wired))
    }

    // MARK: Reports and dedup

    @Test func reportsOnlyChanges() {
        var machine = Machine(probing: false)
        #expect(machine.status == .reachable(via: .other), "optimistic before the first observation")
        #expect(!machine.isSettled)
        let first = machine.observed(interfaces: [Self.lo, Self.eth0], route: .resolved([.interface("eth0")]))
        #expect(first == Machine.Action(report: .reachable(via: .wired), settled: true))
        #expect(machine.isSettled)
        // A change of the network that changes nothing for this host: no report.
        #expect(machine.observed(interfaces: [Self.lo, Self.eth0, Self.wlan0], route: .resolved([.interface("eth0")])) == .none)
        #expect(machine.observed(interfaces: [Self.lo, Self.down(Self.eth0)], route: .resolved([.interface("eth0")])) == Machine.Action(report: .unreachable))
        #expect(machine.observed(interfaces: [Self.lo], route: .resolved([.none])) == .none)
        #expect(machine.observed(interfaces: [Self.lo, Self.wlan0], route: .resolved([.interface("wlan0")])) == Machine.Action(report: .reachable(via: .wifi)))
        #expect(machine.status == .reachable(via: .wifi))
    }

    @Test func aFirstObservationEqualToThePlaceholderSettlesWithoutAReport() {
        var machine = Machine(probing: false)
        #expect(machine.observed(interfaces: [Self.lo], route: .resolved([.local])) == Machine.Action(settled: true))
        #expect(machine.status == .reachable(via: .other))
    }

    @Test func aNameSettlesOnlyAfterItsFirstLookup() {
        var machine = Machine(probing: false)
        #expect(machine.observed(interfaces: [Self.lo, Self.eth0], route: .resolving(defaultRoute: "eth0")) == Machine.Action(report: .reachable(via: .wired)))
        #expect(!machine.isSettled)
        #expect(machine.observed(interfaces: [Self.lo, Self.eth0], route: .resolved([.none])) == Machine.Action(report: .unreachable, settled: true))
        #expect(machine.isSettled)
    }

    @Test func anUnavailableMonitorIsReachableForGood() {
        var machine = Machine(probing: true)
        #expect(machine.monitorUnavailable() == Machine.Action(settled: true), "already the placeholder: nothing to report")
        #expect(machine.status == .reachable(via: .other))
        #expect(machine.observed(interfaces: [], route: .resolved([.none])) == .none, "unavailable is final")
        #expect(machine.routeEvaluated(.unreachable) == .none)

        var afterAnswers = Machine(probing: false)
        _ = afterAnswers.routeEvaluated(.unreachable)
        #expect(afterAnswers.monitorUnavailable() == Machine.Action(report: .reachable(via: .other)))
    }

    @Test func aStoppedMachineIgnoresEverything() {
        var machine = Machine(probing: false)
        _ = machine.routeEvaluated(.reachable(via: .wifi))
        machine.stop()
        #expect(machine.routeEvaluated(.unreachable) == .none)
        #expect(machine.monitorUnavailable() == .none)
        #expect(machine.status == .reachable(via: .wifi))
    }

    // MARK: Probes

    @Test func theFirstReachableRouteIsReportedAndProbed() {
        var machine = Machine(probing: true)
        let first = machine.routeEvaluated(.reachable(via: .wired))
        #expect(first == Machine.Action(report: .reachable(via: .wired), probe: .now(generation: 1)))
        #expect(!machine.isSettled, "settles when the first probe answers")
        #expect(machine.probeFinished(succeeded: true, generation: 1) == Machine.Action(settled: true))
        #expect(machine.status == .reachable(via: .wired))
        // The same route again with a confirmed probe: nothing to do.
        #expect(machine.routeEvaluated(.reachable(via: .wired)) == .none)
    }

    @Test func aFailedProbeReportsUnreachableAndBacksOffExponentially() {
        var machine = Machine(probing: true)
        _ = machine.routeEvaluated(.reachable(via: .wifi))
        var delays: [Duration] = []
        for attempt in 0 ..< 9 {
            let failed = machine.probeFinished(succeeded: false, generation: 1)
            guard case .after(let delay, let generation) = failed.probe else {
                Issue.record("attempt \(attempt): expected a backoff, got \(failed)")
                return
            }
            #expect(failed.report == (attempt == 0 ? .unreachable : nil))
            #expect(failed.settled == (attempt == 0))
            delays.append(delay)
            #expect(machine.probeTimerFired(generation: generation) == Machine.Action(probe: .now(generation: generation)))
        }
        #expect(delays == [.milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(16), .seconds(30), .seconds(30), .seconds(30)])
        // Success brings it back.
        #expect(machine.probeFinished(succeeded: true, generation: 1) == Machine.Action(report: .reachable(via: .wifi)))
    }

    @Test func aChangeOfTheNetworkRestartsTheProbeAndStaleResultsAreIgnored() {
        var machine = Machine(probing: true)
        _ = machine.routeEvaluated(.reachable(via: .wired))
        _ = machine.probeFinished(succeeded: false, generation: 1)
        _ = machine.probeTimerFired(generation: 1)
        _ = machine.probeFinished(succeeded: false, generation: 1)  // second failure: backing off 1 s
        // A netlink change: the same route, but the backoff restarts with a probe now.
        let restarted = machine.routeEvaluated(.reachable(via: .wired))
        #expect(restarted == Machine.Action(probe: .now(generation: 2)), "still unreachable until the probe connects")
        // The old timer and an old probe result change nothing.
        #expect(machine.probeTimerFired(generation: 1) == .none)
        #expect(machine.probeFinished(succeeded: true, generation: 1) == .none)
        #expect(machine.status == .unreachable)
        // The new probe fails: the backoff starts again at 0.5 s.
        #expect(machine.probeFinished(succeeded: false, generation: 2) == Machine.Action(probe: .after(.milliseconds(500), generation: 2)))
        #expect(machine.probeTimerFired(generation: 2) == Machine.Action(probe: .now(generation: 2)))
        #expect(machine.probeFinished(succeeded: true, generation: 2) == Machine.Action(report: .reachable(via: .wired)))
    }

    @Test func aComebackWaitsForTheProbeButALinkChangeShowsAtOnce() {
        var machine = Machine(probing: true)
        _ = machine.routeEvaluated(.reachable(via: .wifi))
        _ = machine.probeFinished(succeeded: true, generation: 1)
        // Over to Ethernet while reachable: reported at once, probed again.
        #expect(machine.routeEvaluated(.reachable(via: .wired)) == Machine.Action(report: .reachable(via: .wired), probe: .now(generation: 2)))
        // The route goes away: unreachable, and the probe under way is stale.
        #expect(machine.routeEvaluated(.unreachable) == Machine.Action(report: .unreachable))
        #expect(machine.probeFinished(succeeded: true, generation: 2) == .none)
        // The route comes back: not reported until the probe connects.
        #expect(machine.routeEvaluated(.reachable(via: .wired)) == Machine.Action(probe: .now(generation: 4)))
        #expect(machine.status == .unreachable)
        #expect(machine.probeFinished(succeeded: true, generation: 4) == Machine.Action(report: .reachable(via: .wired)))
    }

    @Test func withoutProbingThereAreNoProbes() {
        var machine = Machine(probing: false)
        #expect(machine.routeEvaluated(.reachable(via: .wired)).probe == nil)
        #expect(machine.probeFinished(succeeded: false, generation: 0) == .none)
        #expect(machine.probeTimerFired(generation: 0) == .none)
    }

    @Test func backoffDoublesFromHalfASecondToThirtySeconds() {
        #expect(Machine.backoff(afterFailures: 1) == .milliseconds(500))
        #expect(Machine.backoff(afterFailures: 2) == .seconds(1))
        #expect(Machine.backoff(afterFailures: 7) == .seconds(30))
        #expect(Machine.backoff(afterFailures: 1_000) == .seconds(30))
    }
}
