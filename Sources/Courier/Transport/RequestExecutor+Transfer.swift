import Foundation
import HTTPTypes
import NIOCore

// A response body that goes to files and/or a body stream instead of memory: read chunk by chunk, so
// memory stays constant for any size; while a chunk waits (a slow consumer, a disk, a bandwidth limit)
// the connection is not read and TCP slows the server down. A resumable download runs
// `DownloadResumeStateMachine`'s decisions: what to ask for, what to do with each answer, what to keep.
extension RequestExecutor {
    /// What a resumable download knows between exchanges: its state machine and its sidecar.
    struct ResumeDriver: Sendable {
        var machine: DownloadResumeStateMachine
        let store: ResumeRecordStore
        /// The bytes already on disk that this exchange continues.
        var offset: Int64 = 0

        /// Reads what is on disk (off the caller's thread) and decides the first request's extra fields.
        /// - Throws: ``NetworkError/Code/fileUnavailable`` when the partial file or its record is not a
        ///   regular file (a link, a FIFO, a device): it is left alone.
        static func begin(for request: PreparedRequest) async throws(NetworkError) -> (driver: ResumeDriver, extraHeaders: HTTPFields)? {
            guard request.destination.isResumable, let destination = request.destination.files.first else { return nil }
            let store = ResumeRecordStore(destination: destination)
            try await store.checkSidecars()
            await store.removeStaleTemporaries()
            var driver = ResumeDriver(machine: DownloadResumeStateMachine(url: request.url.absoluteString), store: store)
            let action = driver.machine.start(partialLength: await store.partialLength(), record: await store.read())
            var extra: HTTPFields = [.acceptEncoding: "identity"]   // ranges count the representation's own bytes
            switch action {
            case .sendRequest(let fields, let offset):
                driver.offset = offset
                for field in fields { extra[field.name] = field.value }
            default:
                await store.removePartial()   // and its record, unless another download holds them
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
        if var driver = resume {
            var recordToWrite: ResumeRecord?
            switch driver.machine.receivedHead(status: response.status.code, headers: response.headers) {
            case .writeFromStart(let record, _):
                // The old record goes first: a kill before the truncation below must not leave old bytes
                // under a new validator. The new one is written once the file is truncated.
                await driver.store.removeRecord()
                recordToWrite = record
            case .append(let record):
                recordToWrite = record
                offset = driver.offset
            case .alreadyComplete(let length):
                try await discardBody(of: response)
                try await DownloadWriter.open(destination.files, resumingAt: length).finish()
                await driver.store.removeRecord()
                resume = driver
                var headers = response.headers
                headers[.contentRange] = nil
                headers[.contentLength] = String(length)
                progress.download(TransferProgress(completedBytes: length, totalBytes: length))
                return .delivered(destination.files, status: .ok, headers: headers)
            case .startOver:
                try await discardBody(of: response)
                await driver.store.removePartial()
                driver.offset = 0
                resume = driver
                return .startOver
            case .fail, .sendRequest, .complete, .keepPartial, .discardPartial:
                // An answer a resumable download cannot use (a 203, a 204, ...): the bytes on disk stay.
                try await discardBody(of: response)
                resume = nil
                throw NetworkError(
                    .unacceptableStatus, "the server answered \(response.status.code) \(response.status.reasonPhrase) to a resumable download",
                    url: request.url.absoluteString)
            }
            resume = driver
            if let record = recordToWrite { pendingRecord = record }
        }
        let isEncoded = response.headers[.contentEncoding].map { !$0.isEmpty && $0.lowercased() != "identity" } ?? false
        let declared = (isEncoded || request.method == .head) ? nil : response.headers[.contentLength].flatMap { Int64($0) }
        // A 206 to a resumption Courier started names the whole file's length (which a short 206 does not
        // reach); a 206 to a caller's own `Range` is the file, its length is the range's.
        let span = response.status.code == 206 ? response.headers[.contentRange].flatMap(CachePartialContent.span(contentRange:)) : nil
        let whole = resume != nil ? span.map { Int64($0.completeLength) } : span.map { Int64($0.last - $0.first + 1) }
        let total = resume != nil ? (whole ?? declared.map { $0 + offset }) : (declared ?? whole)
        let limit = destination.files.isEmpty ? nil : destination.maximumFileSize
        if let limit, let total, total > limit {
            try await discardBody(of: response)
            if let driver = resume { await uncancelled { await driver.store.removePartial() } }
            resume = nil
            throw Self.tooLarge(total, limit: limit, url: request.url)
        }
        var writer = destination.files.isEmpty ? nil : try await DownloadWriter.open(destination.files, resumingAt: offset)
        if let record = pendingRecord, let store = resume?.store {
            do { try await store.write(record) } catch {
                await writer?.abandon(keep: offset > 0)
                throw error
            }
        }
        var meter = ProgressMeter(completed: offset, total: total, at: .now)
        let throttles = destination.throttles
        do {
            for try await part in response.body {
                if let limit, meter.completed + Int64(part.readableBytes) > limit {
                    destination.control.discardPartial()   // over the limit: nothing is kept to resume
                    throw Self.tooLarge(meter.completed + Int64(part.readableBytes), limit: limit, url: request.url)
                }
                try await writer?.write(part)
                resume?.machine.wroteBytes(Int64(part.readableBytes))
                if let channel = destination.channel { await channel.send(Data(part.readableBytesView)) }
                if let report = meter.add(part.readableBytes, at: .now) { progress.download(report) }
                try await Throttle.wait(for: part.readableBytes, under: throttles)
            }
            if meter.completed == 0 {
                progress.download(TransferProgress(completedBytes: 0, totalBytes: total ?? 0))
            } else if let report = meter.finish(at: .now) {
                progress.download(report)
            }
            let received = meter.completed
            if var driver = resume {
                switch driver.machine.bodyComplete() {
                case .complete: break
                case .sendRequest(let fields, let resumeOffset):
                    // Less than the rest: keep what came and ask again from there.
                    await writer?.abandon(keep: true)
                    if let record = driver.machine.record { try await driver.store.write(record) }
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
            try await writer?.finish()
            await resume?.store.removeRecord()
        } catch {
            // Cleanup runs to its end even in a cancelled task: the record it keeps is what resumes.
            let current = resume
            resume = await uncancelled { [writer] in
                var driver = current
                await interrupted(writer: writer, resume: &driver, destination: destination)
                return driver
            }
            throw error
        }
        destination.channel?.finish(nil)
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
        if destination.keepsPartialFile, case .keepPartial(let record) = action {
            await writer?.abandon(keep: true)
            try? await driver.store.write(record)
        } else {
            await writer?.abandon(keep: false)
            await driver.store.removePartial()
        }
    }
}
