public import Foundation
public import HTTPTypes

// Bodies that do not go to memory: downloads to files, the body as a stream, bandwidth limits.
extension NetworkOperation {
    /// Where an operation's body goes when not to memory, and its own bandwidth limit.
    struct TransferState {
        var files: [URL] = []
        var isResumable = false {
            didSet { if isResumable, control == nil { control = TransferControl() } }
        }
        var channel: BodyChannel?
        var throttle: Throttle?
        /// ``NetworkOperation/isLongLived``.
        var isLongLived = false
        /// Tells a running flight what an explicit cancel decided about the partial file (a resumable
        /// download's only: made when the operation becomes one).
        private(set) var control: TransferControl?

        /// - Parameter queueThrottles: The queue's throttle as a list made once (a transfer without a
        ///   throttle of its own, nearly every one, builds no array).
        func destination(acceptableStatusCodes: Set<Int>, queueThrottles: [Throttle]) -> ResponseDestination {
            var throttles = queueThrottles
            if let throttle { throttles.append(throttle) }
            return ResponseDestination(
                files: files, isResumable: isResumable, channel: channel, acceptableStatusCodes: acceptableStatusCodes,
                throttles: throttles, control: control, isLongLived: isLongLived)
        }

        /// Whether the operation must have a flight of its own.
        var isExclusive: Bool { !files.isEmpty || channel != nil }
    }

    /// Removes the partial files and record of a resumable download cancelled explicitly (kept by an
    /// earlier run, or by its own flight's last attempt), before any download started later: the
    /// destinations are reserved in this call (``DestinationLocks/reserveForRemoval(_:by:)``), right behind
    /// the operation's own flight's writer (which may still be closing them), the files removed off the
    /// caller's thread. When another download holds or waits for one of them, its own outcome decides
    /// what is kept, and nothing is removed here.
    static func discardResumeData(for files: [URL], control: TransferControl?) {
        guard let ticket = DestinationLocks.shared.reserveForRemoval(files, by: control) else { return }
        Task {
            guard await DestinationLocks.shared.acquire(ticket) else { return }
            await ResumeRecordStore.discardResumeData(for: files)
            DestinationLocks.shared.release(ticket)
        }
    }

    /// Writes the response body to `destinations` instead of memory (MKNetworkKit's download streams:
    /// a working copy and a cache copy at once, say), in constant memory whatever its size. Each file is
    /// written beside its destination under a temporary name and moved into place only when the whole
    /// body arrived with an acceptable status; on failure or cancellation nothing half-written is left
    /// under the final name. The response then has ``NetworkResponse/fileURLs`` and no body in memory
    /// (``NetworkEngine/Configuration/maximumResponseBodySize`` does not apply). A response with an
    /// unacceptable status is read into memory as usual, for the error. Set before enqueueing.
    ///
    /// ```swift
    /// let op = engine.operation(path: "/exports/2026.csv").download(to: downloads.appendingPathComponent("2026.csv"))
    /// let file = try await engine.send(op).fileURLs[0]
    /// ```
    /// - Parameters:
    ///   - destinations: One or more file URLs; their folders must exist. Existing files are replaced.
    ///   - resumable: Whether an interrupted download keeps its partial file (and what the server said
    ///     about it) so the next download of the same URL to the same first destination asks only for
    ///     the rest. Off by default.
    /// - Returns: The operation, for chaining.
    @discardableResult
    public func download(to destinations: [URL], resumable: Bool = false) -> Self {
        storage.withLockedValue { storage in
            guard storage.machine.state == .ready, !destinations.isEmpty else { return }
            storage.transfer.files = destinations.map(\.standardizedFileURL)
            storage.transfer.isResumable = resumable
        }
        return self
    }

    /// Waits until nothing writes this download's files any more: its transfer has renamed its file into
    /// place, or kept or removed its partial file. A cancelled operation reports its outcome at once,
    /// while its transfer may still be writing the last bytes it gathered and its resume record: await
    /// this before the process exits after a "pause" (``cancelKeepingResumeData()``), or before handing
    /// the partial file to something else. Returns at once for an operation without files.
    public func waitForFiles() async {
        let files = downloadDestinations
        guard !files.isEmpty else { return }
        _ = await DestinationLocks.shared.withDestinations(files) {}
    }

    /// The files this operation downloads to (empty when its body goes to memory).
    var downloadDestinations: [URL] { storage.withLockedValue { $0.transfer.files } }

    /// Writes the response body to `destination` instead of memory; see ``download(to:resumable:)-([URL],_)``.
    /// - Parameters:
    ///   - destination: The file URL.
    ///   - resumable: Whether an interrupted download can be resumed.
    /// - Returns: The operation, for chaining.
    @discardableResult
    public func download(to destination: URL, resumable: Bool = false) -> Self {
        download(to: [destination], resumable: resumable)
    }

    /// The response body as it comes off the wire, chunk by chunk, with backpressure: while you do not
    /// ask for the next chunk, the connection is not read. For server-sent events, NDJSON, long polls
    /// and bodies too large for memory. Ask for it before enqueueing; iterate it once. Only an
    /// acceptable answer's body is streamed (otherwise the stream throws the operation's error). The
    /// body is then not kept in memory (the response's ``NetworkResponse/body`` is empty), and stopping
    /// early (breaking out of the loop, cancelling the task) cancels the operation.
    ///
    /// ```swift
    /// let op = engine.operation(path: "/events")
    /// let lines = op.bodyStream
    /// engine.enqueue(op)
    /// for try await chunk in lines { handle(chunk) }
    /// ```
    public var bodyStream: ResponseBodyStream {
        let channel: BodyChannel = storage.withLockedValue { storage in
            if let channel = storage.transfer.channel { return channel }
            let channel = BodyChannel { [weak self] in self?.cancelKeepingResumeData() }
            if storage.machine.state == .ready {
                storage.transfer.channel = channel
                storage.allowsCoalescing = false
            } else {
                channel.finish(NetworkError(.bodyNotReplayable, "ask for bodyStream before the operation is enqueued", url: urlString))
            }
            return channel
        }
        return ResponseBodyStream(channel: channel)
    }

    /// The final response's status and header fields as soon as they arrive, before its body: for a
    /// ``bodyStream`` reader, set before the first chunk is delivered (a server-sent event stream's
    /// `Content-Type`, a download's `Content-Length`). For other operations, from their response on
    /// (and as the head arrives when the engine has event monitors). `nil` before.
    /// ```swift
    /// for try await chunk in stream {
    ///     if op.responseHead?.headerFields[.contentType] != "text/event-stream" { break }
    ///     handle(chunk)
    /// }
    /// ```
    public var responseHead: HTTPResponse? {
        if let head = storage.withLockedValue({ $0.responseHead }) { return head }
        return receivedResponse.map { HTTPResponse(status: $0.status, headerFields: $0.headers) }
    }

    /// The trailer fields that followed the body (``NetworkResponse/trailers``), once it has ended: for a
    /// ``bodyStream`` reader, set before the stream's end is delivered. `nil` before, and for a body
    /// without trailers.
    /// ```swift
    /// for try await chunk in stream { digest.update(data: chunk) }
    /// let expected = op.responseTrailers?[HTTPField.Name("Digest")!]
    /// ```
    public var responseTrailers: HTTPFields? {
        if let trailers = storage.withLockedValue({ $0.responseTrailers }) { return trailers }
        return receivedResponse?.trailers
    }

    /// The HTTP version of the exchange that brought ``responseHead``, when the transport knows it (a
    /// streamed body's `HTTP/2` status line, before the response is complete). `nil` before.
    public var responseVersion: NetworkResponse.ProtocolVersion? {
        if let version = storage.withLockedValue({ $0.responseHead != nil ? $0.responseVersion : nil }) { return version }
        return receivedResponse?.version
    }

    /// Whether the answer may stream for as long as the server keeps it open (server-sent events, a long
    /// poll, a log tail): the operation takes one of the queue's slots while it connects, and gives it
    /// back once an accepted answer's head (a 2xx) arrives, so that open streams never narrow the
    /// queue's width (``NetworkQueue/maximumConcurrentOperations``) nor hold back other work. It stays in
    /// the queue (its activity count, cancellation by engine or URL) until it ends. `false` by default;
    /// ``NetworkEngine/events(path:params:options:configure:)`` sets it. Set before enqueueing.
    public var isLongLived: Bool {
        get { storage.withLockedValue { $0.transfer.isLongLived } }
        set {
            storage.withLockedValue { storage in
                guard storage.machine.state == .ready else { return }
                storage.transfer.isLongLived = newValue
            }
        }
    }

    /// This operation's own bandwidth limit, in bytes per second, for its download and its upload; `nil`
    /// (the default) for none. The queue's limit (``NetworkQueue/maximumBytesPerSecond``) applies too.
    /// Set before enqueueing.
    public var maximumBytesPerSecond: Int? {
        get { storage.withLockedValue { $0.transfer.throttle?.bytesPerSecond } }
        set {
            storage.withLockedValue { storage in
                guard storage.machine.state == .ready else { return }
                storage.transfer.throttle = newValue.map { Throttle(bytesPerSecond: $0) }
            }
        }
    }
}
