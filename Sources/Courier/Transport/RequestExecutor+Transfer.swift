import Foundation
import HTTPTypes
import NIOCore

// A response body that goes to files and/or a body stream instead of memory: read chunk by chunk, so
// memory stays constant for any size; while a chunk waits (a slow consumer, a disk, a bandwidth limit)
// the connection is not read and TCP slows the server down. A resumable download runs
// `DownloadResumeStateMachine`'s decisions: what to ask for, what to do with each answer, what to keep.
extension RequestExecutor {
    /// What a resumable download knows between exchanges: its state machine and its partial file (with
    /// its sidecar), held (locked) from ``begin(for:)`` to the end of the download.
    struct ResumeDriver: Sendable {
        var machine: DownloadResumeStateMachine
        /// The partial file, locked before it was measured; renamed into place by the writer's
        /// `finish`, else released by the transfer or, at the latest, when the exchanges end.
        let partial: HeldPartialFile
        /// The bytes already on disk that this exchange continues.
        var offset: Int64 = 0

        /// Locks the partial file, then reads what is on disk (off the caller's thread) and decides the
        /// first request's extra fields. Nothing is sent when the partial file cannot be held.
        /// - Throws: ``NetworkError/Code/fileUnavailable`` when another download (of this process or
        ///   another) holds the partial file ("the destination is busy"), or the partial file or its
        ///   record is not a regular file (a link, a FIFO, a device): it is left alone.
        static func begin(for request: PreparedRequest) async throws(NetworkError) -> (driver: ResumeDriver, extraHeaders: HTTPFields)? {
            guard request.destination.isResumable, let destination = request.destination.files.first else { return nil }
            let (partial, record) = try await HeldPartialFile.acquire(for: ResumeRecordStore(destination: destination))
            var driver = ResumeDriver(machine: DownloadResumeStateMachine(url: request.url.absoluteString), partial: partial)
            let action = driver.machine.start(partialLength: partial.initialLength, record: record)
            var extra: HTTPFields = [.acceptEncoding: "identity"]   // ranges count the representation's own bytes
            switch action {
            case .sendRequest(let fields, let offset):
                driver.offset = offset
                for field in fields { extra[field.name] = field.value }
            default:
                do { try await partial.startOver() } catch {
                    await partial.release(keeping: true)
                    throw error
                }
            }
            return (driver, extra)
        }
    }

    /// What the transfer of one answer decided.
    enum TransferOutcome {
        /// The body is in place (or streamed): the files written.
        case delivered([URL], status: HTTPResponse.Status, headers: HTTPFields)
        /// The bytes on disk cannot be continued: ask again, whole.
        case startOver
        /// A 206 brought less than the rest (RFC 9110 §14.1.2 allows it): the bytes are kept and the
        /// next exchange asks for what is left with these fields.
        case continueWith(HTTPFields)
    }

    /// Streams an accepted response body to its destination; a resumable download appends, restarts or
    /// finishes as its state machine says.
    func transfer(
        _ response: TransportResponse, for request: PreparedRequest, resume: inout ResumeDriver?, progress: ProgressSink
    ) async throws -> TransferOutcome {
        let destination = request.destination
        var offset: Int64 = 0
        var pendingRecord: ResumeRecord?
        let limit = destination.files.isEmpty ? nil : destination.maximumFileSize
        if var driver = resume {
            switch driver.machine.receivedHead(status: response.status.code, headers: response.headers) {
            case .writeFromStart(let record, _):
                // The old record and bytes go first, under the lock: a kill before the new record is
                // written leaves nothing to resume from, never old bytes under a new validator (or an old
                // validator over new bytes, when this answer has none).
                try await driver.partial.startOver()
                pendingRecord = record
            case .append(let record):
                pendingRecord = record
                offset = driver.offset
            case .alreadyComplete(let length):
                try await discardBody(of: response)
                if let limit, length > limit {
                    await driver.partial.release(keeping: false)
                    resume = nil
                    throw Self.tooLarge(length, limit: limit, url: request.url)
                }
                // Renamed into place, its record removed, under the lock held since it was measured.
                try await DownloadWriter.open(destination.files, holding: driver.partial, resumingAt: length).finish()
                resume = driver
                var headers = response.headers
                headers[.contentRange] = nil
                headers[.contentLength] = String(length)
                progress.download(TransferProgress(completedBytes: length, totalBytes: length))
                return .delivered(destination.files, status: .ok, headers: headers)
            case .startOver:
                try await discardBody(of: response)
                try await driver.partial.startOver()
                driver.offset = 0
                resume = driver
                return .startOver
            case .fail, .sendRequest, .complete, .keepPartial, .discardPartial:
                // An answer a resumable download cannot use (a 203, a 204, ...): the bytes on disk stay
                // (the held file is released when the exchanges end).
                try await discardBody(of: response)
                resume = nil
                throw NetworkError(
                    .unacceptableStatus, "the server answered \(response.status.code) \(response.status.reasonPhrase) to a resumable download",
                    url: request.url.absoluteString)
            }
            resume = driver
        }
        let isEncoded = response.headers[.contentEncoding].map { !$0.isEmpty && $0.lowercased() != "identity" } ?? false
        let declared = (isEncoded || request.method == .head) ? nil : response.headers[.contentLength].flatMap { Int64($0) }
        // A 206 to a resumption Courier started names the whole file's length (which a short 206 does not
        // reach); a 206 to a caller's own `Range` is the file, its length is the range's.
        let span = response.status.code == 206 ? response.headers[.contentRange].flatMap(CachePartialContent.span(contentRange:)) : nil
        let whole = resume != nil ? span.map { Int64($0.completeLength) } : span.map { Int64($0.last - $0.first + 1) }
        let total = resume != nil ? (whole ?? declared.map { $0 + offset }) : (declared ?? whole)
        if let limit, let total, total > limit {
            try await discardBody(of: response)
            await resume?.partial.release(keeping: false)
            resume = nil
            throw Self.tooLarge(total, limit: limit, url: request.url)
        }
        var keptAfterFailedFinish = false
        var writer = destination.files.isEmpty ? nil : try await DownloadWriter.open(destination.files, holding: resume?.partial, resumingAt: offset)
        if let record = pendingRecord, let partial = resume?.partial {
            do { try await partial.writeRecord(record) } catch {
                await writer?.abandon(keep: offset > 0)
                throw error
            }
        }
        var meter = ProgressMeter(completed: offset, total: total, at: .now)
        let throttles = destination.throttles
        do {
            for try await part in response.body {
                if let limit, meter.completed + Int64(part.readableBytes) > limit {
                    destination.control?.discardPartial()   // over the limit: nothing is kept to resume
                    throw Self.tooLarge(meter.completed + Int64(part.readableBytes), limit: limit, url: request.url)
                }
                try await writer?.write(part)
                resume?.machine.wroteBytes(Int64(part.readableBytes))
                if let channel = destination.channel { await channel.send(Data(part.readableBytesView)) }
                if let report = meter.add(part.readableBytes, at: .now) { progress.download(report) }
                try await Throttle.wait(for: part.readableBytes, under: throttles)
            }
            // The write still in flight, and what is gathered, reach the disk before the body counts as
            // complete: a write that fails here is an interrupted transfer (a resumable download keeps
            // what the files hold, and its record counts no more), not a whole body that could not be
            // put in place.
            try await writer?.flush()
            if meter.completed == 0 {
                progress.download(TransferProgress(completedBytes: 0, totalBytes: total ?? 0))
            } else if let report = meter.finish(at: .now) {
                progress.download(report)
            }
            let received = meter.completed
            // What the bytes on disk are, should the finished file fail to go in place.
            let completeRecord = resume?.machine.record
            if var driver = resume {
                switch driver.machine.bodyComplete() {
                case .complete: break
                case .sendRequest(let fields, let resumeOffset):
                    // Less than the rest: keep what came (the partial file stays held) and ask again from there.
                    // Every byte received is on disk already (the flush above), so the next request continues there.
                    await writer?.abandon(keep: true)
                    if let record = driver.machine.record { try await driver.partial.writeRecord(record) }
                    driver.offset = resumeOffset
                    resume = driver
                    var next: HTTPFields = [.acceptEncoding: "identity"]
                    for field in fields { next[field.name] = field.value }
                    return .continueWith(next)
                default:
                    // A length the bytes cannot be continued to (`Failure.lengthMismatch`): the machine is
                    // done, so the cleanup below removes the partial file and its record.
                    resume = driver
                    throw NetworkError(.connectionLost, "the body ended after \(received) bytes, not the length announced, and cannot be continued; "
                                       + "the partial file was removed and the next download starts over", url: request.url.absoluteString)
                }
                resume = driver
            }
            do {
                try await writer?.finish()   // a resumable download's record goes with it, under its lock
            } catch {
                // The body is whole but could not be put in place (the destination is a folder, its folder
                // read-only): a resumable download keeps it, with its record, still under its lock; the
                // next download is answered 416 and finishes it without the bytes again.
                if let driver = resume, destination.keepsPartialFile, let record = completeRecord {
                    try? await driver.partial.writeRecord(record)
                    await driver.partial.release(keeping: true)
                    keptAfterFailedFinish = true
                }
                throw error
            }
        } catch {
            if keptAfterFailedFinish { throw error }
            // Cleanup runs to its end even in a cancelled task: the record it keeps is what resumes.
            let current = resume
            resume = await uncancelled { [writer] in
                var driver = current
                await interrupted(writer: writer, resume: &driver, destination: destination)
                return driver
            }
            throw error
        }
        if let trailers = response.trailers?() { progress.trailers(trailers) }
        // A body stream's end is the operation's outcome (NetworkOperation.publishOutcome): the
        // interceptors may still send the request again (an accepted 503 with an empty body, retried).
        var headers = response.headers
        if offset > 0 {
            // The file is the whole representation: describe it so.
            headers[.contentRange] = nil
            headers[.contentLength] = String(meter.completed)
        }
        return .delivered(destination.files, status: offset > 0 ? .ok : response.status, headers: headers)
    }

    private static func tooLarge(_ bytes: Int64, limit: Int64, url: URL) -> NetworkError {
        NetworkError(.bodyTooLarge, "the download of \(bytes) bytes or more exceeds maximumDownloadSize, \(limit) bytes",
                     url: url.absoluteString)
    }

    /// The transfer stopped early: a resumable download keeps its bytes and record for next time
    /// (unless an explicit cancel asked to discard them); any other removes its partial files.
    private func interrupted(writer: DownloadWriter?, resume: inout ResumeDriver?, destination: ResponseDestination) async {
        guard var driver = resume else {
            await writer?.abandon(keep: false)
            return
        }
        let action = driver.machine.interrupted()
        resume = driver
        // The caller runs this in a task of its own (`uncancelled`): NIO's thread pool refuses work from a
        // cancelled task, and this is what keeps the bytes.
        // The record is written (or both files removed) before the partial file's lock is let go. A record
        // that cannot be written (a full disk) leaves the one before it, if any; without one the next
        // download starts over.
        if destination.keepsPartialFile, case .keepPartial(var record) = action {
            // A write that failed (a full disk) leaves fewer bytes than arrived: the record counts those.
            if let onDisk = await writer?.abandon(keep: true) { record.bytesOnDisk = min(record.bytesOnDisk, onDisk) }
            try? await driver.partial.writeRecord(record)
            await driver.partial.release(keeping: true)
        } else {
            await writer?.abandon(keep: false)
            await driver.partial.release(keeping: false)
        }
    }
}
