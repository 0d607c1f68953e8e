/// Runs `body` to its end even when the current task is cancelled, and waits for it.
///
/// `NIOThreadPool.runIfActive`, under every NIOFileSystem call and Courier's own file work, drops work
/// submitted by a cancelled task. Cleanup must not be dropped: a file handle released open is a fatal
/// error in NIOFileSystem, and a cancelled task keeps a resumable download's record (what a user asked
/// to keep is never lost as a side effect). So cleanup runs in a task of its own, which the caller's
/// cancellation does not reach.
func uncancelled<T: Sendable>(_ body: @escaping @Sendable () async -> T) async -> T {
    await Task.detached(operation: body).value
}
