import Foundation
import Logging
import NIOConcurrencyHelpers

// The queue's machinery: every public or internal event goes through `apply`, which runs the state
// machine under the lock, turns its action into effects (operation objects, flight handles), and
// performs them after the lock is released. Stream yields and the activity dispatch stay under the
// lock: they never call user code synchronously, and doing them there keeps counts in order.
extension NetworkQueue {
    /// A flight to start: its handle, its subscribers, and for a retried flight its attempt so far (read
    /// under the lock that decided the start).
    struct FlightStart {
        var handle: FlightHandle
        var subscribers: SmallList<NetworkOperation>
        var attempt: (number: Int, since: ContinuousClock.Instant)?
    }

    struct Effects {
        // One flight started for one operation and one outcome delivered are the common case: lists that
        // hold one element without an allocation.
        var starts = SmallList<FlightStart>()
        var joinedRunning: [NetworkOperation] = []
        var cancelFlights: [FlightHandle] = []
        var cancelled: [NetworkOperation] = []
        var deliver = SmallList<NetworkOperation>()
        var becameEmpty = false
        /// Whether anyone reads ``NetworkQueue/events``; when nobody does, no event is built.
        var isObserved = false
    }

    func enqueue(_ operation: NetworkOperation, dependencies: Set<OperationID>) {
        let key = operation.coalescingKey()
        let priority = operation.priority
        let group = operation.context.connectivity.group
        apply(registering: operation) {
            $0.enqueue(operation.id, priority: priority, key: key, dependencies: dependencies, group: group)
        }
    }

    /// Sets (or with `nil` removes) a group's own limit (its engines' width); 0 pauses its work.
    func setLimit(_ limit: Int?, forGroup group: UInt64, version: UInt64? = nil) {
        apply { $0.setLimit(limit, for: group, version: version) }
    }

    /// Whether a queued operation still waits for some of its dependencies.
    func isBlocked(_ operation: NetworkOperation) -> Bool {
        state.withLockedValue { $0.machine.isBlocked(operation.id) }
    }

    /// The queue's width now: its limit narrowed by engines with waiting work.
    var effectiveMaximumConcurrentOperations: Int { state.withLockedValue { $0.machine.effectiveLimit } }

    func dependencyFinished(_ dependency: OperationID, for id: OperationID) {
        apply { $0.dependencyFinished(dependency, for: id) }
    }

    func cancel(_ operation: NetworkOperation) {
        apply { $0.cancel(operation.id) }
    }

    /// Removes an operation only if its request has not started (decided under the queue's lock, so it
    /// cannot start meanwhile).
    func cancelIfNotStarted(_ operation: NetworkOperation) {
        apply { $0.cancelIfNotStarted(operation.id) }
    }

    func setPriority(_ priority: NetworkOperation.Priority, for operation: NetworkOperation) {
        apply { $0.setPriority(priority, for: operation.id) }
    }

    func apply(registering operation: NetworkOperation? = nil, _ event: (inout QueueStateMachine) -> QueueStateMachine.Action) {
        let effects = state.withLockedValue { state in
            if let operation { state.operations[operation.id] = operation }
            return makeEffects(of: event(&state.machine), in: &state)
        }
        perform(effects, result: nil, sent: nil)
    }

    private func flightFinished(
        _ flight: FlightID, result: Result<NetworkResponse, NetworkError>, sent: PreparedRequest? = nil,
        copies: [OperationID: Result<NetworkResponse, NetworkError>] = [:]
    ) {
        var effects = state.withLockedValue { state in
            state.flights[flight] = nil
            state.attempts[flight] = nil
            return makeEffects(of: state.machine.flightFinished(flight), in: &state)
        }
        // A download shared by identical ones wrote the first one's files; the others got copies while the
        // flight still held the file (`copyToOtherSubscribers`). One that joined after that gets its copy
        // here, before anyone hears of the outcome. The queue goes on meanwhile.
        if case .success(let response) = result, let source = response.fileURLs.first,
            effects.deliver.contains(where: { $0.downloadDestinations != response.fileURLs && copies[$0.id] == nil })
        {
            var delivery = Effects()
            delivery.isObserved = effects.isObserved
            delivery.deliver = effects.deliver
            effects.deliver = SmallList()
            perform(effects, result: result, sent: sent)
            Task { [self] in
                var results = copies
                for operation in delivery.deliver where operation.downloadDestinations != response.fileURLs && results[operation.id] == nil {
                    results[operation.id] = await DownloadWriter.copy(
                        response, from: source, to: operation.downloadDestinations, url: operation.urlString)
                }
                perform(delivery, result: result, sent: sent, results: results)
            }
            return
        }
        perform(effects, result: result, sent: sent, results: copies)
    }

    /// Run by a download's flight while it still holds its files: copies the file to the destinations
    /// of every other operation sharing the flight now.
    private func copyToOtherSubscribers(
        of flight: FlightID, _ result: Result<NetworkResponse, NetworkError>
    ) async -> [OperationID: Result<NetworkResponse, NetworkError>] {
        guard case .success(let response) = result, let source = response.fileURLs.first else { return [:] }
        let others = state.withLockedValue { state -> [NetworkOperation] in
            guard state.flights[flight] != nil else { return [] }   // already answered (a total timeout)
            return state.machine.subscribers(of: flight).compactMap { state.operations[$0] }
        }.filter { $0.downloadDestinations != response.fileURLs }
        var copies: [OperationID: Result<NetworkResponse, NetworkError>] = [:]
        for operation in others {
            copies[operation.id] = await DownloadWriter.copy(response, from: source, to: operation.downloadDestinations, url: operation.urlString)
        }
        return copies
    }

    private func makeEffects(of action: QueueStateMachine.Action, in state: inout State) -> Effects {
        var effects = Effects()
        effects.isObserved = !state.eventStreams.isEmpty
        for start in action.start {
            let handle = FlightHandle(id: start.flight)
            state.flights[start.flight] = handle
            var subscribers = SmallList<NetworkOperation>()
            for id in start.subscribers {
                if let operation = state.operations[id] { subscribers.append(operation) }
            }
            effects.starts.append(FlightStart(handle: handle, subscribers: subscribers, attempt: state.attempts[start.flight]))
        }
        effects.joinedRunning = action.joinedRunning.compactMap { state.operations[$0] }
        effects.cancelFlights = action.cancelFlights.compactMap { state.flights[$0] }
        effects.cancelled = action.cancelled.compactMap { state.operations.removeValue(forKey: $0) }
        for id in action.deliver {
            if let operation = state.operations.removeValue(forKey: id) { effects.deliver.append(operation) }
        }
        // A retried flight cancelled while it waited for its slot again leaves no attempt count behind.
        if !state.attempts.isEmpty, !action.cancelled.isEmpty {
            state.attempts = state.attempts.filter { state.machine.hasFlight($0.key) }
        }
        if let count = action.activity {
            for stream in state.activityStreams.values { stream.yield(count) }
            if let handler = state.activityHandler { notificationQueue.async { handler(count) } }
            effects.becameEmpty = count == 0
        }
        return effects
    }

    private func perform(
        _ effects: Effects, result: Result<NetworkResponse, NetworkError>?, sent: PreparedRequest? = nil,
        results: [OperationID: Result<NetworkResponse, NetworkError>] = [:]
    ) {
        for operation in effects.cancelled {
            operation.queueDidCancel()
            if effects.isObserved { publish(.failed(operation, operation.error ?? .cancelled(url: operation.urlString))) }
        }
        if let result {
            if effects.isObserved {
                // Outcomes are decided, published, and only then set and told to their operations: code an outcome
                // wakes (the next request) cannot start before the queue's observers hear of it, or of it running dry.
                let outcomes = effects.deliver.map { $0.queueDidSettle(results[$0.id] ?? result, sent: sent) }
                for outcome in outcomes {
                    guard let operation = outcome.operation else { continue }
                    // One already finished (a cancel that raced with the answer) keeps the outcome it has.
                    let finished = operation.response.map { Result<NetworkResponse, NetworkError>.success($0) } ?? operation.error.map { .failure($0) }
                    switch finished ?? outcome.result {
                    case .success(let response)?: publish(.finished(operation, response))
                    case .failure(let error)?: publish(.failed(operation, error))
                    case nil: break
                    }
                }
                if effects.becameEmpty { publish(.queueFinished) }
                for outcome in outcomes { outcome.deliver() }
            } else {
                for operation in effects.deliver { operation.queueDidFinish(results[operation.id] ?? result, sent: sent) }
            }
        }
        for handle in effects.cancelFlights { handle.cancel() }
        for operation in effects.joinedRunning {
            operation.queueDidStart()
            if effects.isObserved { publish(.started(operation)) }
        }
        for flightStart in effects.starts {
            let (handle, subscribers) = (flightStart.handle, flightStart.subscribers)
            guard let representative = subscribers.first else {
                // Cannot happen: subscribers are resolved under the lock that decided the start. Should it
                // ever, the flight ends at once so its slot is not lost.
                handle.attach(Task { [self] in flightFinished(handle.id, result: .failure(.cancelled(url: nil))) })
                continue
            }
            for operation in subscribers {
                operation.queueDidStart()
                if effects.isObserved { publish(.started(operation)) }
            }
            // Every subscriber belongs to the flight's engine (the key says so): any of them builds the request,
            // with the credentials of this moment.
            var request = representative.requestForSending()
            request.attempt = flightStart.attempt?.number ?? 1
            request.firstAttemptAt = flightStart.attempt?.since ?? .now
            start(handle, request: request, executor: representative.context.executor, subscribers: subscribers.count)
        }
        if effects.becameEmpty && effects.isObserved && result == nil { publish(.queueFinished) }
    }

    private func start(_ handle: FlightHandle, request: PreparedRequest, executor: RequestExecutor, subscribers: Int) {
        let flight = handle.id
        var logger = request.logger
        if logger.logLevel <= .debug {
            logger[metadataKey: "courier-flight"] = "\(flight.rawValue)"
            logger.debug("courier request started", metadata: [
                "courier-method": "\(request.method.rawValue)",
                "courier-url": "\(request.url.redactedForLogs)",
                "courier-subscribers": "\(subscribers)",
            ])
        }
        // The first and the last request of the attempt as sent: a retry repeats the first, is asked about the
        // last. Kept only when something reads them (interceptors); every closure below exists only when the
        // request or its subscribers need it, so a plain GET pays for none of them.
        let keepsHops = !request.interceptors.isEmpty
        let sentHops = keepsHops ? NIOLockedValueBox<(first: PreparedRequest?, last: PreparedRequest?)>((nil, nil)) : nil
        var sink = RequestExecutor.ProgressSink(
            download: { [self] progress in forEachSubscriber(of: flight) { $0.queueDidReceiveBody(progress) } })
        if request.body != nil || request.bodySource != nil {
            sink.upload = { [self] progress in forEachSubscriber(of: flight) { $0.queueDidSendBody(progress) } }
        }
        if request.reportsInformational {
            sink.informational = { [self] status, headers in
                forEachSubscriber(of: flight) { $0.queueDidReceiveInformational(InformationalResponse(status: status, headers: headers)) }
            }
        }
        if let sentHops {
            sink.sending = { sent in sentHops.withLockedValue { $0 = ($0.first ?? sent, sent) } }
        }
        if request.isMonitored {
            // Only for engines with event monitors: each hop's request, head and redirect, to every subscriber.
            sink.sending = { [self] sent in
                sentHops?.withLockedValue { $0 = ($0.first ?? sent, sent) }
                forEachSubscriber(of: flight) { $0.queueDidStartRequest(sent) }
            }
            sink.head = { [self] status, headers, version in
                forEachSubscriber(of: flight) { $0.queueDidReceiveHead(status: status, headers: headers, version: version) }
            }
            sink.redirect = { [self] url in forEachSubscriber(of: flight) { $0.queueWillFollowRedirect(to: url) } }
        } else if request.destination.channel != nil {
            // A body read as it arrives: its reader sees the head (NetworkOperation.responseHead) first.
            sink.head = { [self] status, headers, version in
                forEachSubscriber(of: flight) { $0.queueDidReceiveHead(status: status, headers: headers, version: version) }
            }
        }
        if request.destination.channel != nil {
            // ... and the trailers (NetworkOperation.responseTrailers) before its end.
            sink.trailers = { [self] fields in forEachSubscriber(of: flight) { $0.queueDidReceiveTrailers(fields) } }
        }
        if request.destination.isLongLived {
            // A live stream gives its slot back once its answer streams (a redirect's head is not that).
            let head = sink.head
            sink.head = { [self] status, headers, version in
                head(status, headers, version)
                if status.kind == .successful { apply { $0.releaseSlot(flight) } }
            }
        }
        let progress = sink
        let copies = request.destination.files.isEmpty ? nil : NIOLockedValueBox<[OperationID: Result<NetworkResponse, NetworkError>]>([:])
        let copyToOthers: (@Sendable (Result<NetworkResponse, NetworkError>) async -> Void)?
        if let copies {
            copyToOthers = { [self] result in
                let made = await copyToOtherSubscribers(of: flight, result)
                copies.withLockedValue { $0 = made }
            }
        } else {
            copyToOthers = nil
        }
        // The body is the task's own closure (a closure stored first and handed to `Task` is wrapped once
        // more, an allocation per flight).
        handle.attach(Task { [self, logger] in
            let result = await executor.run(request, progress: progress, whileHoldingFiles: copyToOthers)
            switch result {
            case .success(let response):
                logger.debug("courier request finished", metadata: ["courier-status": "\(response.statusCode)"])
            case .failure(let error):
                logger.debug("courier request failed", metadata: ["courier-error": "\(error.code)"])
            }
            // Not retried: a body stream whose consumer already had some of this attempt's bytes, and a
            // one-shot request body (it is gone).
            if let sentHops, !Task.isCancelled, !(request.destination.channel?.hasReceivedData ?? false),
                request.bodySource?.isReplayable ?? true,
                let failure = Self.retryableFailure(result)
            {
                let hops = sentHops.withLockedValue { $0 }
                let deadline = request.totalTimeout.map { (request.firstAttemptAt ?? .now) + $0 }
                await retryOrFinish(
                    flight, request: request, original: hops.first ?? request, sent: hops.last ?? request, result: result, failure: failure,
                    deadline: deadline, logger: logger)
                return
            }
            var sent = request
            sent.adaptedHeaders = sentHops?.withLockedValue { $0.last }?.headers
            flightFinished(flight, result: result, sent: sent, copies: copies?.withLockedValue { $0 } ?? [:])
        })
    }

    /// What an interceptor is asked to retry: a failure, or a response with an error status (400 or
    /// more), whether or not the engine accepts it (a 401 reaches the authenticators even when the app
    /// takes every status); not a 304 or another answer the cache or the redirect rules deal with.
    static func retryableFailure(_ result: Result<NetworkResponse, NetworkError>) -> NetworkError? {
        switch result {
        case .failure(let error):
            return error.code == .cancelled ? nil : error
        case .success(let response):
            guard response.statusCode >= 400 else { return nil }
            return NetworkError(
                .unacceptableStatus, "the server answered \(response.statusCode) \(response.status.reasonPhrase)",
                url: response.url.absoluteString, response: response)
        }
    }

    /// A failed attempt of a flight with interceptors: the flight gives up its slot while they decide and
    /// while it waits, then takes its old place in line; or its subscribers hear the outcome.
    private func retryOrFinish(
        _ flight: FlightID, request: PreparedRequest, original: PreparedRequest, sent: PreparedRequest,
        result: Result<NetworkResponse, NetworkError>, failure: NetworkError, deadline: ContinuousClock.Instant?, logger: Logger
    ) async {
        let suspended = state.withLockedValue { state -> Effects? in
            guard let action = state.machine.suspendFlight(flight) else { return nil }
            return makeEffects(of: action, in: &state)
        }
        var finished = request
        finished.adaptedHeaders = sent.headers
        guard let suspended else {
            // Its last subscriber left as it ended: it finishes as any flight does.
            return flightFinished(flight, result: result, sent: finished)
        }
        perform(suspended, result: nil)
        var outcome = result
        let elapsed = ContinuousClock.now - (request.firstAttemptAt ?? .now)
        let decision = await request.interceptors.retryDecision(
            original: original, sent: sent, after: failure, attempt: request.attempt, elapsed: elapsed, deadline: deadline)
        switch decision {
        case .doNotRetry:
            break
        case .fail(let error):
            outcome = .failure(error)
        case .retry(let delay):
            logger.debug("courier retrying", metadata: [
                "courier-attempt": "\(request.attempt + 1)", "courier-delay": "\(delay)", "courier-error": "\(failure.code)",
            ])
            if request.isMonitored {
                forEachSubscriber(of: flight) { $0.queueWillRetry(attempt: request.attempt + 1, after: delay, failure: failure) }
            }
            if let deadline, ContinuousClock.now + delay >= deadline {
                // The next attempt would begin past the operation's total timeout: it fails now.
                outcome = .failure(NetworkError(
                    .timeout, "the request would take longer than its total timeout of \(request.totalTimeout ?? .zero) before its next attempt",
                    url: request.url.absoluteString, underlying: failure))
                break
            }
            if delay > .zero { try? await Task.sleep(for: delay) }
            if !Task.isCancelled {
                let effects = state.withLockedValue { state -> Effects? in
                    guard state.machine.hasFlight(flight) else { return nil }
                    // The flight waits for a slot with no task: its next start makes a new handle.
                    state.flights[flight] = nil
                    state.attempts[flight] = (request.attempt + 1, request.firstAttemptAt ?? .now)
                    return makeEffects(of: state.machine.requeueFlight(flight), in: &state)
                }
                if let effects {
                    perform(effects, result: nil)
                    return
                }
            }
            // Cancelled while waiting to retry: an explicit cancel removed the resume data itself.
            outcome = .failure(.cancelled(url: request.url.absoluteString))
        }
        let effects = state.withLockedValue { state in
            state.flights[flight] = nil
            state.attempts[flight] = nil
            return makeEffects(of: state.machine.finishSuspendedFlight(flight), in: &state)
        }
        perform(effects, result: outcome, sent: finished)
    }

    /// Calls `body` with each operation subscribed to `flight` now (outside the queue's lock). A flight
    /// with one subscriber, the common case, builds no array.
    private func forEachSubscriber(of flight: FlightID, _ body: (NetworkOperation) -> Void) {
        let (only, subscribers) = state.withLockedValue { state -> (NetworkOperation?, [NetworkOperation]) in
            let ids = state.machine.subscribers(of: flight)
            if ids.count == 1 { return (state.operations[ids[0]], []) }
            return (nil, ids.compactMap { state.operations[$0] })
        }
        if let only { body(only) }
        for operation in subscribers { body(operation) }
    }

    private func publish(_ event: QueueEvent) {
        state.withLockedValue { state in
            for stream in state.eventStreams.values { stream.yield(event) }
        }
    }
}
