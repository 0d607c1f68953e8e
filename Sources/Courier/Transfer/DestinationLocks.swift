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

    /// Reserves `destinations` now (in this call, so the order of calls is the order of writers).
    func reserve(_ destinations: [URL]) -> DestinationLockStateMachine.Ticket {
        let keys = Set(destinations.map(Self.key(for:)))
        return state.withLockedValue { $0.machine.reserve(keys).ticket }
    }

    /// Whether no download holds or waits for any of `destinations` now (its cleanup included: an
    /// operation reports `cancelled` at once, while its flight may still be closing its files).
    func areFree(_ destinations: [URL]) -> Bool {
        let keys = Set(destinations.map(Self.key(for:)))
        return state.withLockedValue { $0.machine.areFree(keys) }
    }

    /// Reserves `destinations` only if no download but `own` (the caller's own flight, see
    /// ``TransferControl/discardPartial()``) holds or waits for any of them now.
    func reserveIfFree(_ destinations: [URL], after own: DestinationLockStateMachine.Ticket? = nil) -> DestinationLockStateMachine.Ticket? {
        let keys = Set(destinations.map(Self.key(for:)))
        return state.withLockedValue { $0.machine.reserveIfFree(keys, after: own) }
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
    func release(_ ticket: DestinationLockStateMachine.Ticket) {
        let ready = state.withLockedValue { state in
            state.machine.release(ticket).compactMap { state.waiters.removeValue(forKey: $0) }
        }
        for waiter in ready { waiter.resume(returning: true) }
    }

    /// Runs `body` holding `destinations`, reserved now.
    /// - Parameter control: The transfer's control, told the ticket while it is reserved (so an explicit
    ///   cancel can queue the resume data's removal right behind this writer).
    /// - Returns: `body`'s result, or `nil` when the task was cancelled while waiting.
    func withDestinations<T: Sendable>(_ destinations: [URL], noting control: TransferControl? = nil, _ body: () async -> T) async -> T? {
        let ticket = reserve(destinations)
        control?.writerReserved(ticket)
        defer {
            control?.writerReleased(ticket)
            release(ticket)
        }
        guard await acquire(ticket) else { return nil }
        return await body()
    }
}
