import Foundation
import NIOConcurrencyHelpers

/// The process's locks on download destinations: ``DestinationLockStateMachine`` behind a lock, with
/// the waiting tasks' continuations.
///
/// A flight that writes to files holds its destinations from before it reads what is on disk (the
/// partial file, the resume record) until its file is renamed into place or its partial is kept or
/// removed. ``NetworkOperation/cancel()`` reserves the same destinations at once, in the caller's
/// call, to remove the resume data after the cancelled flight let go and before any later download
/// starts. Waiting is cancellable: a cancelled task stops waiting and gets `false`.
final class DestinationLocks: Sendable {
    /// Shared by every engine of the process (a file is a file whichever engine downloads it).
    static let shared = DestinationLocks()

    private struct State {
        var machine = DestinationLockStateMachine()
        var waiters: [DestinationLockStateMachine.Ticket: CheckedContinuation<Bool, Never>] = [:]
        /// Tickets whose task was cancelled before they were awaited.
        var abandoned: Set<DestinationLockStateMachine.Ticket> = []
    }

    private let state = NIOLockedValueBox(State())

    /// The key of a destination: the file it names, whatever the spelling: its folder resolved
    /// (`realpath`: symbolic links, `..`, repeated separators) and its name (the file itself may not
    /// exist yet). The standardised path when the folder cannot be resolved (it does not exist).
    static func key(for destination: URL) -> String {
        let url = destination.standardizedFileURL
        guard let resolved = realpath(url.deletingLastPathComponent().path, nil) else { return url.path }
        defer { free(resolved) }
        return URL(fileURLWithPath: String(cString: resolved), isDirectory: true).appendingPathComponent(url.lastPathComponent).path
    }

    /// An explicit cancel's removal of the resume data: marks `control` as discarding and reserves
    /// `destinations` right behind the transfer's own writer (which may still be closing them), in one
    /// step under the lock writers reserve and release under, so no writer of this transfer can come or
    /// go in between. `nil` when another download holds or waits for one of them (its outcome decides).
    func reserveForRemoval(_ destinations: [URL], by control: TransferControl?) -> DestinationLockStateMachine.Ticket? {
        let keys = Set(destinations.map(Self.key(for:)))
        return state.withLockedValue { state in
            let own = control?.discardPartial()
            return state.machine.reserveIfFree(keys, after: own)
        }
    }

    /// Waits until `ticket` holds its destinations.
    /// - Returns: `true` when it holds them; `false` when the task was cancelled first (the ticket is
    ///   then released).
    func acquire(_ ticket: DestinationLockStateMachine.Ticket) async -> Bool {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow: Bool? = state.withLockedValue { state in
                    if state.abandoned.remove(ticket) != nil { return false }
                    if state.machine.holds(ticket) { return true }
                    state.waiters[ticket] = continuation
                    return nil
                }
                if let resumeNow {
                    if !resumeNow { release(ticket) }
                    continuation.resume(returning: resumeNow)
                }
            }
        } onCancel: {
            let waiter: CheckedContinuation<Bool, Never>? = state.withLockedValue { state in
                guard state.machine.isReserved(ticket), !state.machine.holds(ticket) else { return nil }
                guard let waiter = state.waiters.removeValue(forKey: ticket) else {
                    state.abandoned.insert(ticket)   // cancelled before it waited: it will not wait
                    return nil
                }
                return waiter
            }
            if let waiter {
                release(ticket)
                waiter.resume(returning: false)
            }
        }
    }

    /// Lets go of `ticket`; the next writers in line go on.
    /// - Parameter control: The transfer whose writer `ticket` was, told in the same step.
    func release(_ ticket: DestinationLockStateMachine.Ticket, noting control: TransferControl? = nil) {
        let ready = state.withLockedValue { state in
            control?.writerReleased(ticket)
            return state.machine.release(ticket).compactMap { state.waiters.removeValue(forKey: $0) }
        }
        for waiter in ready { waiter.resume(returning: true) }
    }

    /// Runs `body` holding `destinations`, reserved now.
    /// - Parameter control: The transfer's control, told the ticket while it is reserved, in the same
    ///   steps as the reservation and the release (so an explicit cancel queues the resume data's
    ///   removal right behind this writer, ``reserveForRemoval(_:by:)``).
    /// - Returns: `body`'s result, or `nil` when the task was cancelled while waiting.
    func withDestinations<T: Sendable>(_ destinations: [URL], noting control: TransferControl? = nil, _ body: () async -> T) async -> T? {
        let keys = Set(destinations.map(Self.key(for:)))
        let ticket = state.withLockedValue { state in
            let ticket = state.machine.reserve(keys).ticket
            control?.writerReserved(ticket)
            return ticket
        }
        defer { release(ticket, noting: control) }
        guard await acquire(ticket) else { return nil }
        return await body()
    }
}
