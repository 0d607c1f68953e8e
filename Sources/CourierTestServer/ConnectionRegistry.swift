import NIOConcurrencyHelpers
import NIOCore

/// Tracks the open client connections of a ``TestServer`` so that shutdown can close them.
final class ConnectionRegistry: Sendable {
    private struct State: Sendable {
        var isShuttingDown = false
        var channels: [ObjectIdentifier: any Channel] = [:]
        var accepted = 0
        var maxOpen = 0
    }

    /// Guarded by a pthread-based lock (understood by the thread sanitizer).
    private let state = NIOLockedValueBox(State())

    /// Creates an empty registry.
    init() {}

    /// Whether ``beginShutdown()`` has been called. Connections closed from then on are
    /// closed by the server, not by the client.
    var isShuttingDown: Bool { state.withLockedValue { $0.isShuttingDown } }

    /// How many connections were accepted, how many are open, and the most open at once.
    var counts: (accepted: Int, open: Int, maxOpen: Int) { state.withLockedValue { ($0.accepted, $0.channels.count, $0.maxOpen) } }

    /// Registers a freshly accepted connection and removes it again once it closes.
    /// If the server is already shutting down the connection is closed immediately.
    func register(_ channel: any Channel) {
        let key = ObjectIdentifier(channel)
        let accepted = state.withLockedValue { state in
            guard !state.isShuttingDown else { return false }
            state.channels[key] = channel
            state.accepted += 1
            state.maxOpen = max(state.maxOpen, state.channels.count)
            return true
        }
        guard accepted else {
            channel.close(promise: nil)
            return
        }
        channel.closeFuture.whenComplete { [self] _ in
            self.state.withLockedValue { state in
                state.channels[key] = nil
            }
        }
    }

    /// Marks the server as shutting down and returns the connections that are still open
    /// (on repeated calls: those that have not finished closing yet).
    func beginShutdown() -> [any Channel] {
        state.withLockedValue { state in
            state.isShuttingDown = true
            return Array(state.channels.values)
        }
    }
}
