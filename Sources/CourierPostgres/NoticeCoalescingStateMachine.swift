/// The notifications one store has on their way: at most one per kind at a time, and one more after it
/// when more were asked for meanwhile (a notification says "look", so two waiting say no more than one).
/// Pure: events in, decisions out.
struct NoticeCoalescingStateMachine<Notice: Hashable & Sendable>: Sendable {
    private var sending: [Notice: Bool] = [:]   // the value: whether another was asked for meanwhile

    /// A notification is asked for: `true` when it is to be sent now (none of its kind is on its way).
    mutating func ask(_ notice: Notice) -> Bool {
        if sending[notice] != nil {
            sending[notice] = true
            return false
        }
        sending[notice] = false
        return true
    }

    /// The one on its way was sent (or failed): `true` when another is to be sent now.
    mutating func sent(_ notice: Notice) -> Bool {
        if sending[notice] == true {
            sending[notice] = false
            return true
        }
        sending[notice] = nil
        return false
    }
}
