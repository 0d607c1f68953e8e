import Foundation
import NIOConcurrencyHelpers

// How a jar reaches its file: the storage changes under the lock; the disk is touched only on the jar's
// serial queue, after the lock is released.
extension CookieJar {
    /// Returns once the file is read (at once for a jar in memory, or once it is read).
    func loaded() async {
        let isLoaded = state.withLockedValue { $0.beforeLoad == nil }
        if isLoaded { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLockedValue { state in
                guard state.beforeLoad != nil else { return true }
                state.waiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    /// Applies a change to the storage at the current time (after the file is read, if it is not yet),
    /// then schedules the resulting writes.
    func mutate(_ change: @escaping @Sendable (inout CookieStorage, Date) -> [CookieStorage.Change]) {
        let now = clock()
        let changes = state.withLockedValue { state -> [CookieStorage.Change] in
            if state.beforeLoad != nil {
                state.beforeLoad?.append((now, change))
                return []
            }
            return change(&state.storage, now)
        }
        persist(changes)
    }

    /// Records changes for the file and makes sure a write is on its way.
    func persist(_ changes: [CookieStorage.Change]) {
        guard let queue, !changes.isEmpty else { return }
        let needsWrite = state.withLockedValue { state in
            state.writes.record(changes)
            defer { state.isWriteScheduled = true }
            return !state.isWriteScheduled
        }
        if needsWrite { queue.async { [self] in writePending() } }
    }

    /// On the queue: writes everything recorded so far, in one transaction.
    func writePending() {
        guard let database else { return }
        let writes = state.withLockedValue { state in
            defer {
                state.writes = CookieDatabase.Writes()
                state.isWriteScheduled = false
            }
            return state.writes
        }
        guard !writes.isEmpty else { return }
        database.write(writes) { state.withLockedValue { $0.storage.allCookies } }
    }

    /// On the queue, first of all: reads the file, then applies the changes made meanwhile, in order,
    /// and lets the waiting readers go.
    func load() {
        guard let database else { return }
        let cookies = database.load()
        let now = clock()
        let (changes, waiters) = state.withLockedValue { state in
            var changes = state.storage.restore(cookies, now: now)
            for (time, change) in state.beforeLoad ?? [] { changes += change(&state.storage, time) }
            state.beforeLoad = nil
            defer { state.waiters = [] }
            return (changes, state.waiters)
        }
        for waiter in waiters { waiter.resume() }
        guard !changes.isEmpty else { return }
        state.withLockedValue { state in
            state.writes.record(changes)
            state.isWriteScheduled = true
        }
        // Already on the queue: write now, before any ``waitUntilPersisted()`` queued meanwhile returns.
        writePending()
    }
}

extension CookieJar {
    /// The cookies a request to `url` would carry, without waiting and without counting them as used;
    /// `nil` while a persisted jar has not read its file yet.
    func loadedCookies(for url: URL) -> [Cookie]? {
        let now = clock()
        return state.withLockedValue { state in
            state.beforeLoad == nil ? state.storage.peekCookies(for: url, now: now) : nil
        }
    }
}
