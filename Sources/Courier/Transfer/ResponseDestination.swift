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

    /// Whether an interrupted transfer keeps its partial file: a resumable one, unless cancelled explicitly.
    var keepsPartialFile: Bool { isResumable && !(control?.isDiscarding ?? false) }

    /// Whether the body is gathered in memory (no file, no stream).
    var keepsInMemory: Bool { files.isEmpty && channel == nil }

    /// Whether the flight must run alone (a body written to files or streamed is not shared by
    /// coalesced operations).
    var isExclusive: Bool { !files.isEmpty || channel != nil }
}

/// What an explicit ``NetworkOperation/cancel()`` decided about a running download's partial file.
final class TransferControl: Sendable {
    private let discarding = NIOLockedValueBox(false)

    /// The partial file is to go (an explicit cancel).
    func discardPartial() { discarding.withLockedValue { $0 = true } }

    var isDiscarding: Bool { discarding.withLockedValue { $0 } }
}
