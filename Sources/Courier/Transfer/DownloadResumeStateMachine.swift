import Foundation
import HTTPTypes

/// The decisions of a resumable download to a file, one exchange after another: a pure value (no I/O,
/// no clock), fed what is on disk and what the server answers, answering what to do.
///
/// - **start**: with bytes already on disk and a usable ``ResumeRecord``, ask for the rest with
///   `Range: bytes=N-` (RFC 9110 §14.2) and `If-Range` holding the strong validator (§13.1.5), so that a
///   changed representation comes back whole (200) instead of as a range of the new one.
/// - **200**: write from the start (truncate the partial). When a range was asked, the server either
///   ignored `Range` or the validator changed (§13.1.5); which one is reported.
/// - **206** (§15.3.7): append, when `Content-Range` starts at N and names the recorded complete
///   length, no content coding intervenes, and the 206's validators are the recorded ones
///   (``ResumeValidators/partialMatches(_:_:)``: a server that ignores `If-Range` may send a range of a
///   changed representation); otherwise start over, never splicing two representations.
/// - **416** (§15.5.17): the partial is already complete when the lengths known (`Content-Range:
///   bytes */L`, the recorded complete length) are all N, at least one is known, and the 416's
///   validators are the recorded ones (a server that ignores `If-Range` answers a shorter, changed
///   representation with 416 too); otherwise start over.
/// - any other status: fail, keeping the partial for a later attempt.
///
/// "Start over" means: delete the partial file and the record, and send the request again without
/// `Range`; it can happen at most once per download (after it nothing is on disk, so nothing can
/// mismatch again).
///
/// The owner (the download's writer) runs the actions: it sends the request, truncates or opens the
/// partial for appending, reports ``wroteBytes(_:)``, persists ``record`` now and then and on
/// interruption, and renames the partial into place on ``Action/complete(length:)``.
struct DownloadResumeStateMachine: Sendable {
    /// Why the bytes on disk are not used.
    enum StartOverReason: Sendable, Hashable {
        /// Bytes on disk but no record for this URL: nothing says what they are.
        case noRecord
        /// The record's only validator is a weak entity tag, which `If-Range` may not carry (§13.1.5).
        case weakValidatorOnly
        /// More bytes on disk than the representation has.
        case partialLongerThanRepresentation
        /// The server answered 200 with another validator: the representation changed.
        case validatorChanged
        /// The server answered 200 with the same validator (or none): it ignored `Range`.
        case rangeIgnored
        /// A 206 whose `Content-Range` is missing, invalid, starts elsewhere or names another length.
        case contentRangeMismatch
        /// A 206 with a content coding: its bytes are not those of the file on disk.
        case contentEncoded
        /// A 416 whose complete length is not the bytes on disk.
        case rangeNotSatisfiable
    }

    /// Why the download cannot go on.
    enum Failure: Sendable, Hashable {
        /// A status that is neither 200, 206 nor 416. The partial is kept.
        case unacceptableStatus(Int)
        /// A 206 or 416 to a request that asked no range. The partial is kept.
        case unexpectedStatus(Int)
        /// The body ended with another length than announced and cannot be continued.
        case lengthMismatch(expected: Int64, actual: Int64)

        /// Whether the partial file and its record stay on disk for a later attempt.
        var keepsPartial: Bool {
            if case .lengthMismatch = self { return false }
            return true
        }
    }

    /// What the owner does next.
    enum Action: Sendable, Hashable {
        /// Send the request with these extra fields (none for a plain request); progress counts from
        /// `resumeOffset`.
        case sendRequest(extraHeaders: HTTPFields, resumeOffset: Int64)
        /// Delete the partial and its record, then send the request without `Range`.
        case startOver(StartOverReason)
        /// Truncate the partial and write this response's body from byte 0; keep `record` as the new
        /// sidecar (`nil`: this response cannot be resumed). `replacing` says why bytes on disk were
        /// dropped, when there were any.
        case writeFromStart(record: ResumeRecord?, replacing: StartOverReason?)
        /// Append this response's body to the partial, which keeps `record.bytesOnDisk` bytes.
        case append(record: ResumeRecord)
        /// The partial already holds the whole representation of `length` bytes: rename it into place.
        case alreadyComplete(length: Int64)
        /// The body is complete: rename the partial into place and delete the record.
        case complete(length: Int64)
        /// Persist `record` and leave the partial: the next download resumes from it.
        case keepPartial(record: ResumeRecord)
        /// Delete the partial: it cannot be resumed (the response had no strong validator).
        case discardPartial
        /// Stop; ``Failure/keepsPartial`` says what to do with the partial.
        case fail(Failure)
    }

    private enum State: Sendable {
        case idle
        /// A request went out, asking from `offset` (0: the whole representation).
        case awaitingResponse(offset: Int64, record: ResumeRecord?)
        /// A body is being written; the file holds `bytesOnDisk` bytes, `written` of them from this
        /// response, and should end at `expectedLength` when known.
        case writing(record: ResumeRecord?, bytesOnDisk: Int64, written: Int64, expectedLength: Int64?)
        case done
    }

    /// The URL being downloaded; a record for another URL is not used.
    let url: String
    private var state: State = .idle

    /// Creates the machine for one download.
    /// - Parameter url: The URL, as recorded in ``ResumeRecord/url``.
    init(url: String) {
        self.url = url
    }

    /// The record describing what is on disk now (bytes written included), when the download can be
    /// resumed; persist it from time to time and when interrupted.
    var record: ResumeRecord? {
        switch state {
        case .awaitingResponse(_, let record): return record
        case .writing(var record, let bytesOnDisk, _, _):
            record?.bytesOnDisk = bytesOnDisk
            return record
        case .idle, .done: return nil
        }
    }

    /// The download begins.
    /// - Parameters:
    ///   - partialLength: The size of the partial file on disk (0 when there is none).
    ///   - record: The sidecar read next to it, if any.
    /// - Returns: ``Action/sendRequest(extraHeaders:resumeOffset:)`` or ``Action/startOver(_:)``.
    mutating func start(partialLength: Int64, record: ResumeRecord?) -> Action {
        guard case .idle = state else { preconditionFailure("a download starts once") }
        guard partialLength > 0 else {
            state = .awaitingResponse(offset: 0, record: nil)
            return .sendRequest(extraHeaders: [:], resumeOffset: 0)
        }
        let reason: StartOverReason
        if let record, record.url == url, record.version == ResumeRecord.currentVersion {
            if let validator = record.ifRangeValue {
                if let complete = record.completeLength, partialLength > complete {
                    reason = .partialLongerThanRepresentation
                } else {
                    var resumed = record
                    resumed.bytesOnDisk = partialLength
                    state = .awaitingResponse(offset: partialLength, record: resumed)
                    return .sendRequest(extraHeaders: Self.rangeHeaders(from: partialLength, ifRange: validator), resumeOffset: partialLength)
                }
            } else {
                reason = record.entityTag != nil ? .weakValidatorOnly : .noRecord
            }
        } else {
            reason = .noRecord
        }
        state = .awaitingResponse(offset: 0, record: nil)
        return .startOver(reason)
    }

    /// The response's status and fields arrived (after redirects).
    /// - Parameters:
    ///   - status: The status code.
    ///   - headers: The response's fields.
    /// - Returns: What to do with the body.
    mutating func receivedHead(status: Int, headers: HTTPFields) -> Action {
        guard case .awaitingResponse(let offset, let record) = state else {
            preconditionFailure("a response arrived while none was awaited")
        }
        switch status {
        case 200:
            let fresh = ResumeValidators.record(url: url, headers: headers)
            let replacing: StartOverReason? = offset > 0 ? (Self.sameValidator(record, headers) ? .rangeIgnored : .validatorChanged) : nil
            state = .writing(record: fresh, bytesOnDisk: 0, written: 0, expectedLength: Self.contentLength(headers))
            return .writeFromStart(record: fresh, replacing: replacing)
        case 206:
            guard offset > 0, var record else { return fail(.unexpectedStatus(206)) }
            guard ResumeValidators.isIdentityEncoded(headers) else { return startOver(.contentEncoded) }
            let ranges = headers[values: .contentRange]
            guard ranges.count == 1, let span = CachePartialContent.span(contentRange: ranges[0]), Int64(span.first) == offset,
                record.completeLength.map({ $0 == Int64(span.completeLength) }) ?? true
            else { return startOver(.contentRangeMismatch) }
            guard ResumeValidators.partialMatches(record, headers) else { return startOver(.validatorChanged) }
            record.completeLength = Int64(span.completeLength)
            record.bytesOnDisk = offset
            state = .writing(record: record, bytesOnDisk: offset, written: 0, expectedLength: Int64(span.last) + 1)
            return .append(record: record)
        case 416:
            guard offset > 0, let record else { return fail(.unexpectedStatus(416)) }
            // A server that ignores `If-Range` answers a changed (shorter) representation with 416 too:
            // the bytes on disk are complete only when nothing contradicts the record. Every length
            // known (the recorded one, the 416's) is the bytes on disk, at least one is known, and the
            // 416's validators, when it has any, are the recorded ones.
            let ranges = headers[values: .contentRange]
            let stated = ranges.count == 1 ? Self.unsatisfiedLength(ranges[0]) : nil
            let lengths = [record.completeLength, stated].compactMap { $0 }
            let readable = ranges.isEmpty || stated != nil
            if readable, !lengths.isEmpty, lengths.allSatisfy({ $0 == offset }), ResumeValidators.partialMatches(record, headers) {
                state = .done
                return .alreadyComplete(length: offset)
            }
            return startOver(.rangeNotSatisfiable)
        default:
            return fail(.unacceptableStatus(status))
        }
    }

    /// Body bytes were written to the partial.
    /// - Parameter count: How many.
    mutating func wroteBytes(_ count: Int64) {
        guard case .writing(let record, let bytesOnDisk, let written, let expected) = state else {
            preconditionFailure("bytes written while no body was being written")
        }
        state = .writing(record: record, bytesOnDisk: bytesOnDisk + count, written: written + count, expectedLength: expected)
    }

    /// The response's body ended without error.
    /// - Returns: ``Action/complete(length:)``; ``Action/sendRequest(extraHeaders:resumeOffset:)`` when a
    ///   206 covered less than the rest and the download can go on; or ``Action/fail(_:)``.
    mutating func bodyComplete() -> Action {
        guard case .writing(let record, let bytesOnDisk, let written, let expected) = state else {
            preconditionFailure("a body completed while none was being written")
        }
        let complete = record?.completeLength ?? expected
        guard let complete, bytesOnDisk != complete else {
            state = .done
            return .complete(length: bytesOnDisk)
        }
        // A server may answer an open range with less than the rest (§14.1.2): ask again for what is
        // left, as long as each exchange brings something.
        if bytesOnDisk < complete, written > 0, var record, let validator = record.ifRangeValue {
            record.bytesOnDisk = bytesOnDisk
            state = .awaitingResponse(offset: bytesOnDisk, record: record)
            return .sendRequest(extraHeaders: Self.rangeHeaders(from: bytesOnDisk, ifRange: validator), resumeOffset: bytesOnDisk)
        }
        return fail(.lengthMismatch(expected: complete, actual: bytesOnDisk))
    }

    /// The download stopped before its body was complete: the connection was lost, it was cancelled
    /// to be resumed later, or a write failed.
    /// - Returns: ``Action/keepPartial(record:)`` when it can be resumed, else ``Action/discardPartial``.
    mutating func interrupted() -> Action {
        let current = record
        state = .done
        if let current, current.ifRangeValue != nil, current.bytesOnDisk > 0 { return .keepPartial(record: current) }
        return .discardPartial
    }

    // MARK: Helpers

    private mutating func startOver(_ reason: StartOverReason) -> Action {
        state = .awaitingResponse(offset: 0, record: nil)
        return .startOver(reason)
    }

    private mutating func fail(_ failure: Failure) -> Action {
        state = .done
        return .fail(failure)
    }

    /// `Range: bytes=N-` and `If-Range` (§14.2, §13.1.5), and `Accept-Encoding: identity`, since the
    /// bytes on disk are the representation's own and a range of an encoded one would not continue them.
    static func rangeHeaders(from offset: Int64, ifRange validator: String) -> HTTPFields {
        var fields = HTTPFields()
        fields[.range] = "bytes=\(offset)-"
        fields[.ifRange] = validator
        fields[.acceptEncoding] = "identity"
        return fields
    }

    /// Whether a 200 carries the validator the range was conditioned on (so the server ignored
    /// `Range` rather than the representation changing).
    private static func sameValidator(_ record: ResumeRecord?, _ headers: HTTPFields) -> Bool {
        guard let record else { return false }
        if let recorded = record.entityTag {
            return headers[.eTag].map { ResumeValidators.strongMatch($0, recorded) } ?? false
        }
        if let recorded = record.lastModified { return headers[.lastModified] == recorded }
        return false
    }

    private static func contentLength(_ headers: HTTPFields) -> Int64? {
        guard ResumeValidators.isIdentityEncoded(headers) else { return nil }
        return headers[.contentLength].flatMap { Int64($0.trimmingCharacters(in: .whitespaces)) }
    }

    /// The complete length of `bytes */L` (§14.4), the form a 416 carries.
    static func unsatisfiedLength(_ value: String) -> Int64? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        guard trimmed.lowercased().hasPrefix("bytes */") else { return nil }
        let digits = trimmed.dropFirst("bytes */".count)
        guard !digits.isEmpty, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber) else { return nil }
        return Int64(digits)
    }
}
