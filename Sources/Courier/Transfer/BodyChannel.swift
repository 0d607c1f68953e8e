public import Foundation
import NIOConcurrencyHelpers

/// The response body on its way to ``NetworkOperation/bodyStream``: one producer (the flight reading
/// the connection) and one consumer, with backpressure. The producer waits while `capacity` chunks are
/// unread, so the flight stops reading the connection and TCP slows the server down.
final class BodyChannel: Sendable {
    private struct State {
        var buffer: [Data] = []
        var head = 0
        /// Set when the body ended: `nil` inside for a complete body, else the failure.
        var end: NetworkError??
        var consumer: CheckedContinuation<Data?, any Error>?
        var producer: CheckedContinuation<Void, Never>?
        /// The consumer stopped (its task was cancelled or it stopped iterating): chunks are dropped.
        var isAbandoned = false
        var hasConsumer = false
        /// The producing task was cancelled: it no longer waits for room.
        var isProducerCancelled = false
        /// A chunk was handed over: the consumer has part of a body, so the request is not sent again.
        var hasReceivedData = false

        var unread: Int { buffer.count - head }
    }

    let capacity: Int
    private let state = NIOLockedValueBox(State())
    /// Called once when the consumer goes away before the end (the operation is then cancelled).
    private let onAbandon: @Sendable () -> Void

    init(capacity: Int = 4, onAbandon: @escaping @Sendable () -> Void) {
        self.capacity = max(1, capacity)
        self.onAbandon = onAbandon
    }

    /// Hands a chunk to the consumer, waiting while `capacity` chunks are unread. Returns at once when
    /// the consumer went away.
    func send(_ chunk: Data) async {
        guard !chunk.isEmpty else { return }
        let mustWait: Bool = state.withLockedValue { state in
            guard !state.isAbandoned, state.end == nil else { return false }
            state.hasReceivedData = true
            if let consumer = state.consumer {
                state.consumer = nil
                consumer.resume(returning: chunk)
                return false
            }
            state.buffer.append(chunk)
            return state.unread >= capacity
        }
        guard mustWait else { return }
        // The flight's task may be cancelled (the operation cancelled, its total timeout) while it waits:
        // it then stops waiting, and its body read fails with the cancellation.
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLockedValue { state in
                    if state.isAbandoned || state.isProducerCancelled || state.unread < capacity { return true }
                    state.producer = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let producer = state.withLockedValue { state in
                state.isProducerCancelled = true
                defer { state.producer = nil }
                return state.producer
            }
            producer?.resume()
        }
    }

    /// Whether any chunk was handed to the consumer: until then an interceptor may send the request again
    /// (a 401 answered with a fresh token, a 503 retried), and the consumer only ever sees the final
    /// attempt's body.
    var hasReceivedData: Bool { state.withLockedValue { $0.hasReceivedData } }

    /// The body ended: completely (`nil`) or with `error`. Chunks already sent are still delivered.
    func finish(_ error: NetworkError?) {
        let (consumer, producer) = state.withLockedValue { state in
            guard state.end == nil else { return (nil as CheckedContinuation<Data?, any Error>?, nil as CheckedContinuation<Void, Never>?) }
            state.end = .some(error)
            defer { state.consumer = nil; state.producer = nil }
            return (state.unread == 0 ? state.consumer : nil, state.producer)
        }
        producer?.resume()
        if let consumer {
            if let error { consumer.resume(throwing: error) } else { consumer.resume(returning: nil) }
        }
    }

    /// The next chunk, `nil` at the end; throws the flight's error, or ``NetworkError/Code/cancelled``
    /// when the consuming task is cancelled (the operation is cancelled with it).
    func next() async throws -> Data? {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Data?, any Error>) in
                enum Step { case chunk(Data, CheckedContinuation<Void, Never>?), end(NetworkError?), wait, cancelled }
                let step: Step = state.withLockedValue { state in
                    if state.isAbandoned { return .cancelled }
                    if state.unread > 0 {
                        let chunk = state.buffer[state.head]
                        state.head += 1
                        if state.head > 64 { state.buffer.removeFirst(state.head); state.head = 0 }
                        let producer = state.unread < capacity ? state.producer : nil
                        if producer != nil { state.producer = nil }
                        return .chunk(chunk, producer)
                    }
                    if let end = state.end { return .end(end) }
                    state.consumer = continuation
                    return .wait
                }
                switch step {
                case .chunk(let chunk, let producer):
                    producer?.resume()
                    continuation.resume(returning: chunk)
                case .end(let error?): continuation.resume(throwing: error)
                case .end(nil): continuation.resume(returning: nil)
                case .cancelled: continuation.resume(throwing: NetworkError(.cancelled, "the reader of the response body stream was cancelled"))
                case .wait: break
                }
            }
        } onCancel: {
            abandon()
        }
    }

    /// The consumer is gone: wake both sides, drop what is buffered, and tell the operation once.
    func abandon() {
        let (consumer, producer, isFirst) = state.withLockedValue { state in
            let isFirst = !state.isAbandoned && state.end == nil
            state.isAbandoned = true
            state.buffer = []
            state.head = 0
            defer { state.consumer = nil; state.producer = nil }
            return (state.consumer, state.producer, isFirst)
        }
        producer?.resume()
        consumer?.resume(throwing: NetworkError(.cancelled, "the reader of the response body stream was cancelled"))
        if isFirst { onAbandon() }
    }

    /// Marks the channel as read by an iterator; a second iterator is refused.
    func claimConsumer() -> Bool {
        state.withLockedValue { state in
            defer { state.hasConsumer = true }
            return !state.hasConsumer
        }
    }
}

/// A response body as it comes off the wire (``NetworkOperation/bodyStream``): chunks in order, with
/// backpressure (while the consumer does not ask for the next chunk, the connection is not read).
/// Iterate it once. Ends after the last chunk, or throws the operation's ``NetworkError``; stopping
/// early (breaking out, cancelling the task) cancels the operation.
public struct ResponseBodyStream: AsyncSequence, Sendable {
    public typealias Element = Data
    let channel: BodyChannel

    /// The iterator. Dropping it before the end (breaking out of the loop) abandons the body: the
    /// operation is cancelled.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let reader: Reader

        /// The next chunk, or `nil` at the end of the body.
        public mutating func next() async throws -> Data? {
            try await reader.next()
        }
    }

    /// Reads the channel for one iterator; abandons it when released before the end.
    final class Reader: Sendable {
        let channel: BodyChannel
        let isFirst: Bool
        private let finished = NIOLockedValueBox(false)

        init(channel: BodyChannel, isFirst: Bool) {
            self.channel = channel
            self.isFirst = isFirst
        }

        func next() async throws -> Data? {
            guard !finished.withLockedValue({ $0 }) else { return nil }
            guard isFirst else {
                finished.withLockedValue { $0 = true }
                throw NetworkError(.bodyNotReplayable, "a response body stream can be iterated only once")
            }
            do {
                guard let chunk = try await channel.next() else {
                    finished.withLockedValue { $0 = true }
                    return nil
                }
                return chunk
            } catch {
                finished.withLockedValue { $0 = true }
                throw error
            }
        }

        deinit {
            if isFirst, !finished.withLockedValue({ $0 }) { channel.abandon() }
        }
    }

    /// Makes the iterator (once).
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(reader: Reader(channel: channel, isFirst: channel.claimConsumer()))
    }
}
