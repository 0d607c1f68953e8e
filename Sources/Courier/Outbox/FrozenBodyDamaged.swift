/// Why a replay's frozen body could not be sent: the outbox's copy of it turned out damaged as it was read
/// (a store whose copies are checked only then, such as the chunks of a PostgreSQL outbox, whose parts did
/// not add up to the frozen length). The ``NetworkError`` a body throws holds it as its
/// ``NetworkError/underlying``; the replay then dead-letters the row as
/// ``OutboxEntry/DeadLetterReason/bodyUnavailable`` (``ReplayStateMachine/Outcome/bodyDamaged``), never
/// sending it with another body, and does not count the try as an attempt.
package struct FrozenBodyDamaged: Error, Sendable {
    /// What is wrong with the copy.
    package let detail: String

    package init(_ detail: String) { self.detail = detail }
}
