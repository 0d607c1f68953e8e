import Courier
import NIOCore
import PostgresNIO

/// The body of a frozen file or form, read back from its outbox's chunks one at a time while the replay
/// sends it: constant memory whatever its size. Each iteration starts over from the first chunk, so a
/// redirect or a retry sends it again. A row dropped while its body is read ends the sequence early (the
/// transport then reports a body shorter than its `Content-Length`). Each chunk's read is one of the store's
/// statements (it takes one of its places); one the server has not returned within the store's timeout fails
/// the body with ``NetworkError/Code/outboxUnavailable`` (the replay fails and is tried again later), rather
/// than holding the request and its lane for as long as the server stalls.
struct PostgresBodyChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    typealias Failure = any Error

    let store: PostgresOutboxStore
    let id: String
    /// The body's length, as frozen: once that many bytes are read the sequence ends, without a read past
    /// the last chunk (one that stalled would fail a try whose whole body the server already has).
    let length: Int64

    func makeAsyncIterator() -> Iterator { Iterator(chunks: self) }

    struct Iterator: AsyncIteratorProtocol {
        let chunks: PostgresBodyChunks
        var part = 0
        var delivered: Int64 = 0
        var isFinished = false

        mutating func next() async throws -> ByteBuffer? {
            guard !isFinished, delivered < chunks.length else { return nil }
            guard let chunk = try await read(part: part) else {
                isFinished = true
                return nil
            }
            part += 1
            delivered += Int64(chunk.readableBytes)
            return chunk
        }

        /// Chunk `part`, or `nil` past the last: one of the store's statements, waited for at most its
        /// timeout (``PostgresOutboxStore/boundedStatement(_:_:)``).
        private func read(part: Int) async throws -> ByteBuffer? {
            let (store, id) = (chunks.store, chunks.id)
            return try await store.boundedStatement("read part \(part) of the frozen body") {
                try await store.schema.chunk(id: id, part: part, client: store.client)
            }
        }
    }
}
