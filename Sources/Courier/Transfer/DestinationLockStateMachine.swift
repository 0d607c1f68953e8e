import DequeModule

/// Who may write to a download destination now: a pure value, first come first served per file.
///
/// A download's partial file and resume record belong to one writer at a time. A second download to
/// the same file, or a new download started right after ``NetworkOperation/cancel()`` while the
/// cancelled one still closes its file, must wait until the first is done, or both would write and
/// truncate the same partial file. A ticket reserves all its keys (one per destination) at once, in
/// one step, so two tickets that share several keys are ordered the same way on each: no deadlock.
/// A ticket holds its keys when it is first in line on every one of them.
struct DestinationLockStateMachine: Sendable {
    /// A reservation.
    typealias Ticket = UInt64

    private var lines: [String: Deque<Ticket>] = [:]
    private var keysOfTicket: [Ticket: [String]] = [:]
    private var nextTicket: Ticket = 0

    /// Reserves `keys` for a new ticket, behind every earlier ticket on any of them.
    /// - Returns: The ticket, and whether it holds its keys already.
    mutating func reserve(_ keys: Set<String>) -> (ticket: Ticket, holds: Bool) {
        let ticket = nextTicket
        nextTicket += 1
        let ordered = keys.sorted()
        keysOfTicket[ticket] = ordered
        for key in ordered { lines[key, default: []].append(ticket) }
        return (ticket, holds(ticket))
    }

    /// Reserves `keys` only when nobody but `own` (the caller's own writer, which may still be closing
    /// its files) holds or waits for any of them: the new ticket then comes right after `own`, before
    /// any writer that arrives later.
    /// - Returns: The ticket, or `nil` when another writer holds or waits for one of the keys.
    mutating func reserveIfFree(_ keys: Set<String>, after own: Ticket?) -> Ticket? {
        let isFree = keys.allSatisfy { key in
            guard let line = lines[key] else { return true }
            return own != nil && line.count == 1 && line.first == own
        }
        guard isFree else { return nil }
        return reserve(keys).ticket
    }

    /// Whether `ticket` is first in line on all its keys.
    func holds(_ ticket: Ticket) -> Bool {
        guard let keys = keysOfTicket[ticket] else { return false }
        return keys.allSatisfy { lines[$0]?.first == ticket }
    }

    /// Ends `ticket`, whether it held its keys (its writer is done) or was still waiting (its task
    /// was cancelled).
    /// - Returns: The tickets that hold their keys now and did not before.
    mutating func release(_ ticket: Ticket) -> [Ticket] {
        guard let keys = keysOfTicket.removeValue(forKey: ticket) else { return [] }
        var candidates: Set<Ticket> = []
        for key in keys {
            guard var line = lines[key] else { continue }
            let wasFirst = line.first == ticket
            line.removeAll { $0 == ticket }
            lines[key] = line.isEmpty ? nil : line
            if wasFirst, let next = line.first { candidates.insert(next) }
        }
        return candidates.sorted().filter(holds)
    }

    /// Whether `ticket` is reserved (holding or waiting).
    func isReserved(_ ticket: Ticket) -> Bool { keysOfTicket[ticket] != nil }

    /// Whether nothing is reserved.
    var isIdle: Bool { keysOfTicket.isEmpty }
}
