import Foundation
import HTTPTypes

// The operation's side of its engine's event monitors (Monitoring/). Each event is *dispatched* onto the
// engine's monitor queue where it happens, under the operation's lock when it changes or depends on the
// operation's state: the lock orders the operation's events (no progress after the outcome, no outcome
// before the enqueue), and the monitors themselves run later, holding nothing. Every hook starts with
// the one check an engine without monitors pays.
extension NetworkOperation {
    /// Dispatches an event to the engine's monitors (a no-op without monitors). Never calls a monitor.
    /// - Parameter isProgress: Whether the event is body progress, which a full backlog drops (``EventMonitorHub``).
    func emit(isProgress: Bool = false, _ event: @escaping @Sendable (any EventMonitor, NetworkOperation) -> Void) {
        guard let hub = context.monitors else { return }
        hub.emit(isProgress: isProgress) { [self] monitor in event(monitor, self) }
    }

    /// Dispatches an event of the running operation, under its lock, unless it already has its outcome
    /// (a flight's late event never follows ``EventMonitor/operation(_:didFinish:metrics:)``).
    /// - Parameter record: Changes to its timeline, made under the same lock.
    private func emitWhileRunning(
        recording record: ((inout OperationTimeline) -> Void)? = nil,
        _ event: @escaping @Sendable (any EventMonitor, NetworkOperation) -> Void
    ) {
        guard context.monitors != nil else { return }
        storage.withLockedValue { storage in
            guard storage.machine.outcome == nil else { return }
            record?(&storage.timeline)
            emit(event)
        }
    }

    /// Under the lock, as the operation is enqueued.
    func monitorEnqueue(in storage: inout Storage) {
        guard context.monitors != nil else { return }
        storage.timeline.enqueued(at: .now)
        emit { monitor, operation in monitor.operationDidEnqueue(operation) }
    }

    /// Under the lock, as the operation starts executing (its flight got a slot, or it joined one).
    func monitorStart(in storage: inout Storage) {
        guard context.monitors != nil else { return }
        storage.timeline.started(at: .now)
    }

    /// Under the lock, as the outcome is published: the operation's last event, with its timings.
    func monitorFinish(_ outcome: Result<NetworkResponse, NetworkError>, in storage: inout Storage) {
        guard context.monitors != nil else { return }
        let metrics = storage.timeline.metrics(finishedAt: .now)
        emit { monitor, operation in monitor.operation(operation, didFinish: outcome, metrics: metrics) }
    }

    /// What the cache decided before the network.
    func monitorCacheLookup(_ decision: CacheLookupDecision) {
        guard context.monitors != nil else { return }
        let result: CacheLookupResult = switch decision {
        case .fresh: .hit
        case .stale: .stale
        case .revalidate: .revalidate
        case .miss: .miss
        case .unsatisfiable: .unsatisfiable
        }
        emitWhileRunning { monitor, operation in monitor.operation(operation, didLookUpCache: result) }
    }

    /// A request of the operation's flight goes on the wire (each attempt, each redirect hop).
    func queueDidStartRequest(_ sent: PreparedRequest) {
        guard context.monitors != nil else { return }
        let request = HTTPRequest(method: sent.method, url: sent.url, headerFields: sent.headers)
        emitWhileRunning { monitor, operation in monitor.operation(operation, didStartRequest: request) }
    }

    /// The head of a final response of the operation's flight arrived.
    func queueDidReceiveTrailers(_ trailers: HTTPFields) {
        storage.withLockedValue { $0.responseTrailers = trailers }
    }

    func queueDidReceiveHead(status: HTTPResponse.Status, headers: HTTPFields, version: NetworkResponse.ProtocolVersion? = nil) {
        let response = HTTPResponse(status: status, headerFields: headers)
        storage.withLockedValue {
            $0.responseHead = response
            $0.responseVersion = version
            // A new answer (a retry's, a redirect's): an earlier one's trailers are not its own.
            $0.responseTrailers = nil
        }
        guard context.monitors != nil else { return }
        emitWhileRunning(recording: { $0.receivedHead(at: .now) }) { monitor, operation in
            monitor.operation(operation, didReceiveResponseHead: response)
        }
    }

    /// Under the lock, as an interim response is delivered to the operation's handlers.
    func monitorInterim(_ response: InformationalResponse, in storage: inout Storage) {
        guard context.monitors != nil else { return }
        storage.timeline.receivedHead(at: .now)
        emit { monitor, operation in monitor.operation(operation, didReceiveInterimResponse: response) }
    }

    /// The operation's flight follows a redirect.
    func queueWillFollowRedirect(to url: URL) {
        emitWhileRunning { monitor, operation in monitor.operation(operation, willFollowRedirectTo: url) }
    }

    /// An interceptor asked for another attempt of the operation's flight.
    func queueWillRetry(attempt: Int, after delay: Duration, failure: NetworkError) {
        emitWhileRunning(recording: { $0.retrying(at: .now) }) { monitor, operation in
            monitor.operation(operation, willRetry: attempt, after: delay, failure: failure)
        }
    }

    /// The outbox is about to send this replay of a frozen request.
    func monitorReplay(of entry: OutboxEntry) {
        emit { monitor, operation in monitor.operation(operation, willReplay: entry) }
    }
}
