import Dispatch
import Synchronization

/// An engine's monitors and the serial queue they are called on. Events are dispatched (never called)
/// where they happen, often under the operation's lock, which puts each operation's events in the order
/// they happened; the monitors run later on the queue, holding no lock, off the caller's thread.
///
/// The backlog is bounded where it could grow without limit: while ``progressBacklogLimit`` events or
/// more wait (a monitor that blocks, a log pipe nobody reads), body-progress events are dropped, so a
/// stuck monitor holds a few events per operation, not one per body chunk. Every other event (each
/// operation's outcome among them) is always delivered.
final class EventMonitorHub: Sendable {
    let monitors: [any EventMonitor]
    private let queue: DispatchQueue
    /// Events dispatched and not yet run.
    private let backlog = Atomic<Int>(0)
    /// Progress events dropped because the backlog was full (for tests and diagnostics).
    let droppedProgressEvents = Atomic<Int>(0)

    /// How many waiting events make the hub drop body-progress events.
    static let progressBacklogLimit = 1024

    /// A hub for `monitors`, or `nil` when there are none (an engine without monitors checks one optional).
    static func make(_ monitors: [any EventMonitor]) -> EventMonitorHub? {
        monitors.isEmpty ? nil : EventMonitorHub(monitors: monitors)
    }

    private init(monitors: [any EventMonitor]) {
        self.monitors = monitors
        self.queue = DispatchQueue(label: "courier.event-monitors")
    }

    /// Calls `event` on every monitor, in order, on the monitors' queue.
    /// - Parameter isProgress: Whether the event is body progress, which is dropped when the backlog is full.
    func emit(isProgress: Bool = false, _ event: @escaping @Sendable (any EventMonitor) -> Void) {
        if isProgress, backlog.load(ordering: .relaxed) >= Self.progressBacklogLimit {
            droppedProgressEvents.add(1, ordering: .relaxed)
            return
        }
        backlog.add(1, ordering: .relaxed)
        let monitors = self.monitors
        queue.async { [self] in
            for monitor in monitors { event(monitor) }
            backlog.subtract(1, ordering: .relaxed)
        }
    }

    /// Runs after every event dispatched so far (for tests and flushing).
    func drain() async {
        await withCheckedContinuation { continuation in queue.async { continuation.resume() } }
    }
}
