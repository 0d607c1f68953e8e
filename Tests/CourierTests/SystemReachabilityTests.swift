import CourierTestServer
import Foundation
import NIOConcurrencyHelpers
import Testing
@testable import Courier

/// Tier 2 and 3: SystemReachability over a fake monitor, over the real one, and with real probes.
/// Serialized: some tests count this process's threads and descriptors.
@Suite("SystemReachability", .serialized)
struct SystemReachabilityTests {
    /// A monitor the test drives.
    final class FakeMonitor: PlatformReachabilityMonitor {
        let onEvent: @Sendable (ReachabilityMonitorEvent) -> Void
        let calls = Counter()

        init(onEvent: @escaping @Sendable (ReachabilityMonitorEvent) -> Void) { self.onEvent = onEvent }
        func start() { calls.hit("start") }
        func stop() { calls.hit("stop") }
        func send(_ event: ReachabilityMonitorEvent) { onEvent(event) }
    }

    /// A SystemReachability over a fake monitor.
    static func fake(
        probes: Bool = false, prober: @escaping ReachabilityDriver.Prober = { _, _, _, done in done(true) }
    ) -> (SystemReachability, FakeMonitor) {
        var monitor: FakeMonitor?
        let reachability = SystemReachability(host: "api.example.com", port: 443, probes: probes, logger: .courierSilent, prober: prober) {
            _, _, onEvent in
            let fake = FakeMonitor(onEvent: onEvent)
            monitor = fake
            return fake
        }
        return (reachability, monitor!)
    }

    /// Reads `count` statuses from a stream.
    static func first(_ count: Int, of stream: AsyncStream<ReachabilityStatus>) async -> [ReachabilityStatus] {
        var statuses: [ReachabilityStatus] = []
        for await status in stream {
            statuses.append(status)
            if statuses.count == count { break }
        }
        return statuses
    }

    // MARK: Over a fake monitor

    @Test func updatesStartWithTheCurrentStatusThenEveryChangeInOrder() async {
        let (reachability, monitor) = Self.fake()
        #expect(monitor.calls.count("start") == 1)
        let updates = reachability.statusUpdates()
        for status: ReachabilityStatus in [.reachable(via: .wifi), .unreachable, .unreachable, .reachable(via: .cellular), .reachable(via: .cellular)] {
            monitor.send(.path(status))
        }
        #expect(await Self.first(4, of: updates) == [.reachable(via: .other), .reachable(via: .wifi), .unreachable, .reachable(via: .cellular)])
        // A new reader starts with the status now.
        #expect(await Self.first(1, of: reachability.statusUpdates()) == [.reachable(via: .cellular)])
        #expect(reachability.status == .reachable(via: .cellular))
    }

    @Test func stopAndReleaseEndTheMonitorAndTheStreams() async {
        var (reachability, monitor): (SystemReachability?, FakeMonitor) = Self.fake()
        monitor.send(.path(.reachable(via: .wired)))
        let updates = reachability!.statusUpdates()
        reachability!.stop()
        var seen: [ReachabilityStatus] = []
        for await status in updates { seen.append(status) }
        #expect(seen == [.reachable(via: .wired)], "the stream ends after stop()")
        #expect(monitor.calls.count("stop") == 1)
        monitor.send(.path(.unreachable))
        #expect(reachability!.status == .reachable(via: .wired), "events after stop() change nothing")
        #expect(await Self.first(5, of: reachability!.statusUpdates()) == [.reachable(via: .wired)])
        reachability = nil
        #expect(monitor.calls.count("stop") == 2, "releasing stops the monitor too")
    }

    @Test func anUnavailableMonitorReportsReachableOverAnUnknownLink() async {
        let (reachability, monitor) = Self.fake()
        monitor.send(.path(.unreachable))
        monitor.send(.unavailable)
        #expect(reachability.status == .reachable(via: .other))
        #expect(await reachability.settledStatus() == .reachable(via: .other))
        monitor.send(.path(.unreachable))
        #expect(reachability.status == .reachable(via: .other), "for good")
    }

    @Test(.timeLimit(.minutes(1)))
    func failedProbesReportUnreachableAndRetryWithBackoff() async {
        let attempts = Recorder<ContinuousClock.Instant>()
        let (reachability, monitor) = Self.fake(probes: true) { _, _, _, done in
            attempts.append(.now)
            done(attempts.all.count >= 3)  // fails twice, then connects
        }
        let updates = reachability.statusUpdates()
        monitor.send(.path(.reachable(via: .wifi)))
        #expect(await Self.first(4, of: updates) == [.reachable(via: .other), .reachable(via: .wifi), .unreachable, .reachable(via: .wifi)])
        let times = attempts.all
        #expect(times.count == 3)
        if times.count == 3 {
            #expect(times[1] - times[0] >= .milliseconds(450), "first retry after 0.5 s")
            #expect(times[2] - times[1] >= .milliseconds(950), "then after 1 s")
        }
        #expect(await reachability.settledStatus() == .reachable(via: .wifi))
    }

    @Test func probesConnectToARealServer() async throws {
        // A port outside the ephemeral range: nothing else can take it while the server is away.
        let port = try await TestServer.vacantPort()
        let server = try await TestServer.start(port: port)
        let open = SystemReachability(host: "127.0.0.1", port: port, probes: true)
        #expect(await open.settledStatus() == .reachable(via: .other))
        try await server.shutdown()

        // Nothing listens any more: the probe is refused.
        let closed = SystemReachability(host: "127.0.0.1", port: port, probes: true)
        #expect(await closed.settledStatus() == .unreachable)
        // A server comes back on that port: the next retry (0.5 s later) finds it.
        let again = try await TestServer.start(port: port)
        defer { Task { try? await again.shutdown() } }
        var comeback = closed.statusUpdates().makeAsyncIterator()
        // The stream starts with the status now: still unreachable, or (on a slow machine, the retry
        // already ran) reachable; either way reachable comes.
        var seen = await comeback.next()
        if seen == .unreachable { seen = await comeback.next() }
        #expect(seen == .reachable(via: .other))
    }

    #if os(Linux)
    // MARK: The real monitor (Linux)

    @Test func loopbackIsReachableViaOther() async {
        let reachability = SystemReachability(host: "127.0.0.1")
        #expect(reachability.status == .reachable(via: .other), "known when init returns")
        #expect(await Self.first(1, of: reachability.statusUpdates()) == [.reachable(via: .other)])
        #expect(await SystemReachability(host: "localhost").settledStatus() == .reachable(via: .other))
    }

    @Test func withoutNetlinkItLogsAtDebugAndReportsReachable() async {
        let logs = LogRecorder()
        // An unsupported netlink protocol fails to open, as netlink does in a sandbox.
        let broken = NetlinkWatcher(netlinkProtocol: 31)
        let reachability = SystemReachability(
            host: "fe80::1", port: nil, probes: false, logger: logs.logger(), prober: ReachabilityDriver.tcpProbe
        ) { host, logger, onEvent in
            NetlinkReachabilityMonitor(host: host, logger: logger, watcher: broken, onEvent: onEvent)
        }
        #expect(reachability.status == .reachable(via: .other), "even for an address with no route")
        #expect(await reachability.settledStatus() == .reachable(via: .other))
        #expect(!broken.isRunning)
        let record = logs.all.first { $0.message == "reachability monitor unavailable; reporting reachable" }
        #expect(record?.level == .debug)
        #expect(record?.metadata["courier-host"] == "fe80::1")
        #expect(record?.metadata["courier-error"]?.hasPrefix("socket(AF_NETLINK): ") == true, "\(String(describing: record))")
    }

    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/proc/net/if_inet6"), "needs IPv6"))
    func bracketedAddressesAreAddresses() async {
        #expect(SystemReachability(host: "[::1]").status == .reachable(via: .other))
        #expect(SystemReachability(host: "[::1]").host == "[::1]")
    }

    @Test func anAddressWithoutARouteIsUnreachable() async {
        // A link-local address without a scope: the kernel has no route for it.
        let reachability = SystemReachability(host: "fe80::1")
        #expect(reachability.status == .unreachable)
        #expect(await reachability.settledStatus() == .unreachable)
        #expect(await Self.first(1, of: reachability.statusUpdates()) == [.unreachable])
        reachability.stop()
        reachability.stop()
    }

    @Test func aNameThatDoesNotResolveFollowsTheDefaultRoute() async {
        let internet = SystemReachability(host: "8.8.8.8").status
        let name = await SystemReachability(host: "courier-reachability-test.invalid").settledStatus()
        if internet.isReachable {
            #expect(name == internet, "DNS may be down: reachable over the default route's interface")
        } else {
            #expect(name.interface != .other)
        }
    }

    @Test func fiftyMonitorsShareOneThreadAndLeakNothing() async {
        // Settle the process first (the first monitor's lazy statics), and let the watcher threads of
        // earlier tests finish closing their sockets: each one closes them as it exits.
        _ = SystemReachability(host: "127.0.0.1")
        #expect(await eventually(timeout: .seconds(5)) {
            ProcessResources.threads(named: NetlinkWatcher.threadName) == 0 && ProcessResources.netlinkSockets(groups: NetlinkWatcher.groups) == 0
        })
        let descriptorsBefore = ProcessResources.openDescriptorCount()

        var monitors: [SystemReachability] = (0 ..< 50).map { SystemReachability(host: $0.isMultiple(of: 2) ? "127.0.0.1" : "fe80::1") }
        #expect(ProcessResources.netlinkSockets(groups: NetlinkWatcher.groups) == 1, "one shared netlink socket")
        #expect(await eventually(timeout: .seconds(5)) { ProcessResources.threads(named: NetlinkWatcher.threadName) == 1 },
                "\(ProcessResources.threadNames()) running=\(NetlinkWatcher.shared.isRunning)")
        #expect(monitors.filter { $0.status == .reachable(via: .other) }.count == 25)
        monitors[0].stop()
        monitors.removeAll()

        #expect(await eventually(timeout: .seconds(5)) { ProcessResources.threads(named: NetlinkWatcher.threadName) == 0 }, "the thread ends with the last monitor")
        #expect(await eventually(timeout: .seconds(5)) { ProcessResources.netlinkSockets(groups: NetlinkWatcher.groups) == 0 })
        // A parallel test's engine may hold a monitor for a moment (engines watch the system by default).
        #expect(await eventually(timeout: .seconds(5)) { !NetlinkWatcher.shared.isRunning })
        // Other suites may run meanwhile and hold a few descriptors; a leak per monitor would show 50.
        #expect(await eventually(timeout: .seconds(5)) { ProcessResources.openDescriptorCount() <= descriptorsBefore + 5 },
                "\(ProcessResources.openDescriptorCount()) descriptors open, \(descriptorsBefore) before")

        // And it starts again for the next monitor.
        let next = SystemReachability(host: "127.0.0.1")
        #expect(NetlinkWatcher.shared.isRunning)
        next.stop()
        // An engine of a test running beside this one may hold a monitor for a moment: it stops with
        // the last monitor, whoever that is.
        #expect(await eventually(timeout: .seconds(10)) { !NetlinkWatcher.shared.isRunning })
    }
    #endif
}

#if os(Linux)
/// This process's threads and descriptors, from /proc.
enum ProcessResources {
    static func openDescriptorCount() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
    }

    static func threadNames() -> [String] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.map { ((try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8)) ?? "?").trimmingCharacters(in: .whitespacesAndNewlines) }
    }

    /// Threads whose name (`comm`) is `name`.
    static func threads(named name: String) -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.filter { task in
            let comm = try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)
            return comm?.trimmingCharacters(in: .whitespacesAndNewlines) == name
        }.count
    }

    /// Open `NETLINK_ROUTE` sockets of this process bound to exactly these multicast groups.
    static func netlinkSockets(groups: UInt32) -> Int {
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        let inodes = Set(descriptors.compactMap { descriptor -> String? in
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(descriptor)"),
                  target.hasPrefix("socket:[") else { return nil }
            return String(target.dropFirst("socket:[".count).dropLast())
        })
        // sk Eth Pid Groups Rmem Wmem Dump Locks Drops Inode
        let table = (try? String(contentsOfFile: "/proc/self/net/netlink", encoding: .utf8)) ?? ""
        return table.split(separator: "\n").dropFirst().filter { line in
            let columns = line.split(separator: " ", omittingEmptySubsequences: true)
            return columns.count >= 10 && columns[1] == "0" && UInt32(columns[3], radix: 16) == groups && inodes.contains(String(columns[9]))
        }.count
    }
}
#endif
