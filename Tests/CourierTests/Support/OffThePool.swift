import Foundation

/// Runs blocking work (waiting for a child process, reading a pipe to its end, sleeping between polls of
/// another process) on a thread of its own and suspends until it is done.
///
/// Never block one of the cooperative pool's threads in a test: on these 2-core machines the pool has
/// two, so two tests waiting for a `courier` child (slow under the thread sanitizer) stalled every other
/// test of the process for as long as the children ran, and timing-based tests beside them failed.
/// `Task.detached` does not help: it runs on the same pool.
func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}

/// ``offThePool(_:)`` for work that cannot throw.
func offThePool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: work()) }.start()
    }
}

extension Process {
    /// Waits for the child to exit without blocking a thread of the cooperative pool.
    func exited() async {
        await offThePool { self.waitUntilExit() }
    }
}

extension FileHandle {
    /// Everything until end of file (a pipe's writers all closed), read without blocking a thread of the
    /// cooperative pool.
    func readAll() async throws -> Data {
        try await offThePool { try self.readToEnd() ?? Data() }
    }
}
