import Testing
@testable import Courier

/// Tier 1: when a server-sent event stream reconnects, ends or fails.
@Suite("Event source state machine")
struct EventSourceStateMachineTests {
    private let options = ServerSentEvents.Options(reconnectionTime: .seconds(1), maximumDelay: .seconds(10), maximumAttempts: 5)

    @Test func answersOpenEndOrFailAsTheStandardSays() {
        var machine = EventSourceStateMachine(options: options)
        #expect(machine.received(status: 200, contentType: "text/event-stream; charset=utf-8", retryAfter: nil, url: nil) == .open)
        #expect(machine.received(status: 200, contentType: "Text/Event-Stream", retryAfter: nil, url: nil) == .open)
        #expect(machine.received(status: 204, contentType: nil, retryAfter: nil, url: nil) == .decided(.end))
        for (status, type) in [(200, "application/json"), (200, nil as String?)] {
            guard case .decided(.fail(let error)) = machine.received(status: status, contentType: type, retryAfter: nil, url: nil) else {
                Issue.record("\(status) \(type ?? "-") did not fail")
                continue
            }
            #expect(error.code == .unacceptableContentType)
        }
        for status in [400, 401, 403, 404, 410, 206] {
            guard case .decided(.fail(let error)) = machine.received(status: status, contentType: "text/event-stream", retryAfter: nil, url: nil) else {
                Issue.record("\(status) did not fail")
                continue
            }
            #expect(error.code == .unacceptableStatus)
        }
        #expect(machine.failedAttempts == 0, "an answer that fails the stream is not an attempt to back off from")
    }

    @Test func failedAttemptsBackOffUpToTheMaximumAndRetryAfterWins() {
        var machine = EventSourceStateMachine(options: options)
        let lost = NetworkError(.cannotConnect)
        #expect(machine.failed(lost) == .reconnect(after: .seconds(1)))
        #expect(machine.failed(lost) == .reconnect(after: .seconds(2)))
        #expect(machine.received(status: 503, contentType: nil, retryAfter: nil, url: nil) == .decided(.reconnect(after: .seconds(4))))
        #expect(machine.failed(lost, retryAfter: .seconds(30)) == .reconnect(after: .seconds(30)), "Retry-After longer than the backoff")
        #expect(machine.failed(lost) == .reconnect(after: .seconds(10)), "capped at the maximum")
        #expect(machine.failed(lost) == .fail(lost), "the sixth failure in a row is past maximumAttempts")
    }

    @Test func anOpenStreamThatEndsReconnectsAfterTheServersTimeAndForgetsFailures() {
        var machine = EventSourceStateMachine(options: options)
        _ = machine.failed(NetworkError(.timeout))
        _ = machine.failed(NetworkError(.connectionLost))
        machine.serverSetReconnectionTime(.milliseconds(750))
        #expect(machine.openStreamEnded(deliveredEvents: true, lasted: .milliseconds(10)) == .reconnect(after: .milliseconds(750)))
        #expect(machine.failedAttempts == 0)
        #expect(machine.failed(NetworkError(.cannotConnect)) == .reconnect(after: .milliseconds(750)), "the backoff starts from the server's time")
        #expect(machine.openStreamEnded(deliveredEvents: false, lasted: .seconds(30)) == .reconnect(after: .milliseconds(750)),
                "a long quiet stream (keep-alives only) that ends is no failure")
        machine.serverSetReconnectionTime(.milliseconds(9_000_000_000_000))
        #expect(machine.openStreamEnded(deliveredEvents: true, lasted: .seconds(1)) == .reconnect(after: .seconds(3600)), "a century's retry: waits an hour")
    }

    @Test func aServerThatHangsUpAtOnceOrSaysRetryZeroGetsNoStorm() {
        var machine = EventSourceStateMachine(options: options)
        machine.serverSetReconnectionTime(.zero)
        // Opened, no event, closed at once: a failed attempt, with backoff from the floor, and maximumAttempts.
        var waits: [Duration] = []
        for _ in 0..<5 {
            guard case .reconnect(let wait) = machine.openStreamEnded(deliveredEvents: false, lasted: .milliseconds(3)) else {
                Issue.record("gave up early")
                return
            }
            waits.append(wait)
        }
        #expect(waits.allSatisfy { $0 >= .milliseconds(500) }, "\(waits)")
        guard case .fail(let error) = machine.openStreamEnded(deliveredEvents: false, lasted: .milliseconds(3)) else {
            Issue.record("a sixth hang-up in a row did not fail the stream")
            return
        }
        #expect(error.code == .connectionLost)
        // One event and a hang-up each time, retry: 0: never faster than the floor.
        var quick = EventSourceStateMachine(options: options)
        quick.serverSetReconnectionTime(.zero)
        for _ in 0..<100 { #expect(quick.openStreamEnded(deliveredEvents: true, lasted: .milliseconds(1)) == .reconnect(after: .milliseconds(500))) }
    }

    @Test func cancellationEndsAndOtherErrorsFail() {
        var machine = EventSourceStateMachine(options: options)
        #expect(machine.failed(.cancelled(url: nil)) == .end)
        #expect(machine.failed(NetworkError(.tls)) == .fail(NetworkError(.tls)))
        #expect(machine.failed(NetworkError(.tooManyRedirects)) == .fail(NetworkError(.tooManyRedirects)))
        let unlimited = ServerSentEvents.Options(reconnectionTime: .zero, maximumDelay: .seconds(1), minimumDelay: .zero)
        var forever = EventSourceStateMachine(options: unlimited)
        for _ in 0..<1000 { #expect(forever.failed(NetworkError(.cannotConnect)) == .reconnect(after: .zero)) }
    }
}
