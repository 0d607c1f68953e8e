import Foundation
import HTTPTypes
import NIOCore
import NIOPosix

/// Runs one flight: sends a prepared request through a transport, follows redirects by the
/// request's policy, reads the body within its size limit and reports progress.
struct RequestExecutor: Sendable {
    /// Where progress goes while a flight runs.
    struct ProgressSink: Sendable {
        var upload: @Sendable (TransferProgress) -> Void = { _ in }
        var download: @Sendable (TransferProgress) -> Void = { _ in }
        var informational: @Sendable (HTTPResponse.Status, HTTPFields) -> Void = { _, _ in }
        /// Each request as it goes on the wire, after the interceptors adapted it (one per redirect hop).
        var sending: @Sendable (PreparedRequest) -> Void = { _ in }
        /// The head of each final response, redirects included, with its HTTP version when known.
        var head: @Sendable (HTTPResponse.Status, HTTPFields, NetworkResponse.ProtocolVersion?) -> Void = { _, _, _ in }
        /// A redirect is followed to this URL.
        var redirect: @Sendable (URL) -> Void = { _ in }
        /// The trailer fields of a body streamed to its destination, before its end is told.
        var trailers: @Sendable (HTTPFields) -> Void = { _ in }
    }

    /// Bytes of a redirect's body read (and dropped) so the connection can be reused; more closes it.
    static let redirectBodyAllowance = 64 * 1024

    let transport: any HTTPTransport

    /// Runs the flight. A total timeout bounds all of it (head, body, redirects) whatever the transport
    /// does with its own deadline or with cancellation: when it runs out the answer is
    /// ``NetworkError/Code/timeout`` at once, and the flight is cancelled without being waited for.
    /// - Parameters:
    ///   - request: The request.
    ///   - progress: Where progress goes.
    ///   - whileHoldingFiles: For a download to files, run by the flight with its outcome while it still
    ///     holds its destinations (the queue copies a shared download's file to the other operations'
    ///     destinations there, before anyone else may write the file).
    func run(
        _ request: PreparedRequest, progress: ProgressSink = ProgressSink(),
        whileHoldingFiles: (@Sendable (Result<NetworkResponse, NetworkError>) async -> Void)? = nil
    ) async -> Result<NetworkResponse, NetworkError> {
        guard let total = request.totalTimeout else {
            return await flight(request, deadline: nil, progress: progress, whileHoldingFiles: whileHoldingFiles)
        }
        // The whole operation's: counted from its first attempt, so retries (and their waits) are within it.
        let deadline = (request.firstAttemptAt ?? .now) + total
        let race = DeadlineRace(url: request.url.absoluteString)
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                race.start(continuation)
                let flightTask = Task {
                    let result = await flight(request, deadline: deadline, progress: progress, whileHoldingFiles: whileHoldingFiles)
                    race.finish(result)
                }
                let timer = MultiThreadedEventLoopGroup.singleton.any().scheduleTask(deadline: NIODeadline(deadline)) {
                    let timeout = NetworkError(
                        .timeout, "the request took longer than its total timeout of \(total)", url: request.url.absoluteString)
                    // When the timeout wins, a body stream's reader hears it too, not the cancellation of the
                    // flight that follows.
                    race.finish(.failure(timeout)) { request.destination.channel?.finish(timeout) }
                }
                race.attach(flightTask, timer: timer)
            }
        } onCancel: {
            race.cancel()
        }
    }

    /// One flight. A download to files holds its destinations (``DestinationLocks``, in this process;
    /// a resumable one also its partial file's `flock`, against other processes) throughout, from
    /// reading what is on disk to renaming or keeping its partial files; cancelled by
    /// ``NetworkOperation/cancel()`` before its body came, a resumable download removes its resume data.
    private func flight(
        _ request: PreparedRequest, deadline: ContinuousClock.Instant?, progress: ProgressSink,
        whileHoldingFiles: (@Sendable (Result<NetworkResponse, NetworkError>) async -> Void)?
    ) async -> Result<NetworkResponse, NetworkError> {
        let destination = request.destination
        guard !destination.files.isEmpty else { return await exchanges(request, deadline: deadline, progress: progress) }
        let result = await DestinationLocks.shared.withDestinations(destination.files, noting: destination.control) {
            let result = await exchanges(request, deadline: deadline, progress: progress)
            if destination.isResumable, destination.control?.isDiscarding == true, case .failure(let error) = result, error.code == .cancelled {
                await uncancelled { await ResumeRecordStore.discardResumeData(for: destination.files) }
            }
            await whileHoldingFiles?(result)
            return result
        }
        guard let result else {
            let failure = NetworkError.cancelled(url: request.url.absoluteString)
            destination.channel?.finish(failure)
            return .failure(failure)
        }
        return result
    }

    /// The exchanges of one flight. A resumable download holds its partial file from before it reads what
    /// is on disk (``ResumeDriver/begin(for:)``); what its transfer did not rename or release is released
    /// here, kept to resume unless an explicit cancel discarded it.
    private func exchanges(
        _ request: PreparedRequest, deadline: ContinuousClock.Instant?, progress: ProgressSink
    ) async -> Result<NetworkResponse, NetworkError> {
        var redirects = RedirectStateMachine(request: request)
        var held: HeldPartialFile?
        let result: Result<NetworkResponse, NetworkError>
        do {
            var resume: ResumeDriver?
            if let (driver, extra) = try await ResumeDriver.begin(for: request) {
                resume = driver
                held = driver.partial
                redirects.setHeaders(extra)
            }
            result = try await exchange(request, redirects: &redirects, resume: &resume, deadline: deadline, progress: progress)
        } catch {
            let failure: NetworkError = Task.isCancelled
                ? .cancelled(url: request.url.absoluteString) : .wrapping(error, url: redirects.current.url.absoluteString)
            // A body stream's reader hears the operation's outcome (after the interceptors decided whether
            // to try again, which they may while the reader has had no byte).
            result = .failure(failure)
        }
        await held?.release(keeping: request.destination.keepsPartialFile)
        return result
    }

    /// Sends the request and follows its redirects (and a resumable download's further exchanges) until
    /// an answer is delivered.
    private func exchange(
        _ request: PreparedRequest, redirects: inout RedirectStateMachine, resume: inout ResumeDriver?,
        deadline: ContinuousClock.Instant?, progress: ProgressSink
    ) async throws -> Result<NetworkResponse, NetworkError> {
        while true {
            try Task.checkCancellation()
            let current = redirects.current
            // The interceptors adapt each hop; the redirect machine goes on from the request as composed,
            // so what they add is added again (or not, across origins) on the next hop.
            let sent = try await request.interceptors.adapt(
                current, attempt: request.attempt, visited: redirects.visited, originalURL: redirects.originalURL)
            try Task.checkCancellation()
            redirects.sent(to: sent.url)
            progress.sending(sent)
            let wire = try await transportRequest(for: sent, deadline: deadline, progress: progress)
            let response = try await transport.execute(wire)
            if let body = wire.body { progress.upload(TransferProgress(completedBytes: Int64(body.count), totalBytes: Int64(body.count))) }
            progress.head(response.status, response.headers, response.version)
            await request.interceptors.didReceive(
                status: response.status, headers: response.headers, for: sent, attempt: request.attempt,
                visited: redirects.visited, originalURL: redirects.originalURL)
            if let completion = current.cacheCompletion, completion.mustResendWhole(status: response.status.code, headers: response.headers) {
                // The cache asked for the bytes its stored part lacks and got something else: ask for everything.
                try await discardBody(of: response)
                redirects.dropCacheCompletion()
                continue
            }
            switch redirects.receivedResponse(status: response.status.code, headers: response.headers) {
            case .deliver:
                let destination = current.destination
                let code = response.status.code
                if !destination.keepsInMemory, destination.acceptableStatusCodes.contains(code) || ((resume?.offset ?? 0) > 0 && code == 416) {
                    switch try await transfer(response, for: current, resume: &resume, progress: progress) {
                    case .delivered(let files, let status, let headers):
                        var delivered = NetworkResponse(
                            status: status, headers: headers, body: Data(),
                            url: current.url, originalURL: redirects.originalURL, redirectChain: redirects.chain)
                        delivered.fileURLs = files
                        delivered.version = response.version
                        delivered.trailers = response.trailers?()
                        return .success(delivered)
                    case .startOver:
                        redirects.setHeaders([:], removing: [.range, .ifRange])
                        continue
                    case .continueWith(let fields):
                        redirects.setHeaders(fields)
                        continue
                    }
                }
                // A body stream carries the body of an accepted answer only: this one is read to memory; the
                // reader hears the operation's error (or a retry's body).
                let body = try await readBody(of: response, for: current, progress: progress)
                var delivered = NetworkResponse(
                    status: response.status, headers: response.headers, body: body,
                    url: current.url, originalURL: redirects.originalURL, redirectChain: redirects.chain)
                delivered.version = response.version
                delivered.trailers = response.trailers?()
                return .success(delivered)
            case .follow(let next):
                if let source = next.bodySource, !source.isReplayable {
                    // A 307/308 asks for the same body again; a caller's one-shot stream is gone.
                    return .failure(NetworkError(
                        .bodyNotReplayable, "the \(response.status.code) redirect needs the body again, and a stream body can be sent once",
                        url: current.url.absoluteString))
                }
                progress.redirect(next.url)
                request.logger.debug("courier following redirect", metadata: [
                    "courier-status": "\(response.status.code)", "courier-url": "\(next.url.redactedForLogs)",
                ])
                try await discardBody(of: response)
            case .fail(let error):
                return .failure(error)
            }
        }
    }

    private func transportRequest(
        for request: PreparedRequest, deadline: ContinuousClock.Instant?, progress: ProgressSink
    ) async throws -> TransportRequest {
        var transportRequest = TransportRequest(
            method: request.method, url: request.url, headers: request.headers, body: request.body,
            options: request.options, deadline: deadline, logger: request.logger)
        if var source = request.bodySource {
            // Measured for each attempt (a file's size now); the stream holds the file to that size.
            try await source.prepare()
            let upload = progress.upload
            let throttles = request.destination.throttles
            let measured = source
            let total = measured.length
            // Trailers follow a body of no declared length (chunked in HTTP/1.1).
            transportRequest.streamedBody = TransportBody(
                length: measured.trailers == nil ? total : nil, isReplayable: measured.isReplayable
            ) {
                MeteredParts(base: measured.makeStream(), total: total, progress: upload, throttles: throttles)
            }
            if let trailers = measured.trailers {
                let sensitive = request.sensitiveNames
                transportRequest.trailers = { try await trailers.fields(refusing: sensitive) }
            }
        } else if let body = request.body, Throttle.limits(request.destination.throttles) {
            // A body in memory under a bandwidth limit goes part by part like a file, each part waiting its turn.
            let (upload, throttles, source) = (progress.upload, request.destination.throttles, RequestBodySource.data(body))
            transportRequest.body = nil
            transportRequest.streamedBody = TransportBody(length: Int64(body.count), isReplayable: true) {
                MeteredParts(base: source.makeStream(), total: Int64(body.count), progress: upload, throttles: throttles)
            }
        }
        if request.reportsInformational {
            transportRequest.didReceiveInformational = progress.informational
        }
        if transportRequest.body != nil {
            // The transport reports parts as it takes them; the whole (all of a small body) only once the
            // response's head says the server has it (`exchanges`), not before the first byte went.
            let upload = progress.upload
            transportRequest.didSendBodyBytes = { sent, total in
                if sent < total { upload(TransferProgress(completedBytes: sent, totalBytes: total)) }
            }
        }
        return transportRequest
    }

    private func readBody(
        of response: TransportResponse, for request: PreparedRequest, progress: ProgressSink
    ) async throws -> Data {
        let limit = request.maximumBodySize
        let (declaredLength, isEncoded) = Self.framing(of: response.headers)
        if request.method != .head, let declaredLength, declaredLength > Int64(limit) {
            throw NetworkError(
                .bodyTooLarge, "the body of \(declaredLength) bytes exceeds the limit of \(limit) bytes", url: request.url.absoluteString)
        }
        // A compressed body's length says nothing about the decompressed bytes we count.
        let total = (isEncoded || request.method == .head) ? nil : declaredLength
        // The first part is kept as it came (a body that arrives in one part, as small ones do, is never
        // copied into a buffer of our own); the room for the declared length is made when a second comes.
        var buffer = ByteBuffer()
        var parts = 0
        let throttles = request.destination.throttles
        var meter = ProgressMeter(total: total, at: .now)
        for try await part in response.body {
            guard buffer.readableBytes + part.readableBytes <= limit else {
                throw NetworkError(.bodyTooLarge, "the body exceeds the limit of \(limit) bytes", url: request.url.absoluteString)
            }
            parts += 1
            if parts == 1 {
                buffer = part
            } else {
                if parts == 2, let total, total > buffer.readableBytes {
                    buffer.reserveCapacity(minimumWritableBytes: Int(total) - buffer.readableBytes)
                }
                buffer.writeImmutableBuffer(part)
            }
            if let report = meter.add(part.readableBytes, at: .now) { progress.download(report) }
            try await Throttle.wait(for: part.readableBytes, under: throttles)
        }
        if buffer.readableBytes == 0 {
            progress.download(TransferProgress(completedBytes: 0, totalBytes: total ?? 0))
        } else if let report = meter.finish(at: .now) {
            progress.download(report)
        }
        return Data(buffer.readableBytesView)
    }

    /// A response's `Content-Length` (`nil` when absent, unreadable or given twice differently) and whether a
    /// `Content-Encoding` other than `identity` applies, read in one pass over the fields (a lookup by name
    /// joins every value into a new string, once per name, on every response).
    static func framing(of headers: HTTPFields) -> (length: Int64?, isEncoded: Bool) {
        var length: Int64?
        var lengths = 0
        var isEncoded = false
        for field in headers {
            if field.name == .contentLength {
                lengths += 1
                let value = Int64(field.value)
                length = lengths == 1 || value == length ? value : nil
            } else if field.name == .contentEncoding, !isEncoded {
                isEncoded = field.value.split(separator: ",").contains {
                    let coding = $0.trimmingCharacters(in: .whitespaces)
                    return !coding.isEmpty && coding.lowercased() != "identity"
                }
            }
        }
        return (length, isEncoded)
    }

    func discardBody(of response: TransportResponse) async throws {
        var read = 0
        for try await part in response.body {
            read += part.readableBytes
            if read > Self.redirectBodyAllowance { return }
        }
    }
}
