import HeapModule

/// The scheduling brain of ``NetworkQueue``: a pure value with one mutating function per event.
///
/// It knows operations only by ``OperationID`` and network requests only as *flights*. A flight is
/// one request on the wire; several operations (subscribers) share one flight when they coalesce.
/// The machine decides which flights start, which are cancelled and who hears the result; it does
/// no I/O, starts no tasks and reads no clock. ``NetworkQueue`` runs the actions it returns.
///
/// Rules:
/// - at most `maximumConcurrent` flights run (a cancelled flight holds its slot until the transport
///   has really stopped, so the server never sees more than the limit);
/// - waiting flights start highest priority first, first-come first-served within a priority;
/// - a suspended machine accepts work but starts nothing;
/// - an operation with unfinished dependencies waits outside the flight table until they finish;
/// - an operation with a coalescing key joins a waiting or running flight with the same key; a
///   flight runs at the highest priority of its subscribers; it is cancelled only when its last
///   subscriber leaves;
/// - each operation belongs to a group (its engine), which may have a limit of its own (set from the
///   engine's reachability): no more flights run than the narrowest limit among the groups whose
///   work is waiting; a group limited to 0 is paused, its flights parked (in order) until it opens;
/// - a flight an interceptor retries gives up its slot while it waits (``suspendFlight(_:)``), then
///   takes its old place in line (``requeueFlight(_:)``): it goes before work enqueued after it;
/// - a live stream (server-sent events) holds a slot while it connects and gives it back once its
///   answer streams (``releaseSlot(_:)``): an open stream never narrows the queue's width.
struct QueueStateMachine {
    /// The engine an operation belongs to.
    typealias Group = UInt64

    struct FlightID: Hashable, Sendable, CustomStringConvertible {
        let rawValue: UInt64
        var description: String { "flight-\(rawValue)" }
    }

    /// What the owner must do after an event.
    struct Action: Equatable {
        struct Start: Equatable {
            var flight: FlightID
            /// The operations sharing the flight, first come first; any of them describes the request.
            var subscribers: [OperationID]
        }
        /// Flights to start now (usually one: held without an array).
        var start = SmallList<Start>()
        /// Operations that joined a flight already running: they are executing from now on.
        var joinedRunning: [OperationID] = []
        /// Flights whose network work must be cancelled (their last subscriber left).
        var cancelFlights: [FlightID] = []
        /// Operations that left the queue by cancellation: finish them as cancelled.
        var cancelled: [OperationID] = []
        /// When a flight finished: the operations that must hear its result.
        var deliver: [OperationID] = []
        /// The new operation count, when it changed.
        var activity: Int?
    }

    /// `suspended`: between two attempts, holding no slot (backing off, or an interceptor deciding).
    private enum FlightState { case waiting, running, cancelling, suspended }

    private struct Flight {
        var state: FlightState
        var key: CoalescingKey?
        var subscribers: [OperationID]
        var priority: NetworkOperation.Priority
        let sequence: UInt64
        let group: Group
        /// Whether the flight counts in `occupiedSlots` (running or cancelling, and not a stream that
        /// gave its slot back).
        var holdsSlot = false
    }

    private enum Membership {
        case blocked(remaining: Set<OperationID>)
        case subscribed(FlightID)
    }

    private struct Member {
        var membership: Membership
        var priority: NetworkOperation.Priority
        let key: CoalescingKey?
        let sequence: UInt64
        let group: Group
    }

    /// A waiting flight's place in line. Entries are never removed in place: an entry whose flight
    /// has started, left, or changed priority is stale and skipped when it comes up.
    private struct Ticket: Comparable {
        var priority: NetworkOperation.Priority
        var sequence: UInt64
        var flight: FlightID
        // The maximum is the next to start: higher priority, then lower sequence.
        static func < (lhs: Ticket, rhs: Ticket) -> Bool {
            if lhs.priority != rhs.priority { return lhs.priority < rhs.priority }
            return lhs.sequence > rhs.sequence
        }
    }

    private var members: [OperationID: Member] = [:]
    private var flights: [FlightID: Flight] = [:]
    private var coalescing: [CoalescingKey: FlightID] = [:]
    private var line = Heap<Ticket>()
    private var waitingFlightCount = 0
    /// Groups with a limit of their own; absent groups are limited only by `maximumConcurrent`.
    private(set) var groupLimits: [Group: Int] = [:]
    /// The version of each group's last applied limit (see ``setLimit(_:for:version:)``).
    private var limitVersions: [Group: UInt64] = [:]
    /// Waiting flights per group (only counted for groups that have a limit).
    private var waitingByGroup: [Group: Int] = [:]
    /// Tickets of paused groups (limit 0), in the order they came up.
    private var parked: [Group: [Ticket]] = [:]
    private var nextFlight: UInt64 = 0
    private var nextSequence: UInt64 = 0

    /// Flights holding a slot: running, or cancelled and not yet stopped.
    private(set) var occupiedSlots = 0
    private(set) var maximumConcurrent: Int
    private(set) var isSuspended: Bool

    init(maximumConcurrent: Int = 6, isSuspended: Bool = false) {
        self.maximumConcurrent = max(0, maximumConcurrent)
        self.isSuspended = isSuspended
    }

    /// Operations in the queue: blocked on dependencies, waiting or running.
    var operationCount: Int { members.count }

    /// Whether an operation in the queue still waits for some of its dependencies.
    func isBlocked(_ id: OperationID) -> Bool {
        if case .blocked? = members[id]?.membership { return true }
        return false
    }

    /// The operations currently sharing a flight (empty once it finished or was abandoned).
    func subscribers(of flight: FlightID) -> [OperationID] { flights[flight]?.subscribers ?? [] }

    // MARK: Events

    /// An operation enters the queue.
    /// - Parameter dependencies: those of its dependencies that have not finished yet.
    mutating func enqueue(
        _ id: OperationID, priority: NetworkOperation.Priority, key: CoalescingKey?, dependencies: Set<OperationID> = [],
        group: Group = 0
    ) -> Action {
        precondition(members[id] == nil, "\(id) enqueued twice")
        var action = Action()
        let sequence = nextSequence
        nextSequence += 1
        // Most operations have no dependencies: no set is built for them.
        let pending = dependencies.isEmpty ? dependencies : dependencies.subtracting([id])
        members[id] = Member(
            membership: .blocked(remaining: pending), priority: priority, key: key, sequence: sequence, group: group)
        if pending.isEmpty {
            admit(id, into: &action)
            schedule(into: &action)
        }
        action.activity = members.count
        return action
    }

    /// One of an operation's dependencies finished (whatever its outcome).
    mutating func dependencyFinished(_ dependency: OperationID, for id: OperationID) -> Action {
        var action = Action()
        guard var member = members[id], case .blocked(var remaining) = member.membership else { return action }
        remaining.remove(dependency)
        member.membership = .blocked(remaining: remaining)
        members[id] = member
        if remaining.isEmpty {
            admit(id, into: &action)
            schedule(into: &action)
        }
        return action
    }

    /// An operation is cancelled. Unknown operations (never enqueued, or already delivered) are ignored.
    mutating func cancel(_ id: OperationID) -> Action {
        var action = Action()
        guard let member = members.removeValue(forKey: id) else { return action }
        action.cancelled = [id]
        action.activity = members.count
        guard case .subscribed(let flightID) = member.membership, var flight = flights[flightID] else {
            return action
        }
        flight.subscribers.removeAll { $0 == id }
        if flight.subscribers.isEmpty {
            if let key = flight.key, coalescing[key] == flightID { coalescing[key] = nil }
            switch flight.state {
            case .waiting:
                flights[flightID] = nil
                waitingFlightCount -= 1
                countWaiting(in: flight.group, -1)
                compactLineIfNeeded()
            case .running:
                flight.state = .cancelling
                flights[flightID] = flight
                action.cancelFlights = [flightID]
            case .suspended:
                // No slot to wait for: the flight is gone; its task hears the cancellation and stops.
                flights[flightID] = nil
                action.cancelFlights = [flightID]
            case .cancelling:
                preconditionFailure("\(flightID) is cancelling but still had a subscriber")
            }
        } else {
            flights[flightID] = flight
            if flight.state == .waiting { reprioritize(flightID) }
        }
        return action
    }

    /// Cancels an operation only if nothing of it has started: it is blocked on dependencies, or its
    /// flight still waits. An operation whose flight runs is left alone (the outbox lets such a replay
    /// finish, so that what the server answered is what is reported).
    mutating func cancelIfNotStarted(_ id: OperationID) -> Action {
        guard let member = members[id] else { return Action() }
        if case .subscribed(let flightID) = member.membership, flights[flightID]?.state != .waiting { return Action() }
        return cancel(id)
    }

    /// A flight's network work ended (response, failure or completed cancellation). Frees its slot.
    mutating func flightFinished(_ flightID: FlightID) -> Action {
        var action = Action()
        guard let flight = flights.removeValue(forKey: flightID) else {
            preconditionFailure("\(flightID) finished but is unknown")
        }
        precondition(flight.state != .waiting, "\(flightID) finished without starting")
        if flight.holdsSlot { occupiedSlots -= 1 }
        if let key = flight.key, coalescing[key] == flightID { coalescing[key] = nil }
        for id in flight.subscribers { members[id] = nil }
        action.deliver = flight.subscribers
        if !flight.subscribers.isEmpty { action.activity = members.count }
        schedule(into: &action)
        return action
    }

    /// A running flight's attempt failed and its interceptors are deciding whether (and when) to try
    /// again: it gives up its slot meanwhile. Its subscribers stay; identical work still joins it.
    /// Returns `nil` when the flight is not running any more (its last subscriber left).
    mutating func suspendFlight(_ flightID: FlightID) -> Action? {
        guard var flight = flights[flightID], flight.state == .running else { return nil }
        flight.state = .suspended
        if flight.holdsSlot { occupiedSlots -= 1 }
        flight.holdsSlot = false
        flights[flightID] = flight
        var action = Action()
        schedule(into: &action)
        return action
    }

    /// A suspended flight is tried again: it waits for a slot at its old place in line (its first
    /// subscriber's sequence), ahead of work enqueued after it. Ignored for a flight that is gone.
    mutating func requeueFlight(_ flightID: FlightID) -> Action {
        var action = Action()
        guard var flight = flights[flightID], flight.state == .suspended else { return action }
        flight.state = .waiting
        flight.priority = flight.subscribers.compactMap { members[$0]?.priority }.max() ?? flight.priority
        flights[flightID] = flight
        waitingFlightCount += 1
        countWaiting(in: flight.group, 1)
        line.insert(Ticket(priority: flight.priority, sequence: flight.sequence, flight: flightID))
        schedule(into: &action)
        return action
    }

    /// A suspended flight is not tried again: its subscribers hear the outcome. Ignored (empty action)
    /// for a flight that is gone.
    mutating func finishSuspendedFlight(_ flightID: FlightID) -> Action {
        var action = Action()
        guard let flight = flights[flightID], flight.state == .suspended else { return action }
        flights[flightID] = nil
        if let key = flight.key, coalescing[key] == flightID { coalescing[key] = nil }
        for id in flight.subscribers { members[id] = nil }
        action.deliver = flight.subscribers
        if !flight.subscribers.isEmpty { action.activity = members.count }
        return action
    }

    /// A running flight's answer streams for as long as the server keeps it open (a live stream): it
    /// gives its slot back, so waiting work may start. It goes on running; its end frees no slot.
    /// Ignored (empty action) for a flight that holds none.
    mutating func releaseSlot(_ flightID: FlightID) -> Action {
        var action = Action()
        guard var flight = flights[flightID], flight.holdsSlot, flight.state == .running else { return action }
        flight.holdsSlot = false
        flights[flightID] = flight
        occupiedSlots -= 1
        schedule(into: &action)
        return action
    }

    /// Whether the state machine still knows a flight (suspended flights included).
    func hasFlight(_ flightID: FlightID) -> Bool { flights[flightID] != nil }

    /// Changes a queued operation's priority; it matters while its flight waits.
    mutating func setPriority(_ priority: NetworkOperation.Priority, for id: OperationID) -> Action {
        guard var member = members[id], member.priority != priority else { return Action() }
        member.priority = priority
        members[id] = member
        if case .subscribed(let flightID) = member.membership, flights[flightID]?.state == .waiting {
            reprioritize(flightID)
        }
        return Action()
    }

    /// Changes the concurrency limit. Lowering never stops running flights; raising starts waiting ones.
    mutating func setMaximumConcurrent(_ limit: Int) -> Action {
        maximumConcurrent = max(0, limit)
        var action = Action()
        schedule(into: &action)
        return action
    }

    /// Gives a group (an engine) a limit of its own, or removes it (`nil`). With a limit, no more flights
    /// run than the narrowest limit among the groups with waiting work; 0 pauses the group's work.
    /// - Parameter version: Increases with each change the group's owner decides; a change older than one
    ///   already applied is ignored, so changes decided in one order and applied in another (two threads)
    ///   never leave a stale limit.
    mutating func setLimit(_ limit: Int?, for group: Group, version: UInt64? = nil) -> Action {
        var action = Action()
        if let version {
            if let applied = limitVersions[group], applied > version { return action }
            limitVersions[group] = version
        }
        if limit == nil, version != nil, waitingByGroup[group] == nil { limitVersions[group] = nil }
        let limit = limit.map { max(0, $0) }
        guard groupLimits[group] != limit else { return action }
        groupLimits[group] = limit
        if limit != 0, let tickets = parked.removeValue(forKey: group) {
            for ticket in tickets { line.insert(ticket) }
        }
        schedule(into: &action)
        return action
    }

    /// How many flights may run now: the queue's limit, narrowed by every open group with waiting work.
    var effectiveLimit: Int {
        var limit = maximumConcurrent
        for (group, groupLimit) in groupLimits where groupLimit > 0 && groupLimit < limit && waitingByGroup[group, default: 0] > 0 {
            limit = groupLimit
        }
        return limit
    }

    /// Waiting flights of a group, parked or not.
    func waitingFlights(in group: Group) -> Int { waitingByGroup[group, default: 0] }

    /// Stops starting flights; running ones go on.
    mutating func suspend() -> Action {
        isSuspended = true
        return Action()
    }

    /// Starts waiting flights again, up to the limit.
    mutating func resume() -> Action {
        isSuspended = false
        var action = Action()
        schedule(into: &action)
        return action
    }

    // MARK: Internals

    /// Puts an operation whose dependencies are met into a flight: a matching one, or a new one.
    private mutating func admit(_ id: OperationID, into action: inout Action) {
        guard var member = members[id] else { return }
        // A flight already started has spent part of its total timeout (counted from its first attempt): an
        // operation with one of its own does not join it, or it would get only what is left.
        if let key = member.key, let flightID = coalescing[key], var flight = flights[flightID],
            flight.state == .waiting || key.totalTimeout == nil
        {
            flight.subscribers.append(id)
            flights[flightID] = flight
            member.membership = .subscribed(flightID)
            members[id] = member
            switch flight.state {
            case .waiting: reprioritize(flightID)
            case .running, .suspended: action.joinedRunning.append(id)
            case .cancelling: preconditionFailure("a cancelling flight is never in the coalescing table")
            }
            return
        }
        let flightID = FlightID(rawValue: nextFlight)
        nextFlight += 1
        flights[flightID] = Flight(
            state: .waiting, key: member.key, subscribers: [id], priority: member.priority, sequence: member.sequence,
            group: member.group)
        if let key = member.key { coalescing[key] = flightID }
        member.membership = .subscribed(flightID)
        members[id] = member
        waitingFlightCount += 1
        countWaiting(in: member.group, 1)
        line.insert(Ticket(priority: member.priority, sequence: member.sequence, flight: flightID))
    }

    /// A waiting flight's priority is the highest of its subscribers'; a change takes a new place in line.
    private mutating func reprioritize(_ flightID: FlightID) {
        guard var flight = flights[flightID], flight.state == .waiting else { return }
        let highest = flight.subscribers.compactMap { members[$0]?.priority }.max() ?? flight.priority
        guard highest != flight.priority else { return }
        flight.priority = highest
        flights[flightID] = flight
        line.insert(Ticket(priority: highest, sequence: flight.sequence, flight: flightID))
    }

    private mutating func schedule(into action: inout Action) {
        guard !isSuspended else { return }
        while occupiedSlots < effectiveLimit, let ticket = line.popMax() {
            guard var flight = flights[ticket.flight], flight.state == .waiting, flight.priority == ticket.priority
            else { continue }
            if groupLimits[flight.group] == 0 {
                parked[flight.group, default: []].append(ticket)
                continue
            }
            flight.state = .running
            flight.holdsSlot = true
            flights[ticket.flight] = flight
            occupiedSlots += 1
            waitingFlightCount -= 1
            countWaiting(in: flight.group, -1)
            action.start.append(.init(flight: ticket.flight, subscribers: flight.subscribers))
        }
    }

    private mutating func countWaiting(in group: Group, _ delta: Int) {
        let count = waitingByGroup[group, default: 0] + delta
        waitingByGroup[group] = count == 0 ? nil : count
    }

    /// Drops stale tickets once they outnumber live ones, so cancelled work does not pile up.
    private mutating func compactLineIfNeeded() {
        let parkedCount = parked.values.reduce(0) { $0 + $1.count }
        guard line.count + parkedCount > 64, line.count + parkedCount > 2 * waitingFlightCount else { return }
        func isLive(_ ticket: Ticket) -> Bool {
            guard let flight = flights[ticket.flight] else { return false }
            return flight.state == .waiting && flight.priority == ticket.priority
        }
        line = Heap(line.unordered.filter(isLive))
        parked = parked.compactMapValues { tickets in
            let live = tickets.filter(isLive)
            return live.isEmpty ? nil : live
        }
    }
}
