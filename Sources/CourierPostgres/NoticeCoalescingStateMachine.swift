/// The notifications one store has on their way: at most one per kind at a time, and one more after it
/// when more were asked for meanwhile (a notification says "look", so two waiting say no more than one).
///
/// A notification not answered within the store's timeout is given up on (so that one sent on a connection
/// that went silent does not hold back the next), but it still holds a connection until it ends: while
/// ``maximumUnanswered`` of a kind are in that state, the next of that kind waits, so a silent server never
/// collects one of the app's connections per timeout. Pure: events in, decisions out.
struct NoticeCoalescingStateMachine<Notice: Hashable & Sendable>: Sendable {
    /// How many notifications of a kind may be given up on and still be on the server.
    static var maximumUnanswered: Int { 2 }

    private var sending: [Notice: Bool] = [:]   // the value: whether another was asked for meanwhile
    private var unanswered: [Notice: Int] = [:]

    /// A notification is asked for: `true` when it is to be sent now (none of its kind is on its way).
    mutating func ask(_ notice: Notice) -> Bool {
        if sending[notice] != nil {
            sending[notice] = true
            return false
        }
        sending[notice] = false
        return true
    }

    /// Whether the one to send may go now: `false` while ``maximumUnanswered`` of its kind are unanswered.
    func maySend(_ notice: Notice) -> Bool {
        unanswered[notice, default: 0] < Self.maximumUnanswered
    }

    /// The one on its way was not answered within the timeout and is left to end by itself.
    mutating func gaveUp(_ notice: Notice) {
        unanswered[notice, default: 0] += 1
    }

    /// One given up on ended (answered, failed, or its connection lost).
    mutating func endedAfterGivingUp(_ notice: Notice) {
        unanswered[notice] = max(0, unanswered[notice, default: 0] - 1)
    }

    /// The one on its way was sent (or failed, or was given up on): `true` when another is to be sent now.
    mutating func sent(_ notice: Notice) -> Bool {
        if sending[notice] == true {
            sending[notice] = false
            return true
        }
        sending[notice] = nil
        return false
    }
}
