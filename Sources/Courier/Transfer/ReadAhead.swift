import NIOCore

/// A body read from disk one chunk ahead: while the transport sends a chunk, the next is already being
/// read on NIO's file thread pool, so the disk and the socket work at the same time instead of taking
/// turns. At most one chunk is read ahead, so memory stays bounded by two chunks.
struct ReadAhead: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let base: any AsyncSequence<ByteBuffer, any Error> & Sendable

    func makeAsyncIterator() -> Iterator { Iterator(source: Source(base.makeAsyncIterator())) }

    /// The base iterator, advanced by one task at a time.
    ///
    /// `@unchecked Sendable`: the only access is `next()`, made by the read tasks of one ``Iterator``,
    /// and each read task is created only after the previous one has finished (its value was awaited),
    /// so no two tasks ever touch `iterator` at once; the tasks' creation and completion order the
    /// accesses (happens-before through `Task.value`).
    final class Source: @unchecked Sendable {
        private var iterator: any AsyncIteratorProtocol<ByteBuffer, any Error>

        init(_ iterator: any AsyncIteratorProtocol<ByteBuffer, any Error>) {
            self.iterator = iterator
        }

        func next() async throws -> ByteBuffer? {
            try await iterator.next()
        }
    }

    struct Iterator: AsyncIteratorProtocol {
        typealias Element = ByteBuffer
        let source: Source
        /// The read of the next chunk, already under way.
        private var ahead: Task<ByteBuffer?, any Error>?
        private var finished = false

        init(source: Source) {
            self.source = source
        }

        mutating func next() async throws -> ByteBuffer? {
            guard !finished else { return nil }
            let source = source
            let current = ahead ?? Task { try await source.next() }
            ahead = nil
            do {
                guard let chunk = try await withTaskCancellationHandler(operation: { try await current.value }, onCancel: { current.cancel() }) else {
                    finished = true
                    return nil
                }
                ahead = Task { try await source.next() }
                return chunk
            } catch {
                finished = true
                throw error
            }
        }
    }
}
