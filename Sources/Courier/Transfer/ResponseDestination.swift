import Foundation
import NIOConcurrencyHelpers

/// Where a flight puts the response body: memory (the default, within the size limit), files, a
/// consumer's ``ResponseBodyStream``, or several at once.
struct ResponseDestination: Sendable {
    /// Files to write the body to; empty for none.
    var files: [URL] = []
    /// Whether an interrupted download to files keeps its partial file and resume record, so the next
    /// download of the same URL to the same destination asks only for the rest.
    var isResumable = false
    /// The consumer of ``NetworkOperation/bodyStream``, if any.
    var channel: BodyChannel?
    /// The statuses whose body goes to the files (the operation's acceptable statuses); any other
    /// response's body is kept in memory, for the error.
    var acceptableStatusCodes: Set<Int> = Self.successStatuses

    /// 200 to 299, built once (a set of a hundred statuses costs a hundred inserts; copies share it).
    static let successStatuses = Set(200..<300)
    /// Bandwidth limits that apply (the queue's and the operation's).
    var throttles: [Throttle] = []
    /// The most bytes the files may hold (``NetworkEngine/Configuration/maximumDownloadSize``).
    var maximumFileSize: Int64?
    /// Whether an explicit cancel asked to discard the partial file: a resumable download's only (any
    /// other removes its partial file anyway).
    var control: TransferControl?
    /// Whether the flight gives its queue slot back once an accepted answer's head arrives
    /// (``NetworkOperation/isLongLived``).
    var isLongLived = false

    /// Whether an interrupted transfer keeps its partial file: a resumable one, unless cancelled explicitly.
    var keepsPartialFile: Bool { isResumable && !(control?.isDiscarding ?? false) }

    /// Whether the body is gathered in memory (no file, no stream).
    var keepsInMemory: Bool { files.isEmpty && channel == nil }

    /// Whether the flight must run alone (a body written to files or streamed is not shared by
    /// coalesced operations).
    var isExclusive: Bool { !files.isEmpty || channel != nil }
}

/// What an explicit ``NetworkOperation/cancel()`` decided about a download's partial file, and which
/// reservation of its destinations (``DestinationLocks``) its flight holds or waits for now.
final class TransferControl: Sendable {
    private struct State {
        var isDiscarding = false
        var writer: DestinationLockStateMachine.Ticket?
    }

    private let state = NIOLockedValueBox(State())

    /// The partial file is to go (an explicit cancel).
    /// - Returns: The ticket of the flight's attempt that holds or waits for the files now, if any: the
    ///   removal goes right behind it (a flight may decide to keep its partial just before it hears of
    ///   the cancel, and a flight between attempts holds nothing).
    @discardableResult
    func discardPartial() -> DestinationLockStateMachine.Ticket? {
        state.withLockedValue { state in
            state.isDiscarding = true
            return state.writer
        }
    }

    var isDiscarding: Bool { state.withLockedValue { $0.isDiscarding } }

    /// An attempt of this transfer reserved its destinations.
    func writerReserved(_ ticket: DestinationLockStateMachine.Ticket) {
        state.withLockedValue { $0.writer = ticket }
    }

    /// That attempt let go of them.
    func writerReleased(_ ticket: DestinationLockStateMachine.Ticket) {
        state.withLockedValue { if $0.writer == ticket { $0.writer = nil } }
    }
}
