import Foundation
import HTTPTypes
import NIOConcurrencyHelpers

/// What an outbox tells and remembers within this process, whatever store holds its rows (``OutboxStore``):
/// the event streams, the frozen operations waiting for their rows' outcomes, and this process's replays
/// on their way. Nothing here is durable: a store's rows are the truth, and a restarted process learns
/// outcomes from them.
package final class OutboxListeners: Sendable {
    struct State {
        var streams: [Int: (origin: String?, continuation: AsyncStream<OutboxEvent>.Continuation)] = [:]
        var nextKey = 0
        /// Frozen operations whose handlers still listen, by row id.
        var operations: [String: NetworkOperation] = [:]
        /// Replays of this process on their way, by row id, and whether a drop was asked for meanwhile.
        var replays: [String: (operation: NetworkOperation, dropRequested: Bool)] = [:]
        /// Whether the store's watch for other processes' outcomes runs, and what it last saw (its own
        /// stamp: file sizes and times for SQLite).
        var isWatching = false
        var watchedStamp: [Int64] = []
    }

    let state = NIOLockedValueBox(State())
    /// The replayers of this process on the store, weakly: told when another instance adds rows.
    private let replayers = NIOLockedValueBox<[ObjectIdentifier: WeakReplayer]>([:])

    package init() {}

    private static let registry = NIOLockedValueBox<[String: OutboxListeners]>([:])

    /// The listeners of one outbox in this process (``OutboxLocation/listenersKey``), made on first need:
    /// shared by its store and by everyone who subscribes to its events before the store is opened.
    package static func shared(_ key: String) -> OutboxListeners {
        registry.withLockedValue { registry in
            if let listeners = registry[key] { return listeners }
            let listeners = OutboxListeners()
            registry[key] = listeners
            return listeners
        }
    }

    /// Registers a replayer of this process, to be woken by ``wakeReplayers()``.
    func register(_ replayer: OutboxReplayer) {
        replayers.withLockedValue { replayers in
            replayers = replayers.filter { $0.value.replayer != nil }
            replayers[ObjectIdentifier(replayer)] = WeakReplayer(replayer: replayer)
        }
    }

    /// Another instance added rows or made some due (a server's notification, or the store's fallback
    /// poll): every replayer of this process looks for work.
    package func wakeReplayers() {
        for replayer in replayers.withLockedValue({ $0.values.compactMap(\.replayer) }) { replayer.kick() }
    }

    /// Events about rows of an origin (all origins with `nil`), from now on.
    package func events(origin: String?) -> AsyncStream<OutboxEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: OutboxEvent.self, bufferingPolicy: .bufferingNewest(4096))
        state.withLockedValue { state in
            let key = state.nextKey
            state.nextKey += 1
            state.streams[key] = (origin, continuation)
            continuation.onTermination = { [weak self] _ in _ = self?.state.withLockedValue { $0.streams.removeValue(forKey: key) } }
        }
        return stream
    }

    package func publish(_ event: OutboxEvent, origin: String) {
        state.withLockedValue { state in
            for (filter, continuation) in state.streams.values where filter == nil || filter == origin {
                continuation.yield(event)
            }
        }
    }

    /// A replay of this process is on its way for a row (a drop meanwhile waits for its outcome).
    func replayStarted(_ operation: NetworkOperation, for id: String) {
        state.withLockedValue { $0.replays[id] = (operation, false) }
    }

    /// The replay of a row ended; returns whether a drop was asked for meanwhile.
    func replayEnded(for id: String) -> Bool {
        // The removed entry (and its operation) is released after the lock, never under it.
        let ended = state.withLockedValue { $0.replays.removeValue(forKey: id) }
        return ended?.dropRequested ?? false
    }

    /// A drop of a row this process is replaying: noted for the replay's outcome to decide, and the replay
    /// returned (to be cancelled if it has not started). `nil` when no replay of the row is on its way.
    package func noteDropOfReplay(_ id: String) -> NetworkOperation? {
        state.withLockedValue { state in
            guard state.replays[id] != nil else { return nil }
            state.replays[id]?.dropRequested = true
            return state.replays[id]?.operation
        }
    }

    /// The ids of the rows this process is replaying now.
    package var replaying: [String] { state.withLockedValue { Array($0.replays.keys) } }

    /// Remembers a frozen operation whose handlers wait for its outcome; returns whether the store
    /// should start watching for outcomes settled by other processes (it is not yet).
    func attach(_ operation: NetworkOperation, to id: String) -> Bool {
        state.withLockedValue { state in
            state.operations[id] = operation
            guard !state.isWatching else { return false }
            state.isWatching = true
            return true
        }
    }

    /// The rows whose waiting operations another process may settle (not those this process replays), or
    /// `nil` when none waits any more (the watch then stops).
    package func watchedRows() -> [String]? {
        state.withLockedValue { state in
            guard !state.operations.isEmpty else {
                state.isWatching = false
                return nil
            }
            return state.operations.keys.filter { state.replays[$0] == nil }
        }
    }

    /// The frozen operation waiting for a row's outcome, if it is alive in this process (left in the table).
    package func attachedOperation(for id: String) -> NetworkOperation? {
        state.withLockedValue { $0.operations[id] }
    }

    /// The frozen operation waiting for a row's outcome, removed from the table.
    func detachOperation(for id: String) -> NetworkOperation? {
        state.withLockedValue { $0.operations.removeValue(forKey: id) }
    }

    /// The row was dropped: its waiting operation fails as cancelled.
    package func operationDropped(_ id: String) {
        detachOperation(for: id)?.finish(.failure(NetworkError(.cancelled, "its outbox entry was dropped", url: nil)))
    }

    /// The row is lost (its store was damaged and set aside): its waiting operation hears it.
    package func operationLost(_ id: String, because reason: String) {
        detachOperation(for: id)?.finish(.failure(NetworkError(.outboxUnavailable, reason, url: nil)))
    }

    /// Finishes the waiting operations of rows another process settled: `found` holds each row still
    /// there (with its outcome column, `nil` while pending or dead-lettered); a row missing from it was
    /// dropped. A row found but unreadable (`record` `nil`) is left for the next look.
    package func settle(_ ids: [String], found: [String: (record: OutboxRecord?, outcome: String?)]) {
        for id in ids {
            guard let (record, outcome) = found[id] else {
                // Gone: dropped or cleared by another process.
                operationDropped(id)
                continue
            }
            guard let record else { continue }
            let response = NetworkResponse(status: HTTPResponse.Status(code: record.lastStatus ?? 200), url: record.url)
            switch outcome {
            case "delivered"?:
                guard let operation = detachOperation(for: id) else { continue }
                publish(.delivered(record.entry.with(state: .delivered), response), origin: record.origin)
                operation.finish(.success(response))
            case "failed"?:
                guard let operation = detachOperation(for: id) else { continue }
                publish(.failedPermanently(record.entry.with(state: .failedPermanently), response), origin: record.origin)
                operation.finish(.failure(NetworkError(
                    .unacceptableStatus, "the server refused the frozen request with \(response.statusCode)",
                    url: record.url.absoluteString, response: response)))
            default:
                guard let reason = record.deadReason, let operation = detachOperation(for: id) else { continue }
                publish(.deadLettered(record.entry), origin: record.origin)
                let why = reason.explanation(attempts: record.attempts, detail: record.lastError)
                operation.finish(.failure(NetworkError(.deadLettered, "the frozen request was given up: \(why)", url: record.url.absoluteString)))
            }
        }
    }
}

private struct WeakReplayer: Sendable {
    weak var replayer: OutboxReplayer?
}
