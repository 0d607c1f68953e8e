import NIOCore
import Synchronization

/// Tracks the open client connections of a ``TestServer`` so that shutdown can close them.
final class ConnectionRegistry: Sendable {
    private struct State {
        var isShuttingDown = false
        var channels: [ObjectIdentifier: any Channel] = [:]
    }

    private let state = Mutex(State())

    /// Creates an empty registry.
    init() {}

    /// Whether ``beginShutdown()`` has been called. Connections closed from then on are
    /// closed by the server, not by the client.
    var isShuttingDown: Bool { state.withLock { $0.isShuttingDown } }

    /// Registers a freshly accepted connection and removes it again once it closes.
    /// If the server is already shutting down the connection is closed immediately.
    func register(_ channel: any Channel) {
        let key = ObjectIdentifier(channel)
        let accepted = state.withLock { state in
            guard !state.isShuttingDown else { return false }
            state.channels[key] = channel
            return true
        }
        guard accepted else {
            channel.close(promise: nil)
            return
        }
        channel.closeFuture.whenComplete { [self] _ in
            self.state.withLock { state in
                state.channels[key] = nil
            }
        }
    }

    /// Marks the server as shutting down and returns the connections that are still open
    /// (on repeated calls: those that have not finished closing yet).
    func beginShutdown() -> [any Channel] {
        state.withLock { state in
            state.isShuttingDown = true
            return Array(state.channels.values)
        }
    }
}
