import Dispatch
import NIOConcurrencyHelpers

/// Runs `body` on a dispatch queue and returns its value to the awaiting task.
///
/// The continuation is resumed under a lock that the task takes again once it runs: that orders what the
/// queue's thread did before the task goes on, an edge ThreadSanitizer cannot see by itself for a
/// continuation resumed from a dispatch queue (it would report the task's later use of its own frame).
func onQueue<Value: Sendable>(_ queue: DispatchQueue, _ body: @escaping @Sendable () -> Value) async -> Value {
    let handoff = NIOLockedValueBox(())
    let value = await withCheckedContinuation { continuation in
        queue.async {
            let value = body()
            handoff.withLockedValue { _ in continuation.resume(returning: value) }
        }
    }
    handoff.withLockedValue { _ in }
    return value
}
