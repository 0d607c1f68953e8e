import NIOConcurrencyHelpers
import NIOCore

/// A caller's stream that may be taken once. Later takers get a sequence that fails with
/// ``NetworkError/Code/bodyNotReplayable``.
final class OneShotByteStream: Sendable {
    private let stream: NIOLockedValueBox<ErasedByteStream?>

    init(_ stream: ErasedByteStream) {
        self.stream = NIOLockedValueBox(stream)
    }

    /// The stream the first time, a failing one after.
    func take() -> any AsyncSequence<ByteBuffer, any Error> & Sendable {
        if let stream = stream.withLockedValue({ value in defer { value = nil }; return value }) { return stream }
        return FailingByteStream(
            error: NetworkError(
                .bodyNotReplayable,
                "the request body is a one-shot stream that was already sent; it cannot be sent again (a 307/308 redirect, a retry or freezing needed it)"))
    }
}

/// Any sendable sequence of buffers or byte arrays, as buffers with untyped errors.
struct ErasedByteStream: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    typealias Failure = any Error

    private let makeNext: @Sendable () -> (() async throws -> ByteBuffer?)

    init<Base: AsyncSequence & Sendable>(base: Base) where Base.Element == ByteBuffer {
        makeNext = {
            let box = IteratorBox(base.makeAsyncIterator())
            return { try await box.next() }
        }
    }

    init<Base: AsyncSequence & Sendable>(bytes base: Base) where Base.Element == [UInt8] {
        makeNext = {
            let box = IteratorBox(base.makeAsyncIterator())
            return { try await box.next().map { ByteBuffer(bytes: $0) } }
        }
    }

    func makeAsyncIterator() -> Iterator { Iterator(advance: makeNext()) }

    struct Iterator: AsyncIteratorProtocol {
        typealias Element = ByteBuffer
        typealias Failure = any Error
        let advance: () async throws -> ByteBuffer?
        mutating func next() async throws -> ByteBuffer? { try await advance() }
    }
}

/// Holds a base iterator so that a closure can advance it; used by one consumer at a time, as any
/// iterator is (it is not `Sendable`, and never leaves the iterating task).
private final class IteratorBox<Base: AsyncIteratorProtocol> {
    private var base: Base
    init(_ base: Base) { self.base = base }
    func next() async throws -> Base.Element? { try await base.next() }
}

/// A sequence that fails at its first element.
struct FailingByteStream: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    typealias Failure = any Error
    let error: NetworkError

    func makeAsyncIterator() -> Iterator { Iterator(error: error) }

    struct Iterator: AsyncIteratorProtocol {
        typealias Element = ByteBuffer
        typealias Failure = any Error
        let error: NetworkError
        mutating func next() async throws -> ByteBuffer? { throw error }
    }
}
