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
        static func begin(for request: PreparedRequest) async -> (driver: ResumeDriver, extraHeaders: HTTPFields)? {
            guard request.destination.isResumable, let destination = request.destination.files.first else { return nil }
            let store = ResumeRecordStore(destination: destination)
            var driver = ResumeDriver(machine: DownloadResumeStateMachine(url: request.url.absoluteString), store: store)
            let action = driver.machine.start(partialLength: await store.partialLength(), record: await store.read())
            var extra: HTTPFields = [.acceptEncoding: "identity"]   // ranges count the representation's own bytes
            switch action {
            case .sendRequest(let fields, let offset):
                driver.offset = offset
                for field in fields { extra[field.name] = field.value }
            default:
                await store.removePartial()
                await store.removeRecord()
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
                await driver.store.removeRecord()
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
        let total = declared.map { $0 + offset }
        var writer = destination.files.isEmpty ? nil : try await DownloadWriter.open(destination.files, resumingAt: offset)
        if let record = pendingRecord, let store = resume?.store {
            do { try await store.write(record) } catch {
                await writer?.abandon(keep: offset > 0)
                throw error
            }
        }
        var received = offset
        var rate = TransferRate()
        do {
            for try await part in response.body {
                try await writer?.write(part)
                resume?.machine.wroteBytes(Int64(part.readableBytes))
                if let channel = destination.channel { await channel.send(Data(part.readableBytesView)) }
                received += Int64(part.readableBytes)
                let now = ContinuousClock.now
                rate.add(part.readableBytes, at: now)
                progress.download(TransferProgress(
                    completedBytes: received, totalBytes: total, bytesPerSecond: rate.bytesPerSecond(at: now),
                    estimatedTimeRemaining: total.flatMap { rate.estimatedTimeRemaining(remainingBytes: max(0, $0 - received), at: now) }))
                try await Throttle.wait(for: part.readableBytes, under: destination.throttles)
            }
            if received == 0 { progress.download(TransferProgress(completedBytes: 0, totalBytes: total ?? 0)) }
            if var driver = resume {
                switch driver.machine.bodyComplete() {
                case .complete: break
                default:
                    resume = driver
                    throw NetworkError(.connectionLost, "the body ended after \(received) bytes, before the whole file; the next download resumes from there",
                                       url: request.url.absoluteString)
                }
                resume = driver
            }
            try await writer?.finish()
            await resume?.store.removeRecord()
        } catch {
            await interrupted(writer: writer, resume: &resume, destination: destination)
            throw error
        }
        destination.channel?.finish(nil)
        var headers = response.headers
        if offset > 0 {
            // The file is the whole representation: describe it so.
            headers[.contentRange] = nil
            headers[.contentLength] = String(received)
        }
        return .delivered(destination.files, status: offset > 0 ? .ok : response.status, headers: headers)
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
        // In a task of its own: this task may be cancelled, and NIO's thread pool refuses work from it.
        let store = driver.store
        if destination.keepsPartialFile, case .keepPartial(let record) = action {
            await writer?.abandon(keep: true)
            await Task { try? await store.write(record) }.value
        } else {
            await writer?.abandon(keep: false)
            await Task {
                await store.removePartial()
                await store.removeRecord()
            }.value
        }
    }
}
