import Dispatch

/// An engine's monitors and the serial queue they are called on. Events are dispatched (never called)
/// where they happen, often under the operation's lock, which puts each operation's events in the order
/// they happened; the monitors run later on the queue, holding no lock, off the caller's thread.
final class EventMonitorHub: Sendable {
    let monitors: [any EventMonitor]
    private let queue: DispatchQueue

    /// A hub for `monitors`, or `nil` when there are none (an engine without monitors checks one optional).
    static func make(_ monitors: [any EventMonitor]) -> EventMonitorHub? {
        monitors.isEmpty ? nil : EventMonitorHub(monitors: monitors)
    }

    private init(monitors: [any EventMonitor]) {
        self.monitors = monitors
        self.queue = DispatchQueue(label: "courier.event-monitors")
    }

    /// Calls `event` on every monitor, in order, on the monitors' queue.
    func emit(_ event: @escaping @Sendable (any EventMonitor) -> Void) {
        let monitors = self.monitors
        queue.async { for monitor in monitors { event(monitor) } }
    }

    /// Runs after every event dispatched so far (for tests and flushing).
    func drain() async {
        await withCheckedContinuation { continuation in queue.async { continuation.resume() } }
    }
}
