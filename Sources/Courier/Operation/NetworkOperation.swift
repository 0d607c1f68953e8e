import Foundation
public import HTTPTypes
import NIOConcurrencyHelpers

/// One HTTP request and its response: the unit of work an engine builds and the shared queue runs.
///
/// Build operations with an engine, attach handlers, and enqueue:
/// ```swift
/// let op = engine.operation(path: "/rates", params: ["base": "EUR"])
/// op.onCompletion { response in print(response.string ?? "") }
///   .onError { error in print(error) }
/// engine.enqueue(op)
/// ```
/// or `let response = try await engine.send(op)`.
///
/// Several handlers of each kind may be attached; each is called exactly once per event, in order,
/// on the engine's ``NetworkEngine/Configuration/callbackQueue``. A completion or error handler
/// attached after the operation finished is called at once with the outcome.
///
/// The request (method, URL, body) is fixed when the engine builds the operation; headers,
/// priority, tag and user info may change until it is enqueued (priority also while it waits).
public final class NetworkOperation: Sendable, CustomStringConvertible {
    /// Where an operation is in its life.
    public enum State: String, Sendable, Hashable {
        /// Built, not yet enqueued.
        case ready
        /// In the queue, waiting for its dependencies or a free slot.
        case waiting
        /// Its request is on the wire.
        case executing
        /// It could not be sent and waits in the outbox to be replayed (``NetworkOperation/isFreezable``).
        case frozen
        /// It has its outcome: a response, an error, or cancellation.
        case finished
    }

    struct Handlers {
        var completion: [@Sendable (NetworkResponse) -> Void] = []
        var error: [@Sendable (NetworkError) -> Void] = []
        var uploadProgress: [@Sendable (TransferProgress) -> Void] = []
        var downloadProgress: [@Sendable (TransferProgress) -> Void] = []
        var stateChange: [@Sendable (State) -> Void] = []
        var frozen: [@Sendable (OutboxEntry) -> Void] = []
        var informational: [@Sendable (InformationalResponse) -> Void] = []

        var isEmpty: Bool {
            completion.isEmpty && error.isEmpty && uploadProgress.isEmpty && downloadProgress.isEmpty && stateChange.isEmpty
                && frozen.isEmpty && informational.isEmpty
        }
    }

    /// Where an operation that leaves the queue without running goes.
    enum QueueExit {
        /// Fail with this error (the host became unreachable).
        case fail(NetworkError)
        /// Into the outbox.
        case freeze
        /// Into its engine's list of operations waiting for connectivity.
        case hold
    }

    struct Storage {
        var machine = OperationStateMachine()
        var headers: HTTPFields
        var headerError: NetworkError? {
            get { spilled.headerError.value }
            _modify { yield &spilled.headerError.value }
        }
        var priority = Priority.normal
        var tag = 0
        var userInfo: [String: any Sendable] = [:]
        var allowsCoalescing: Bool
        var dependencies: [NetworkOperation] = []
        var handlers = Handlers() {
            didSet { if !handlers.isEmpty { hasHadHandlers = true } }
        }
        /// Whether a handler was ever attached (its calls may still be on the callback queue).
        var hasHadHandlers = false
        /// Whether its queue remembers it until it finishes (``NetworkQueue/track(_:)``).
        var isTracked = false
        /// Internal observers of the outcome, called once, outside the lock.
        var observers: [@Sendable (Result<NetworkResponse, NetworkError>) -> Void] = []
        /// The task awaiting ``NetworkOperation/response()``, resumed when the outcome is published (the
        /// common single waiter, without an observer closure; further waiters are observers).
        var waiter: OutcomeWaiter?
        var streams: [Int: AsyncStream<Event>.Continuation] = [:]
        var nextStreamKey = 0
        /// The request without credentials, built once when the operation is enqueued.
        var prepared: PreparedRequest? {
            get { spilled.prepared.value }
            _modify { yield &spilled.prepared.value }
        }
        /// The headers its flight sent (credentials included) and the names sensitive for that request:
        /// only what the cache's partition and the outbox need, not the whole request.
        var sentHeaders: HTTPFields?
        var sentSensitiveNames: Set<String>?
        /// How the operation uses its engine's cache, and what its lookup found.
        var cache: CacheState {
            _read { yield spilled.cache[default: CacheState()] }
            _modify { yield &spilled.cache[default: CacheState()] }
        }
        /// The operation's own redirect policy and decompression, if they override its engine's.
        var redirects: RedirectPolicy?
        var decompression: Decompression?
        var timeouts: NetworkEngine.Timeouts?
        /// Where the body goes when not to memory, and the operation's bandwidth limit.
        var transfer = TransferState()
        /// Freezing (see NetworkOperation+Freezing).
        var isFreezable = false
        var connectivityTimeout: Duration?
        var timeToLive: Duration?
        var maximumAttempts: Int?
        var orderingKey: String?
        var freezesWhenUnavailable: Bool?
        var outboxID: String?
        /// The outbox entry, once frozen (for ``NetworkOperation/deliveredOrFrozen()``).
        var frozenEntry: OutboxEntry? {
            get { spilled.frozenEntry.value }
            _modify { yield &spilled.frozenEntry.value }
        }
        /// The final response's head as it arrived, before its body (for ``NetworkOperation/responseHead``).
        var responseHead: HTTPResponse?
        /// The HTTP version of ``responseHead``'s exchange, when the transport said.
        var responseVersion: NetworkResponse.ProtocolVersion?
        /// The trailer fields of a body read with ``bodyStream``.
        var responseTrailers: HTTPFields?
        /// A replay of a frozen request, sent by the outbox: never frozen again.
        var isReplay = false
        /// Set the moment the operation is decided to go to the outbox, before its row is written: from
        /// then on it is what the user asked to keep (see ``NetworkOperation/isKept``).
        var isFreezing = false
        /// Set when the operation is taken out of the queue for a reason other than cancellation.
        var queueExit: QueueExit? {
            get { spilled.queueExit.value }
            _modify { yield &spilled.queueExit.value }
        }
        /// The operation's own interceptors (after the engine's).
        var interceptors: [any RequestInterceptor] = []
        /// When it was enqueued, started, answered (kept only when its engine has event monitors).
        var timeline: OperationTimeline {
            _read { yield spilled.timeline[default: OperationTimeline()] }
            _modify { yield &spilled.timeline[default: OperationTimeline()] }
        }
        /// The large parts that a waiting operation rarely has, each on the heap only once set: a queue of
        /// 100,000 waiting operations holds a word for each instead of about 1.4 KB.
        var spilled = Spilled()

        struct Spilled {
            var headerError = HeapOptional<NetworkError>()
            var prepared = HeapOptional<PreparedRequest>()
            var cache = HeapOptional<CacheState>()
            var frozenEntry = HeapOptional<OutboxEntry>()
            var queueExit = HeapOptional<QueueExit>()
            var timeline = HeapOptional<OperationTimeline>()
        }
    }

    let id = OperationID.next()
    let context: OperationContext
    /// The operation's state. A box of its own, not an inline `Mutex`: the standard library's `Mutex` on
    /// Linux is a priority-inheritance futex, and with it the small-GET contender with an event monitor
    /// (which emits under this lock) ran about 15 % fewer requests a second in two runs, for one
    /// allocation saved.
    let storage: NIOLockedValueBox<Storage>
    /// The composed URL, or `nil` when it could not be composed (the operation then fails with ``NetworkError/Code/invalidURL``).
    let requestURL: URL?
    /// The URL as built (with its query), or what the caller gave when it was invalid.
    package let urlString: String
    let body: Data?
    /// A streamed body (file, multipart form, caller's sequence), never held whole.
    let bodySource: RequestBodySource?
    /// Bad input found when the operation was built (URL, body, engine headers); it fails with this when enqueued.
    var inputError: NetworkError? { storedInputError.value }
    private let storedInputError: HeapOptional<NetworkError>

    /// The request method.
    public let method: HTTPRequest.Method
    /// A stable identity of the request: SHA-256 over the method, the normalised URL and the body's digest
    /// (see <doc:Operations>). Equal for two operations that would send the same request. Computed when
    /// asked (the queue compares the text it digests instead, without hashing).
    public var uniqueIdentifier: String { Self.makeUniqueIdentifier(method: method, url: urlString, body: body) }

    /// What ``uniqueIdentifier`` digests, before the digest: `METHOD SP normalised-URL`, then LF and the
    /// body's SHA-256 when there is a body. Equal exactly when the identifiers are.
    var identity: String {
        let request = "\(method.rawValue) \(Self.normalizedURL(urlString))"
        guard let body, !body.isEmpty else { return request }
        return request + "\n" + Digests.sha256Hex(body)
    }

    init(
        method: HTTPRequest.Method,
        url: Result<URL, NetworkError>,
        urlString: String,
        headers: HTTPFields,
        body: RequestBody?,
        context: OperationContext,
        inputError: NetworkError?
    ) {
        self.method = method
        self.context = context
        self.urlString = urlString
        self.requestURL = try? url.get()
        self.body = body?.data
        self.bodySource = body?.source
        var error = inputError
        if case .failure(let urlError) = url { error = error ?? urlError }
        if case .invalid(let bodyError)? = body?.storage { error = error ?? bodyError }
        var storedInputError = HeapOptional<NetworkError>()
        storedInputError.value = error.map { var e = $0; e.url = e.url ?? urlString; return e }
        self.storedInputError = storedInputError
        var fields = headers
        if let contentType = body?.contentType, fields[.contentType] == nil {
            fields[.contentType] = contentType
        }
        if let announcement = body?.trailerAnnouncement, fields[.trailer] == nil {
            fields[.trailer] = announcement
        }
        let coalesces = context.configuration.coalescesRequests && (method == .get || method == .head) && bodySource == nil
        self.storage = NIOLockedValueBox(Storage(headers: fields, allowsCoalescing: coalesces))
    }

    // MARK: Settings

    /// The header fields the request will carry: the engine's defaults, overridden by the operation's own.
    public var headers: HTTPFields { storage.withLockedValue { $0.headers } }

    /// Sets (or, with `nil`, removes) a header, replacing any value of the same name (case-insensitive).
    ///
    /// A name that is not a valid token, or a value containing CR, LF or NUL, makes the operation fail
    /// with ``NetworkError/Code/invalidHeader`` when it is enqueued; nothing is sent. Ignored once enqueued.
    /// - Parameters:
    ///   - value: The value, or `nil` to remove the header.
    ///   - name: The header name.
    /// - Returns: The operation, for chaining.
    @discardableResult
    public func setHeader(_ value: String?, forName name: String) -> Self {
        storage.withLockedValue { storage in
            guard storage.machine.state == .ready else { return }
            switch HeaderValidation.field(name: name, value: value ?? "") {
            case .success(let field):
                storage.headers[field.name] = value == nil ? nil : field.value
            case .failure(let error):
                storage.headerError = storage.headerError ?? error
            }
        }
        return self
    }

    /// Records bad input found after the operation was built (credentials in its URL that cannot be
    /// sent): it fails with this error when enqueued, as with a malformed header.
    func failInput(_ error: NetworkError) {
        storage.withLockedValue { $0.headerError = $0.headerError ?? error }
    }

    /// Adds a field line, keeping those of the same name already set: for fields that may repeat
    /// (`Accept`, `Cache-Control`, `Forwarded`, an API's own list fields). Validated as ``setHeader(_:forName:)``.
    /// ```swift
    /// operation.appendHeader("text/html", forName: "Accept").appendHeader("application/json;q=0.9", forName: "Accept")
    /// ```
    /// - Parameters:
    ///   - value: The value of the new line.
    ///   - name: The header name.
    /// - Returns: The operation, for chaining.
    @discardableResult
    public func appendHeader(_ value: String, forName name: String) -> Self {
        storage.withLockedValue { storage in
            guard storage.machine.state == .ready else { return }
            switch HeaderValidation.field(name: name, value: value) {
            case .success(let field): storage.headers.append(field)
            case .failure(let error): storage.headerError = storage.headerError ?? error
            }
        }
        return self
    }

    /// Sets several headers at once (MKNetworkKit's `addHeaders:`); each replaces any of its name
    /// (use ``appendHeader(_:forName:)`` for repeated fields).
    /// - Parameter headers: Names and values.
    /// - Returns: The operation, for chaining.
    @discardableResult
    public func addHeaders(_ headers: [String: String]) -> Self {
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { setHeader(value, forName: name) }
        return self
    }

    /// The operation's priority in its queue; may change while it waits.
    public var priority: Priority {
        get { storage.withLockedValue { $0.priority } }
        set {
            let isQueued = storage.withLockedValue { storage in
                storage.priority = newValue
                return storage.machine.state == .waiting
            }
            if isQueued { context.queue.setPriority(newValue, for: self) }
        }
    }

    /// A number of the caller's choosing to tell operations apart; never sent.
    public var tag: Int {
        get { storage.withLockedValue { $0.tag } }
        set { storage.withLockedValue { $0.tag = newValue } }
    }

    /// Values of the caller's choosing carried with the operation; never sent.
    public var userInfo: [String: any Sendable] {
        get { storage.withLockedValue { $0.userInfo } }
        set { storage.withLockedValue { $0.userInfo = newValue } }
    }

    /// Whether this operation may share one request with identical GET/HEAD operations. Only
    /// GET and HEAD coalesce; set to `false` to always send a request of its own. Ignored once enqueued.
    public var allowsCoalescing: Bool {
        get { storage.withLockedValue { $0.allowsCoalescing } }
        set { storage.withLockedValue { if $0.machine.state == .ready { $0.allowsCoalescing = newValue && (method == .get || method == .head) } } }
    }

    /// How this operation follows redirects: its own policy, or its engine's. Set before enqueueing
    /// (``RedirectPolicy/disabled`` returns each `3xx` as the response).
    public var redirectPolicy: RedirectPolicy {
        get { storage.withLockedValue { $0.redirects } ?? context.configuration.redirects }
        set { storage.withLockedValue { if $0.machine.state == .ready { $0.redirects = newValue } } }
    }

    /// Whether this operation's response is decompressed: its own setting, or its engine's. Set before
    /// enqueueing.
    public var decompression: Decompression {
        get { storage.withLockedValue { $0.decompression } ?? context.configuration.decompression }
        set { storage.withLockedValue { if $0.machine.state == .ready { $0.decompression = newValue } } }
    }

    /// This operation's connect, read and total timeouts: its own, or its engine's. Set before
    /// enqueueing. The total timeout bounds the whole exchange (head, body, redirects); the outbox
    /// replays a frozen request under its engine's timeouts (they are not written to the outbox). Connect and read timeouts are settings of a connection pool
    /// in async-http-client: each distinct pair gets its own pool, so prefer a few shared values.
    public var timeouts: NetworkEngine.Timeouts {
        get { storage.withLockedValue { $0.timeouts } ?? context.configuration.timeouts }
        set { storage.withLockedValue { if $0.machine.state == .ready { $0.timeouts = newValue } } }
    }

    // MARK: State

    /// The operation's current state.
    public var state: State { storage.withLockedValue { $0.machine.state } }
    /// Whether the operation has its outcome.
    public var isFinished: Bool { state == .finished }
    /// Whether cancellation was asked for (it may not have finished yet).
    public var isCancelled: Bool { storage.withLockedValue { $0.machine.isCancellationRequested } }

    public var description: String {
        let (state, outcome) = storage.withLockedValue { ($0.machine.state, $0.machine.outcome) }
        let url = SensitiveParameters.masked(url: urlString, names: context.configuration.sensitiveParameterNames)
        var text = "<NetworkOperation \(id) \(method) \(url) \(state)"
        switch outcome {
        case .success(let response)?: text += " \(response.statusCode)"
        case .failure(let error)?: text += " \(error.code)"
        case nil: break
        }
        return text + ">"
    }

    // MARK: Cancellation

    /// Cancels the operation.
    ///
    /// Not yet enqueued: it finishes at once as cancelled and never touches the network. Waiting:
    /// it leaves the queue. Running: its request is cancelled (unless identical operations still
    /// share it). Frozen: its row leaves the outbox and it finishes as cancelled, unless its replay is
    /// already on the wire: then that attempt decides, so nothing the server answered is reported as
    /// cancelled (a 2xx is the operation's response). In every case its error handlers hear
    /// ``NetworkError/Code/cancelled`` once, or the outcome that came first.
    /// Cancelling a finished operation does nothing. A resumable download's partial file is removed
    /// (use ``cancelKeepingResumeData()`` to resume it later).
    public func cancel() {
        cancel(discardingPartialDownload: true)
    }

    /// Cancels the operation as ``cancel()`` does, but a resumable download
    /// (``download(to:resumable:)-([URL],_)``) keeps its partial file and resume record: the next download
    /// of the same URL to the same destination asks only for the rest ("resume later"). A cancelled
    /// task awaiting the operation, a lost connection or a killed process keep them too.
    public func cancelKeepingResumeData() {
        cancel(discardingPartialDownload: false)
    }

    func cancel(discardingPartialDownload: Bool) {
        let (action, observers, resumeData, control, tracked) = storage.withLockedValue { storage in
            let action = storage.machine.cancel(url: urlString)
            // An explicit cancel gives up a resumable download's resume data, even one kept by an earlier run,
            // or by its own flight's last attempt: removed right behind the flight's writer, if any.
            let resumeData = discardingPartialDownload && action != .none && storage.transfer.isResumable ? storage.transfer.files : []
            return (action, action == .finished ? publishOutcome(&storage) : .none, resumeData, storage.transfer.control, storage.isTracked)
        }
        // Before the flight hears of the cancel: it then removes what it holds itself.
        if !resumeData.isEmpty { Self.discardResumeData(for: resumeData, control: control) }
        switch action {
        case .finished:
            if tracked { context.queue.untrack(id) }
            notify(observers)
        case .removeFromQueue:
            context.queue.cancel(self)
            context.connectivity.cancelHeld(self)
        case .dropFromOutbox:
            dropFromOutbox()
        case .none: break
        }
    }

    /// Removes every handler, then cancels: nobody hears about this operation again (ASIHTTPRequest's
    /// `clearDelegatesAndCancel`). `async` callers still get ``NetworkError/Code/cancelled``.
    public func clearHandlersAndCancel() {
        storage.withLockedValue { $0.handlers = Handlers() }
        cancel()
    }
}
