import Foundation
import HTTPTypes
import NIOConcurrencyHelpers

/// Runs one engine's ``ReplayStateMachine``: claims rows of the engine's origin from the outbox, sends
/// them through the engine (and so the shared queue), records each outcome, reports it, and sets the
/// retry timer. Every decision is the machine's; this class only does the I/O.
final class OutboxReplayer: Sendable {
    private struct State {
        var machine: ReplayStateMachine
        var timer: Task<Void, Never>?
        var flushWaiters: [CheckedContinuation<[OutboxEvent], Never>] = []
        /// What happened during the current flush, for its callers.
        var flushLog: [OutboxEvent] = []
        var isStopped = false
    }

    let database: OutboxDatabase
    let origin: String
    private let lease: Double
    private let makeOperation: @Sendable (OutboxRecord) -> NetworkOperation
    private let state: NIOLockedValueBox<State>

    init(
        database: OutboxDatabase, origin: String, retry: OutboxRetry, isReachable: Bool,
        makeOperation: @escaping @Sendable (OutboxRecord) -> NetworkOperation
    ) {
        self.database = database
        self.origin = origin
        self.lease = max(1, retry.lease.seconds)
        self.makeOperation = makeOperation
        let backoff = ReplayStateMachine.Backoff(base: max(0.001, retry.initialDelay.seconds), cap: max(0.001, retry.maximumDelay.seconds))
        state = NIOLockedValueBox(State(machine: ReplayStateMachine(isReachable: isReachable, backoff: backoff)))
    }

    func reachabilityChanged(_ reachable: Bool) {
        run(state.withLockedValue { $0.isStopped ? .idle : $0.machine.reachabilityChanged(reachable) })
    }

    /// Something was frozen, or a timer fired: send what is due.
    func kick() {
        run(state.withLockedValue { $0.isStopped ? .idle : $0.machine.timerFired() })
    }

    /// Sends now what can be sent, ignoring retry times; returns when the replay is idle again (nothing
    /// pending, the host unreachable, or an attempt that must wait).
    func flush() async -> [OutboxEvent] {
        await withCheckedContinuation { continuation in
            let action = state.withLockedValue { state in
                guard !state.isStopped else { return ReplayStateMachine.Action.idle }
                state.flushWaiters.append(continuation)
                return state.machine.flush()
            }
            run(action)
            // Nothing started (unreachable, stopped), and nothing running will finish the flush.
            resumeFlushWaitersIfIdle()
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
            guard state.isStopped || (state.machine.sending == nil && !state.machine.isClaiming && !state.machine.isFlushing) else { return ([], []) }
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
            case .claimHead(let ignoringSchedule):
                let now = Date().timeIntervalSince1970
                let (head, decision, record) = database.claimHead(origin: origin, now: now, ignoringSchedule: ignoringSchedule, lease: lease)
                if case .deadLetter? = decision, let record { deadLettered(record) }
                let next = state.withLockedValue { $0.machine.headClaimed(head, decision: decision) }
                if case .send = next, let record {
                    send(record)
                    return
                }
                action = next
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

    private func send(_ record: OutboxRecord) {
        let operation = makeOperation(record)
        operation.whenFinished { [self] result in attemptFinished(record, result: result) }
        operation.submit()
    }

    private func attemptFinished(_ record: OutboxRecord, result: Result<NetworkResponse, NetworkError>) {
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
                outcome = .noAnswer
            }
        }
        let (completion, next) = state.withLockedValue { state in
            let (completion, next) = state.machine.attemptFinished(
                id: record.id, attempts: record.attempts, outcome: outcome, now: Date().timeIntervalSince1970, jitter: Double.random(in: 0..<1))
            // A stopped replayer (its engine is gone) records this outcome but claims nothing more.
            return (completion, state.isStopped ? ReplayStateMachine.Action.idle : next)
        }
        database.complete(id: record.id, completion, status: response?.statusCode, error: errorText)
        var updated = record
        updated.lastStatus = response?.statusCode
        updated.lastError = errorText
        switch completion {
        case .delivered:
            let answer = response ?? NetworkResponse(status: .ok, url: record.url)
            publish(.delivered(updated.entry, answer))
            database.detachOperation(for: record.id)?.finish(.success(answer))
        case .failedPermanently:
            let answer = response ?? NetworkResponse(status: .badRequest, url: record.url)
            publish(.failedPermanently(updated.entry, answer))
            database.detachOperation(for: record.id)?.finish(result.flatMap { _ in
                .failure(NetworkError(.unacceptableStatus, "the server refused the frozen request with \(answer.statusCode)", url: record.url.absoluteString, response: answer))
            })
        case .retry(let at):
            updated.nextAttemptAt = at
            publish(.retryScheduled(updated.entry))
        }
        run(next)
    }

    private func deadLettered(_ record: OutboxRecord) {
        publish(.deadLettered(record.entry))
        let reason = record.deadReason == .expired ? "its time to live ran out" : "it used up its \(record.attempts) attempts"
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
