import Synchronization

/// `withLockedValue`, spelled as `NIOLockedValueBox` spells it, for a `Mutex` kept inline in its owner:
/// an operation's state lives in the operation object itself instead of a box allocated beside it.
extension Mutex where Value: ~Copyable {
    /// Runs `body` with the value, holding the lock.
    borrowing func withLockedValue<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        try withLock(body)
    }
}
