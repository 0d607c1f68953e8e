import Foundation
import NIOConcurrencyHelpers
import Testing

/// Tier 3, the acceptance test of the reachability issue: a real link goes down and comes back in a
/// network namespace, and `courier reachability --watch`, running inside that namespace, reports each
/// change within a second, without polling.
///
/// Needs root, iproute2 and permission to create network namespaces; skipped otherwise.
@Suite("Reachability over a real link change", .serialized)
struct LinkChangeTests {
    // MARK: The tests

    @Test(.enabled(if: Namespace.isAvailable, "needs root, iproute2 (`ip`) and permission to run `ip netns add`"), .timeLimit(.minutes(1)))
    func watchReportsLinkDownAndUpWithinASecond() async throws {
        let namespace = try Namespace()
        defer { namespace.destroy() }
        let watch = try LineReader(namespace.command(CLITests.binary.path, "reachability", namespace.outerAddress, "--watch"))
        defer { watch.terminate() }

        let first = await watch.line(after: 0, within: .seconds(10))
        #expect(first?.text == "reachable via wired", "\(watch.lines.map(\.text)) \(watch.errors)")
        guard first != nil else { return }

        // Idle: the netlink thread sleeps in poll(2) and wakes for nothing; the process uses ~no CPU.
        try await Task.sleep(for: .milliseconds(300))
        let idleBefore = watch.usage()
        try await Task.sleep(for: .seconds(1))
        let idleAfter = watch.usage()
        #expect(idleBefore.netlinkWakeups > 0, "the courier-netlink thread was not found")
        #expect(idleAfter.netlinkWakeups == idleBefore.netlinkWakeups, "the netlink thread woke while nothing happened")
        #expect(idleAfter.cpuTicks - idleBefore.cpuTicks <= 2, "CPU ticks while idle for 1 s: \(idleAfter.cpuTicks - idleBefore.cpuTicks)")

        let downAt = ContinuousClock.now
        try namespace.ip("link", "set", namespace.innerLink, "down")
        let down = await watch.line(after: 1, within: .seconds(5))
        #expect(down?.text == "unreachable", "\(watch.lines.map(\.text))")
        let upAt = ContinuousClock.now
        try namespace.ip("link", "set", namespace.innerLink, "up")
        let up = await watch.line(after: 2, within: .seconds(5))
        #expect(up?.text == "reachable via wired", "\(watch.lines.map(\.text))")

        guard let down, let up else { return }
        let downLatency = down.time - downAt, upLatency = up.time - upAt
        print("LinkChangeTests: link down -> 'unreachable' in \(downLatency); link up -> 'reachable via wired' in \(upLatency)")
        #expect(downLatency < .seconds(1), "link down reported after \(downLatency)")
        #expect(upLatency < .seconds(1), "link up reported after \(upLatency)")
        #expect(watch.lines.count == 3, "one line per change: \(watch.lines.map(\.text))")
    }

    @Test(.enabled(if: Namespace.isAvailable, "needs root, iproute2 (`ip`) and permission to run `ip netns add`"), .timeLimit(.minutes(1)))
    func insideTheNamespaceOnlyTheLinkIsReachable() async throws {
        let namespace = try Namespace()
        defer { namespace.destroy() }
        func status(_ host: String) async throws -> String {
            let command = namespace.command(CLITests.binary.path, "reachability", host)
            let run = try await offThePool { try Shell.run(command) }
            return run.output.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        #expect(try await status(namespace.outerAddress) == "reachable via wired")
        #expect(try await status(namespace.innerAddress) == "reachable via other", "an address of this machine")
        #expect(try await status("8.8.8.8") == "unreachable", "no default route in the namespace")
        #expect(try await status("127.0.0.1") == "unreachable", "the namespace's loopback is down")
        try namespace.ip("link", "set", "lo", "up")
        #expect(try await status("127.0.0.1") == "reachable via other")
    }
}

// MARK: Helpers

/// A network namespace joined to this one by a veth pair: 10.231.N.1 outside, 10.231.N.2 inside.
/// Names are unique per run; ``destroy()`` removes everything and is safe to call after a failed setup.
struct Namespace {
    static let ip = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"].first { FileManager.default.isExecutableFile(atPath: $0) }

    /// Whether namespaces can be made here (checked once, by making one); says why not on stderr.
    static let isAvailable: Bool = {
        let reason: String?
        #if os(Linux)
        if geteuid() != 0 {
            reason = "not root"
        } else if ip == nil {
            reason = "`ip` (iproute2) is not installed"
        } else {
            let name = "courier-check-\(UInt32.random(in: 0 ... .max))"
            let added = try? Shell.run([ip!, "netns", "add", name])
            _ = try? Shell.run([ip!, "netns", "del", name])
            reason = added?.status == 0 ? nil : "`ip netns add` failed: \(added?.output ?? "could not run ip")"
        }
        #else
        reason = "network namespaces are Linux-only"
        #endif
        if let reason { FileHandle.standardError.write(Data("LinkChangeTests skipped: \(reason)\n".utf8)) }
        return reason == nil
    }()

    let name: String
    let outerLink: String
    let innerLink: String
    let outerAddress: String
    let innerAddress: String

    init() throws {
        let tag = String(UInt32.random(in: 0 ... 0xFF_FFFF), radix: 16)
        let subnet = Int.random(in: 1 ... 254)
        name = "courier-reach-\(tag)"
        outerLink = "crA\(tag)"
        innerLink = "crB\(tag)"
        outerAddress = "10.231.\(subnet).1"
        innerAddress = "10.231.\(subnet).2"
        do {
            try Self.ip(["netns", "add", name])
            try Self.ip(["link", "add", outerLink, "type", "veth", "peer", "name", innerLink])
            try Self.ip(["link", "set", innerLink, "netns", name])
            // No IPv6 inside: its link-local address finishes duplicate address detection a second or two
            // after the link comes up, a real kernel announcement that would wake the watcher during the
            // idle measurement. (Missing on a kernel without IPv6, hence the `|| true`.)
            _ = try Shell.run(command("/bin/sh", "-c", """
                for f in all default \(innerLink); do echo 1 > /proc/sys/net/ipv6/conf/$f/disable_ipv6; done 2>/dev/null || true
                """))
            try Self.ip(["addr", "add", "\(outerAddress)/24", "dev", outerLink])
            try Self.ip(["link", "set", outerLink, "up"])
            try ip("addr", "add", "\(innerAddress)/24", "dev", innerLink)
            try ip("link", "set", innerLink, "up")
        } catch {
            destroy()
            throw error
        }
    }

    /// Runs `ip ARGUMENTS` inside the namespace.
    func ip(_ arguments: String...) throws {
        try Self.ip(["-n", name] + arguments)
    }

    /// A command line that runs `arguments` inside the namespace.
    func command(_ arguments: String...) -> [String] {
        [Self.ip ?? "ip", "netns", "exec", name] + arguments
    }

    /// Removes the namespace (and the inner link with it) and the outer link.
    func destroy() {
        _ = try? Shell.run([Self.ip ?? "ip", "netns", "del", name])
        _ = try? Shell.run([Self.ip ?? "ip", "link", "del", outerLink])
    }

    private static func ip(_ arguments: [String]) throws {
        let run = try Shell.run([ip ?? "ip"] + arguments)
        guard run.status == 0 else { throw Shell.Failure(command: arguments.joined(separator: " "), output: run.output) }
    }
}

enum Shell {
    struct Failure: Error, CustomStringConvertible {
        var command: String
        var output: String
        var description: String { "ip \(command): \(output)" }
    }

    /// Runs a command to the end; returns its status and its standard output and error together.
    static func run(_ command: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}

/// A running command whose standard output is read line by line, each line stamped on arrival.
final class LineReader: Sendable {
    struct Line: Sendable {
        var text: String
        var time: ContinuousClock.Instant
    }

    private let process: Process
    private let received = NIOLockedValueBox<(lines: [Line], errors: String)>(([], ""))

    init(_ command: [String]) throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let received = received
        // One thread per stream, blocked in read(2) until data or the end.
        Thread {
            var pending = Data()
            while case let data = out.fileHandleForReading.availableData, !data.isEmpty {
                let now = ContinuousClock.now
                pending.append(data)
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let text = String(decoding: pending[pending.startIndex ..< newline], as: UTF8.self)
                    pending.removeSubrange(pending.startIndex ... newline)
                    received.withLockedValue { $0.lines.append(Line(text: text, time: now)) }
                }
            }
        }.start()
        Thread {
            while case let data = err.fileHandleForReading.availableData, !data.isEmpty {
                received.withLockedValue { $0.errors += String(decoding: data, as: UTF8.self) }
            }
        }.start()
    }

    var lines: [Line] { received.withLockedValue { $0.lines } }
    var errors: String { received.withLockedValue { $0.errors } }

    /// The line at index `index` (0 is the first), once it has arrived.
    func line(after index: Int, within timeout: Duration) async -> Line? {
        guard await eventually(timeout: timeout, { lines.count > index }) else { return nil }
        return lines[index]
    }

    /// The process's CPU time in clock ticks, and how often its netlink thread has woken up.
    func usage() -> (cpuTicks: Int, netlinkWakeups: Int) {
        let pid = process.processIdentifier
        let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
        // Fields after "(comm) ": state is field 3, utime 14, stime 15.
        let fields = stat.split(separator: ")").last?.split(separator: " ") ?? []
        let ticks = fields.count > 12 ? (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0) : 0
        var wakeups = 0
        for task in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? [] {
            let comm = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/comm", encoding: .utf8)) ?? ""
            guard comm.hasPrefix("courier-netlink") else { continue }
            let status = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8)) ?? ""
            for line in status.split(separator: "\n") where line.hasPrefix("voluntary_ctxt_switches:") {
                wakeups += Int(line.split(separator: ":").last?.trimmingCharacters(in: .whitespaces) ?? "") ?? 0
            }
        }
        return (ticks, wakeups)
    }

    func terminate() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }
}
