import Foundation
import HTTPTypes
import Testing
@testable import Courier

/// Tier 1: the pipeline's pure parts: backoff, Retry-After, the retry policy's decisions, the token
/// refresh rules, and the queue's suspended flights.
@Suite("Pipeline: pure parts")
struct PipelineStateMachineTests {
    @Test func backoffCeilingsDoubleUpToTheMaximumAndJitterScalesThem() {
        let backoff = RetryBackoff(base: .milliseconds(100), maximum: .seconds(1))
        #expect((1...6).map { backoff.ceiling(forRetry: $0) } == [
            .milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .seconds(1), .seconds(1),
        ])
        #expect(backoff.ceiling(forRetry: 10_000) == .seconds(1), "late retries do not overflow")
        #expect(backoff.delay(forRetry: 3, unit: 0) == .zero)
        #expect(backoff.delay(forRetry: 3, unit: 0.5) == .milliseconds(200))
        #expect(backoff.delay(forRetry: 3, unit: .nan) == .zero)
        #expect(backoff.delay(forRetry: 3, unit: 7) == .milliseconds(400), "a unit out of range is clamped")
    }

    @Test func retryAfterIsSecondsOrAnHTTPDate() {
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        #expect(RetryAfter.delay("120", now: now) == .seconds(120))
        #expect(RetryAfter.delay(" 0 ", now: now) == .zero)
        #expect(RetryAfter.delay(HTTPDate.format(now.addingTimeInterval(30)), now: now) == .seconds(30))
        #expect(RetryAfter.delay(HTTPDate.format(now.addingTimeInterval(-30)), now: now) == .zero, "a date past is no wait")
        #expect(RetryAfter.delay("99999999999999999999", now: now)! > .seconds(1 << 29), "huge numbers saturate")
        for bad in ["-1", "1.5", "1e3", "soon", "", nil] as [String?] {
            #expect(RetryAfter.delay(bad, now: now) == nil, "\(bad ?? "nil")")
        }
    }

    static func failure(status: Int, headers: HTTPFields = [:]) -> NetworkError {
        let response = NetworkResponse(
            status: HTTPResponse.Status(code: status), headers: headers, body: Data(), url: URL(string: "https://api.example.com/x")!)
        return NetworkError(.unacceptableStatus, "status \(status)", url: "https://api.example.com/x", response: response)
    }

    static func policy(_ configure: (inout RetryPolicy) -> Void = { _ in }) -> RetryPolicy {
        var policy = RetryPolicy(
            maximumAttempts: 3, maximumTotalTime: .seconds(60), backoff: RetryBackoff(base: .seconds(1), maximum: .seconds(8)),
            maximumRetryAfter: .seconds(60), retryableStatusCodes: [408, 429, 500, 502, 503, 504],
            retryableErrorCodes: [.cannotConnect, .connectionLost, .timeout], idempotentMethods: [.get, .head, .options, .put, .delete, .trace],
            unit: { 0.5 })
        configure(&policy)
        return policy
    }

    func delay(_ decision: RetryDecision) -> Duration? {
        if case .retry(let delay) = decision { return delay }
        return nil
    }

    @Test func thePolicyRetriesWhatIsSafeAndWorthIt() {
        let policy = Self.policy()
        let get = HTTPRequest(method: .get, scheme: "https", authority: "api.example.com", path: "/x")
        let post = HTTPRequest(method: .post, scheme: "https", authority: "api.example.com", path: "/x")
        var keyed = post
        keyed.headerFields[HTTPField.Name("Idempotency-Key")!] = "k1"
        let now = Date()
        func decide(_ request: HTTPRequest, _ failure: NetworkError, attempt: Int = 1, elapsed: Duration = .zero) -> Duration? {
            delay(policy.decision(for: request, after: failure, attempt: attempt, elapsed: elapsed, now: now))
        }
        #expect(decide(get, Self.failure(status: 503)) == .milliseconds(500), "full jitter: half of the first ceiling")
        #expect(decide(get, Self.failure(status: 503), attempt: 2) == .seconds(1))
        #expect(decide(get, Self.failure(status: 503), attempt: 3) == nil, "three attempts in all")
        #expect(decide(get, NetworkError(.connectionLost)) != nil)
        #expect(decide(get, NetworkError(.timeout)) != nil)
        #expect(decide(get, NetworkError(.tls)) == nil, "a TLS failure does not heal by itself")
        #expect(decide(get, Self.failure(status: 404)) == nil)
        #expect(decide(get, Self.failure(status: 501)) == nil)
        #expect(decide(post, Self.failure(status: 503)) == nil, "POST is not repeated")
        #expect(decide(keyed, Self.failure(status: 503)) != nil, "unless it has an Idempotency-Key")
        #expect(decide(get, Self.failure(status: 429, headers: [.retryAfter: "7"])) == .seconds(7), "Retry-After wins over backoff")
        #expect(decide(get, Self.failure(status: 503, headers: [.retryAfter: "61"])) == nil, "longer than the cap: not waited for")
        #expect(decide(get, Self.failure(status: 503, headers: [.retryAfter: "10"]), elapsed: .seconds(55)) == nil, "past the total time")
    }

    @Test func oneRefreshForManyRefusalsAndNeverALoop() {
        let clock = ContinuousClock.now
        var machine = TokenRefreshStateMachine(token: "old")
        // Three requests begun before the refresh are refused with the old token.
        #expect(machine.refused(sent: "old", startedAt: clock, now: clock) == .startRefresh)
        #expect(machine.refused(sent: "old", startedAt: clock, now: clock) == .join)
        #expect(machine.refused(sent: "old", startedAt: clock, now: clock) == .join)
        machine.refreshSucceeded("new", at: clock + .seconds(1))
        #expect(machine.token == "new")
        // One refused with the old token after the refresh: retried at once with the new one.
        #expect(machine.refused(sent: "old", startedAt: clock, now: clock) == .retryNow)
        // The new token refused for an operation that began before it came: no second refresh.
        #expect(machine.refused(sent: "new", startedAt: clock, now: clock + .seconds(2)) == .fail(.freshTokenRefused))
        // An operation begun later (the token expired since): refreshes again.
        #expect(machine.refused(sent: "new", startedAt: clock + .seconds(10), now: clock + .seconds(10)) == .startRefresh)
        machine.refreshFailed(at: clock + .seconds(11))
        #expect(!machine.isRefreshing)
        #expect(machine.refused(sent: "new", startedAt: clock + .seconds(10), now: clock + .seconds(30)) == .fail(.refreshFailed),
                "begun before the failure: no second refresh for it")
        #expect(machine.refused(sent: "new", startedAt: clock + .seconds(12), now: clock + .seconds(13)) == .fail(.refreshFailed),
                "a burst right after the failure does not refresh again")
        #expect(machine.refused(sent: "new", startedAt: clock + .seconds(25), now: clock + .seconds(25)) == .startRefresh,
                "later, a new operation may try again")
        machine.setToken("login")
        #expect(machine.token == "login", "a login replaces whatever the refresh was doing")
    }

    @Test func aSuspendedFlightFreesItsSlotAndComesBackAheadOfLaterWork() throws {
        var machine = QueueStateMachine(maximumConcurrent: 1)
        let first = OperationID.next(), second = OperationID.next(), third = OperationID.next()
        let started = machine.enqueue(first, priority: .normal, key: nil)
        let flight = try #require(started.start.first?.flight)
        _ = machine.enqueue(second, priority: .normal, key: nil)
        // The first attempt failed; while the interceptors decide and back off, the next one runs.
        let suspension = machine.suspendFlight(flight)
        let suspended = try #require(suspension)
        let secondFlight = try #require(suspended.start.first?.flight)
        #expect(suspended.start.first?.subscribers == [second])
        _ = machine.enqueue(third, priority: .normal, key: nil)
        // The retry waits for a slot, and takes it before the third, enqueued after it.
        #expect(machine.requeueFlight(flight).start.isEmpty, "no slot is free")
        let next = machine.flightFinished(secondFlight)
        #expect(next.deliver == [second])
        #expect(next.start.map(\.flight) == [flight])
        #expect(next.start.first?.subscribers == [first])
    }

    @Test func aSuspendedFlightWhoseSubscribersLeaveIsGoneAndItsRetryIsIgnored() throws {
        var machine = QueueStateMachine(maximumConcurrent: 2)
        let id = OperationID.next()
        let enqueued = machine.enqueue(id, priority: .normal, key: nil)
        let flight = try #require(enqueued.start.first?.flight)
        #expect(machine.suspendFlight(flight) != nil)
        #expect(machine.occupiedSlots == 0)
        let cancel = machine.cancel(id)
        #expect(cancel.cancelled == [id] && cancel.cancelFlights == [flight])
        #expect(!machine.hasFlight(flight))
        #expect(machine.requeueFlight(flight) == QueueStateMachine.Action())
        #expect(machine.finishSuspendedFlight(flight) == QueueStateMachine.Action())
        #expect(machine.suspendFlight(flight) == nil)
        #expect(machine.operationCount == 0)
    }

    @Test func aSuspendedFlightThatIsNotRetriedDeliversToEverySubscriber() throws {
        var machine = QueueStateMachine(maximumConcurrent: 1)
        let request = PreparedRequest(
            method: .get, url: URL(string: "https://api.example.com/x")!, headers: [:], body: nil, bodySource: nil,
            options: TransportOptions(), redirects: RedirectPolicy(), maximumBodySize: 1 << 20, totalTimeout: nil,
            logger: .init(label: "test"))
        let key = CoalescingKey(request: request, uniqueIdentifier: "x")
        let a = OperationID.next(), b = OperationID.next()
        let enqueued = machine.enqueue(a, priority: .normal, key: key)
        let flight = try #require(enqueued.start.first?.flight)
        #expect(machine.suspendFlight(flight) != nil)
        // Identical work joins the suspended flight rather than starting its own.
        let joined = machine.enqueue(b, priority: .normal, key: key)
        #expect(joined.start.isEmpty && joined.joinedRunning == [b])
        let finished = machine.finishSuspendedFlight(flight)
        #expect(Set(finished.deliver) == [a, b])
        #expect(machine.operationCount == 0 && machine.occupiedSlots == 0)
    }
}
