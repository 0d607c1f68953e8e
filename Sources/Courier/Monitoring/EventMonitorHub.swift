import DequeModule
import Dispatch
import NIOConcurrencyHelpers
import Synchronization

/// An engine's monitors and the serial queue they are called on. Events are dispatched (never called)
/// where they happen, often under the operation's lock, which puts each operation's events in the order
/// they happened; the monitors run later on the queue, holding no lock, off the caller's thread.
///
/// Events wait in one FIFO buffer, and the queue runs them in batches: one wake-up of the monitors'
/// thread for a burst of events rather than one per event (on a busy 2-core machine the wake-ups, not
/// the monitors, were most of the cost: `Benchmarks/`, "Courier + event monitor").
///
/// The backlog is bounded where it could grow without limit: while ``progressBacklogLimit`` events or
/// more wait (a monitor that blocks, a log pipe nobody reads), body-progress events are dropped, so a
/// stuck monitor holds a few events per operation, not one per body chunk. Every other event (each
/// operation's outcome among them) is always delivered.
final class EventMonitorHub: Sendable {
    typealias Event = @Sendable (any EventMonitor) -> Void

    let monitors: [any EventMonitor]
    private let queue: DispatchQueue
    /// Events dispatched and not yet taken by the queue, and whether a drain is scheduled or running.
    private let pending = NIOLockedValueBox<(events: Deque<Event>, draining: Bool)>(([], false))
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
    func emit(isProgress: Bool = false, _ event: @escaping Event) {
        let schedule = pending.withLockedValue { pending -> Bool in
            if isProgress, pending.events.count >= Self.progressBacklogLimit {
                droppedProgressEvents.add(1, ordering: .relaxed)
                return false
            }
            pending.events.append(event)
            if pending.draining { return false }
            pending.draining = true
            return true
        }
        if schedule { queue.async { [self] in runPending() } }
    }

    /// On the queue: runs the waiting events, batch after batch, until none is left.
    private func runPending() {
        while true {
            let batch = pending.withLockedValue { pending -> Deque<Event> in
                if pending.events.isEmpty { pending.draining = false }
                defer { pending.events = [] }
                return pending.events
            }
            if batch.isEmpty { return }
            for event in batch {
                for monitor in monitors { event(monitor) }
            }
        }
    }

    /// Runs after every event dispatched so far (for tests and flushing): a drain scheduled or running
    /// when this is called runs until the buffer is empty, before this block.
    func drain() async {
        await withCheckedContinuation { continuation in queue.async { continuation.resume() } }
    }
}
