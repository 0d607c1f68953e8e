import Foundation
import HTTPTypes
import NIOConcurrencyHelpers

/// Runs one engine's ``ReplayStateMachine``: claims rows of the engine's pipeline from the outbox, sends
/// them through the engine (and so the shared queue), records each outcome, reports it, and sets the
/// retry timer. Every decision is the machine's; this class only does the I/O, on the outbox's work
/// queue (never a caller's thread nor the cooperative pool). While a replay is on its way its lease is
/// renewed, so a slow answer is never taken over and sent twice by another engine or process.
final class OutboxReplayer: Sendable {
    private struct State {
        var machine: ReplayStateMachine
        var timer: Task<Void, Never>?
        var flushWaiters: [CheckedContinuation<[OutboxEvent], Never>] = []
        /// What happened during the current flush, for its callers.
        var flushLog: [OutboxEvent] = []
        var isStopped = false
    }

    let database: any OutboxStore
    let pipeline: OutboxPipeline
    var origin: String { pipeline.origin }
    private let lease: Double
    private let makeOperation: @Sendable (OutboxRecord) -> NetworkOperation?
    private let state: NIOLockedValueBox<State>

    init(
        database: any OutboxStore, pipeline: OutboxPipeline, retry: OutboxRetry, isReachable: Bool,
        makeOperation: @escaping @Sendable (OutboxRecord) -> NetworkOperation?
    ) {
        self.database = database
        self.pipeline = pipeline
        self.lease = max(1, retry.lease.seconds)
        self.makeOperation = makeOperation
        let backoff = ReplayStateMachine.Backoff(base: max(0.001, retry.initialDelay.seconds), cap: max(0.001, retry.maximumDelay.seconds))
        state = NIOLockedValueBox(State(machine: ReplayStateMachine(isReachable: isReachable, backoff: backoff, parallelLanes: retry.parallelLanes)))
    }

    func reachabilityChanged(_ reachable: Bool) {
        runOnIO(state.withLockedValue { $0.isStopped ? .idle : $0.machine.reachabilityChanged(reachable) })
    }

    /// Something was frozen, or a timer fired: send what is due.
    func kick() {
        runOnIO(state.withLockedValue { $0.isStopped ? .idle : $0.machine.timerFired() })
    }

    /// A request of this engine got an answer from the host: a replay waiting out a backoff because it
    /// could not connect goes now.
    func hostAnswered() {
        runOnIO(state.withLockedValue { $0.isStopped ? .idle : $0.machine.hostAnswered() })
    }

    private func runOnIO(_ action: ReplayStateMachine.Action) {
        if case .idle = action {
            resumeFlushWaitersIfIdle()
            return
        }
        database.work.async { [self] in run(action) }
    }

    /// Sends now what can be sent, ignoring retry times; returns when the replay is idle again (nothing
    /// pending, the host unreachable, or an attempt that must wait).
    func flush() async -> [OutboxEvent] {
        await withCheckedContinuation { continuation in
            let action = state.withLockedValue { state -> ReplayStateMachine.Action? in
                guard !state.isStopped else { return nil }
                state.flushWaiters.append(continuation)
                return state.machine.flush()
            }
            guard let action else {
                // Stopped: nothing will ever run, so the flush ends now (never a continuation left waiting).
                continuation.resume(returning: [])
                return
            }
            // Nothing started (unreachable, stopped), and nothing running will finish the flush: it ends now.
            runOnIO(action)
        }
    }

    func stop() {
        let (timer, waiters) = state.withLockedValue { state in
            state.isStopped = true
            defer { state.timer = nil; state.flushWaiters = [] }
            return (state.timer, state.flushWaiters)
        }
        timer?.cancel()
        for waiter in waiters { waiter.resume(returning: []) }
    }

    private func resumeFlushWaitersIfIdle() {
        let (waiters, log) = state.withLockedValue { state -> ([CheckedContinuation<[OutboxEvent], Never>], [OutboxEvent]) in
            guard state.isStopped || (!state.machine.isSending && !state.machine.isClaiming && !state.machine.isFlushing) else { return ([], []) }
            defer { state.flushWaiters = []; state.flushLog = [] }
            return (state.flushWaiters, state.flushLog)
        }
        for waiter in waiters { waiter.resume(returning: log) }
    }

    /// Publishes an event, and logs it for a flush under way.
    private func publish(_ event: OutboxEvent) {
        state.withLockedValue { state in
            if !state.flushWaiters.isEmpty { state.flushLog.append(event) }
        }
        database.publish(event, origin: origin)
    }

    private func run(_ first: ReplayStateMachine.Action) {
        var action = first
        while true {
            switch action {
            case .idle:
                resumeFlushWaitersIfIdle()
                return
            case .wake(let at):
                schedule(at: at)
                resumeFlushWaitersIfIdle()
                return
            case .send(let id):
                // Only reached through `.claimHead`, which sends the record itself.
                assertionFailure("send(\(id)) outside a claim")
                return
            case .claimHead(let claim):
                let now = Date().timeIntervalSince1970
                switch database.claimHead(pipeline, claim: claim, now: now, lease: lease) {
                case .empty:
                    action = state.withLockedValue { $0.machine.headClaimed(nil, decision: nil) }
                case .failed:
                    action = state.withLockedValue { $0.machine.claimFailed(now: now, jitter: Double.random(in: 0..<1)) }
                case .head(let head, let decision, let record):
                    if case .deadLetter = decision { deadLettered(record) }
                    action = state.withLockedValue { $0.machine.headClaimed(head, decision: decision) }
                    if case .send = action {
                        // The other lanes are looked at once this one's request is on its way.
                        guard send(record) else { return }
                        action = state.withLockedValue { $0.isStopped ? .idle : $0.machine.sendStarted() }
                    }
                }
            }
        }
    }

    private func schedule(at time: Double) {
        let delay = max(0, time - Date().timeIntervalSince1970)
        let timer = Task { [weak self] in
            try? await Task.sleep(for: .milliseconds(Int64((delay * 1000).rounded(.up)) + 5))
            guard !Task.isCancelled else { return }
            self?.kick()
        }
        let previous = state.withLockedValue { state -> Task<Void, Never>? in
            defer { state.timer = timer }
            return state.timer
        }
        previous?.cancel()
    }

    /// Sends a claimed row; `false` when it cannot be (the engine is gone, and the replayer stops).
    private func send(_ record: OutboxRecord) -> Bool {
        guard let operation = makeOperation(record) else {
            // The engine's connectivity is gone (nothing needs this replayer any more): give the claim back.
            database.complete(id: record.id, .retry(at: record.nextAttemptAt), status: record.lastStatus, error: record.lastError,
                              counted: false, now: Date().timeIntervalSince1970)
            stop()
            return false
        }
        database.listeners.replayStarted(operation, for: record.id)
        // Renewed from the claim on, its body's check included: a check that waits for its store must not let
        // the lease lapse and another instance send the row too.
        let renewal = renewLease(of: record.id)
        operation.whenFinished { [self] result in
            let sent = operation.storage.withLockedValue { $0.machine.hasStarted }
            database.work.async { [self] in
                // The lease is renewed until the outcome is recorded: an outcome waiting its turn behind
                // another that the server is slow to take must not let this row's lease lapse.
                let next = attemptFinished(record, result: result, sent: sent)
                renewal.cancel()
                run(next)
            }
        }
        operation.monitorReplay(of: record.entry)
        guard let check = database.bodyCheck(for: record) else {
            operation.submit()
            return true
        }
        // A body kept apart from its row is checked before its request is built, off the work queue (other
        // lanes are claimed and sent meanwhile): one found damaged, or that cannot be checked now, ends the
        // replay with that failure and nothing is sent. A drop meanwhile ends it as cancelled
        // (``OutboxStore/dropReplayInFlight(_:)``), and it is not submitted.
        Task { [database] in
            let failure = await check()
            database.work.async {
                guard !operation.isFinished else { return }
                if let failure { operation.finish(.failure(failure)) } else { operation.submit() }
            }
        }
        return true
    }

    /// Renews the lease on a row every quarter of its length while its replay is on its way. A dispatch
    /// timer on the outbox's lease queue: neither a busy cooperative pool nor a claim delays it.
    private func renewLease(of id: String) -> LeaseRenewal {
        let timer = DispatchSource.makeTimerSource(queue: database.leases)
        let interval = DispatchTimeInterval.milliseconds(Int(lease * 1000 / 4))
        timer.schedule(deadline: .now() + interval, repeating: interval)
        timer.setEventHandler { [database, lease] in database.renewLease(id: id, until: Date().timeIntervalSince1970 + lease) }
        timer.resume()
        return LeaseRenewal(timer: timer)
    }

    /// Records and reports what became of a row's attempt; returns what the replay does next.
    private func attemptFinished(_ record: OutboxRecord, result: Result<NetworkResponse, NetworkError>, sent: Bool) -> ReplayStateMachine.Action {
        let outcome: ReplayStateMachine.Outcome
        var response: NetworkResponse?
        var errorText: String?
        switch result {
        case .success(let answer):
            response = answer
            outcome = .answered(status: answer.statusCode, retryAfter: Self.retryAfter(answer))
        case .failure(let error):
            errorText = error.description
            if let answer = error.response {
                response = answer
                outcome = .answered(status: answer.statusCode, retryAfter: Self.retryAfter(answer))
            } else {
                // A body the outbox could not read back (its server stalled) is the outbox's failure, not the
                // origin's: not an attempt, tried less and less often while it lasts, and not again at once
                // when the host answers another request (``ReplayStateMachine/Outcome/bodyUnavailable``).
                // A copy found damaged as it was read is dead-lettered, never sent with another body.
                let connectFailure = error.code == .cannotConnect || error.code == .notConnected
                outcome = error.underlying is FrozenBodyDamaged ? .bodyDamaged
                    : error.code == .outboxUnavailable ? .bodyUnavailable : !sent ? .notSent : connectFailure ? .couldNotConnect : .noAnswer
            }
        }
        let now = Date().timeIntervalSince1970
        // On the work queue, like drops: no drop can come between reading this and recording the outcome.
        let dropRequested = database.listeners.replayEnded(for: record.id)
        let counted = ReplayStateMachine.countsAsAttempt(outcome)
        let (completion, next) = state.withLockedValue { state in
            let (completion, next) = state.machine.attemptFinished(
                id: record.id, attempts: record.attempts + (counted ? 1 : 0), outcome: outcome, now: now, jitter: Double.random(in: 0..<1))
            // A stopped replayer (its engine is gone) records this outcome but claims nothing more.
            return (completion, state.isStopped ? ReplayStateMachine.Action.idle : next)
        }
        var updated = record
        updated.attempts += counted ? 1 : 0
        updated.lastStatus = response?.statusCode
        updated.lastError = errorText
        // Taken before the row records its outcome, so the cross-process watch never settles it instead.
        let settles = if case .retry = completion { dropRequested } else { true }
        let waiting = settles ? database.detachOperation(for: record.id) : nil
        switch completion {
        case .delivered:
            database.complete(id: record.id, completion, status: response?.statusCode, error: errorText, counted: counted, now: now)
            let answer = response ?? NetworkResponse(status: .ok, url: record.url)
            publish(.delivered(updated.entry.with(state: .delivered), answer))
            waiting?.finish(.success(answer))
        case .failedPermanently:
            database.complete(id: record.id, completion, status: response?.statusCode, error: errorText, counted: counted, now: now)
            let answer = response ?? NetworkResponse(status: .badRequest, url: record.url)
            publish(.failedPermanently(updated.entry.with(state: .failedPermanently), answer))
            waiting?.finish(result.flatMap { _ in
                .failure(NetworkError(.unacceptableStatus, "the server refused the frozen request with \(answer.statusCode)", url: record.url.absoluteString, response: answer))
            })
        case .deadLettered where dropRequested, .retry where dropRequested:
            // Dropped while its replay was on its way, and the server did not take it: it goes now.
            database.delete(id: record.id)
            waiting?.finish(.failure(NetworkError(.cancelled, "its outbox entry was dropped", url: record.url.absoluteString)))
        case .deadLettered(let reason):
            database.complete(id: record.id, completion, status: response?.statusCode, error: errorText, counted: counted, now: now)
            updated.deadReason = reason
            publish(.deadLettered(updated.entry))
            let why = reason.explanation(attempts: updated.attempts, detail: response.map { "\($0.statusCode)" })
            waiting?.finish(.failure(NetworkError(
                .deadLettered, "the frozen request was given up: \(why)", url: record.url.absoluteString, response: response)))
        case .retry(let at):
            database.complete(id: record.id, completion, status: response?.statusCode, error: errorText, counted: counted, now: now)
            updated.nextAttemptAt = at
            publish(.retryScheduled(updated.entry))
        }
        return next
    }

    private func deadLettered(_ record: OutboxRecord) {
        publish(.deadLettered(record.entry))
        let reason = (record.deadReason ?? .tooManyAttempts).explanation(attempts: record.attempts, detail: record.lastError)
        database.detachOperation(for: record.id)?.finish(.failure(NetworkError(
            .deadLettered, "the frozen request was given up: \(reason)", url: record.url.absoluteString)))
    }

    /// `Retry-After` in seconds from now: delay-seconds or an HTTP date.
    static func retryAfter(_ response: NetworkResponse) -> Double? {
        guard let value = response.headers[.retryAfter]?.trimmingCharacters(in: .whitespaces) else { return nil }
        if let seconds = Double(value), seconds >= 0 { return seconds }
        return HTTPDate.parse(value).map { max(0, $0.timeIntervalSinceNow) }
    }
}

/// A running lease renewal; ``cancel()`` stops it.
struct LeaseRenewal: @unchecked Sendable {
    // Sendable: the timer is only resumed (once, before this value exists) and cancelled; both are
    // thread-safe operations of a dispatch source, and the handler never touches the timer.
    let timer: any DispatchSourceTimer

    func cancel() { timer.cancel() }
}
