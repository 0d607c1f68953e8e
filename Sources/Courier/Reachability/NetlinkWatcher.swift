#if os(Linux) && canImport(Glibc)
import Foundation
import Glibc
import NIOConcurrencyHelpers

/// Something that wants to hear that the kernel's interfaces, addresses or routes changed.
protocol NetlinkSubscriber: AnyObject, Sendable {
    /// Something changed (one call per batch of kernel messages). Called on the watcher's thread:
    /// return quickly.
    func networkChanged()
    /// The watcher failed and will not report again.
    func watcherFailed(_ error: NetlinkWatcher.Failure)
}

/// One thread per process that blocks on a `NETLINK_ROUTE` socket and tells every live subscriber when
/// the kernel announces a change of link, address or route. Nothing is polled: the thread sleeps in
/// `poll(2)` on the netlink socket and on a wake-up socket, with no timeout.
///
/// The thread starts with the first subscriber and ends when the last one leaves: ``unsubscribe(_:)``
/// writes a byte to the wake-up socket, and the thread closes its descriptors on the way out. Subscribers
/// are held weakly.
final class NetlinkWatcher: Sendable {
    /// The watcher of this process.
    static let shared = NetlinkWatcher()

    /// The multicast groups: `RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR | RTMGRP_IPV4_ROUTE
    /// | RTMGRP_IPV6_ROUTE` (from `linux/rtnetlink.h`, which Glibc does not export).
    static let groups: UInt32 = 0x1 | 0x10 | 0x100 | 0x40 | 0x400

    /// The name of the watcher's thread.
    static let threadName = "courier-netlink"

    /// A system call that failed.
    struct Failure: Error, CustomStringConvertible {
        /// The call, such as `socket(AF_NETLINK)`.
        var operation: String
        /// Its `errno`.
        var code: Int32

        var description: String { "\(operation): \(String(cString: strerror(code)))" }
    }

    private struct Subscriber {
        weak var value: (any NetlinkSubscriber)?
    }

    /// The descriptors of the running thread. Only the thread closes them, after this entry has left
    /// `State.running` (under the lock), so nobody writes to a closed descriptor.
    private struct Running {
        var id: Int
        var netlink: Int32
        var wakeRead: Int32
        var wakeWrite: Int32
    }

    private struct State {
        var subscribers: [Int: Subscriber] = [:]
        var nextToken = 0
        var running: Running?
        var nextRunID = 0
    }

    private let state = NIOLockedValueBox(State())
    private let netlinkProtocol: Int32

    /// - Parameter netlinkProtocol: The netlink protocol; `NETLINK_ROUTE` (0) but in tests, which pass an
    ///   unsupported one to see the watcher fail to open.
    init(netlinkProtocol: Int32 = 0) {
        self.netlinkProtocol = netlinkProtocol
    }

    /// Adds a subscriber, starting the thread if it is not running.
    /// - Returns: A token for ``unsubscribe(_:)``.
    /// - Throws: ``Failure`` when the netlink socket cannot be opened (a sandbox, say).
    func subscribe(_ subscriber: any NetlinkSubscriber) throws(Failure) -> Int {
        let result: Result<Int, Failure> = state.withLockedValue { state in
            if state.running == nil {
                switch openDescriptors(id: state.nextRunID) {
                case .failure(let failure): return .failure(failure)
                case .success(let running):
                    state.nextRunID += 1
                    state.running = running
                    Thread { [self] in run(running) }.start()
                }
            }
            let token = state.nextToken
            state.nextToken += 1
            state.subscribers[token] = Subscriber(value: subscriber)
            return .success(token)
        }
        return try result.get()
    }

    /// Removes a subscriber; the thread ends when none is left.
    func unsubscribe(_ token: Int) {
        state.withLockedValue { state in
            state.subscribers[token] = nil
            if state.subscribers.isEmpty { Self.requestStop(&state) }
        }
    }

    /// Whether the thread is running (for tests).
    var isRunning: Bool { state.withLockedValue { $0.running != nil } }

    // MARK: The thread

    private static func requestStop(_ state: inout State) {
        guard let running = state.running else { return }
        var byte: UInt8 = 1
        _ = send(running.wakeWrite, &byte, 1, Int32(MSG_DONTWAIT))
        state.running = nil
    }

    private func openDescriptors(id: Int) -> Result<Running, Failure> {
        let flags = Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
        let netlink = socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | flags, netlinkProtocol)
        guard netlink >= 0 else { return .failure(Failure(operation: "socket(AF_NETLINK)", code: errno)) }
        // struct sockaddr_nl { sa_family_t nl_family; unsigned short nl_pad; __u32 nl_pid; __u32 nl_groups; }
        var address = sockaddr_storage()
        withUnsafeMutableBytes(of: &address) { raw in
            raw.storeBytes(of: sa_family_t(AF_NETLINK), toByteOffset: 0, as: sa_family_t.self)
            raw.storeBytes(of: Self.groups, toByteOffset: 8, as: UInt32.self)
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(netlink, $0, 12) }
        }
        guard bound == 0 else {
            let failure = Failure(operation: "bind(AF_NETLINK)", code: errno)
            close(netlink)
            return .failure(failure)
        }
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | flags, 0, &pair) == 0 else {
            let failure = Failure(operation: "socketpair", code: errno)
            close(netlink)
            return .failure(failure)
        }
        return .success(Running(id: id, netlink: netlink, wakeRead: pair[0], wakeWrite: pair[1]))
    }

    private func run(_ running: Running) {
        Self.nameCurrentThread(Self.threadName)
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var failure: Failure?
        loop: while true {
            var descriptors = [
                pollfd(fd: running.netlink, events: Int16(POLLIN), revents: 0),
                pollfd(fd: running.wakeRead, events: Int16(POLLIN), revents: 0),
            ]
            // No timeout: the thread sleeps until the kernel or unsubscribe() has something to say.
            if poll(&descriptors, 2, -1) < 0 {
                if errno == EINTR { continue }
                failure = Failure(operation: "poll", code: errno)
                break
            }
            if descriptors[1].revents != 0 { break }
            // Drain the whole batch, then tell the subscribers once.
            drain: while true {
                let count = buffer.withUnsafeMutableBytes { recv(running.netlink, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                if count > 0 { continue }
                switch count < 0 ? errno : 0 {
                case EAGAIN, EWOULDBLOCK: break drain
                // The socket's buffer overflowed and messages were lost: a change happened, re-read it all.
                case EINTR, ENOBUFS: continue
                default:
                    failure = Failure(operation: "recv(AF_NETLINK)", code: count < 0 ? errno : EPIPE)
                    break loop
                }
            }
            if !notifySubscribers() { break }
        }
        let subscribers = state.withLockedValue { state -> [any NetlinkSubscriber] in
            if state.running?.id == running.id { state.running = nil }
            guard failure != nil else { return [] }
            // Nobody will hear from this thread again; the next subscriber starts a new one.
            defer { state.subscribers = [:] }
            return state.subscribers.values.compactMap(\.value)
        }
        close(running.netlink)
        close(running.wakeRead)
        close(running.wakeWrite)
        if let failure {
            for subscriber in subscribers { subscriber.watcherFailed(failure) }
        }
    }

    /// Names the calling thread (as `ps -L`, `top -H` and /proc show it). Glibc's module does not export
    /// `pthread_setname_np`, and Foundation's `Thread.name` is not reliably applied on Linux (set before
    /// `start()` it is ignored; set from the new thread it races with `start()`), so the name is written
    /// where the kernel keeps it.
    private static func nameCurrentThread(_ name: String) {
        let descriptor = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        _ = name.withCString { write(descriptor, $0, strlen($0)) }
        close(descriptor)
    }

    /// Tells every live subscriber; returns false when none is left (the thread should end).
    private func notifySubscribers() -> Bool {
        let live = state.withLockedValue { state -> [any NetlinkSubscriber]? in
            state.subscribers = state.subscribers.filter { $0.value.value != nil }
            if state.subscribers.isEmpty {
                Self.requestStop(&state)
                return nil
            }
            return state.subscribers.values.compactMap(\.value)
        }
        guard let live else { return false }
        for subscriber in live { subscriber.networkChanged() }
        return true
    }
}
#endif
