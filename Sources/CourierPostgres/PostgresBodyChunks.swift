import Courier
import NIOCore
import PostgresNIO

/// The body of a frozen file or form, read back from its outbox's chunks one at a time while the replay
/// sends it: constant memory whatever its size. Each iteration starts over from the first chunk, so a
/// redirect or a retry sends it again. The first read also checks the chunks against the frozen length (parts
/// 0 to n adding up to it): a row damaged or edited since it was frozen fails the body before any of it goes,
/// with ``FrozenBodyDamaged`` (the row is dead-lettered, never sent with another body). A row dropped while
/// its body is read ends the sequence early (the transport then reports a body shorter than its
/// `Content-Length`). Each chunk's read is one of the store's statements (it takes one of its places); one the
/// server has not returned within the store's timeout fails the body with ``NetworkError/Code/outboxUnavailable``
/// (the replay fails and is tried again later), rather than holding the request and its lane for as long as
/// the server stalls.
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
            guard !isFinished, part == 0 || delivered < chunks.length else { return nil }
            guard let chunk = part == 0 ? try await first() : try await read(part: part), chunk.readableBytes > 0 else {
                isFinished = true
                return nil
            }
            part += 1
            delivered += Int64(chunk.readableBytes)
            return chunk
        }

        /// Chunk 0, once the chunks are known to add up to the frozen length.
        private func first() async throws -> ByteBuffer? {
            let (store, id, length) = (chunks.store, chunks.id, chunks.length)
            let (chunk, isWhole, isPending) = try await store.boundedStatement("read part 0 of the frozen body") {
                try await store.schema.firstChunk(id: id, length: length, owner: store.owner, client: store.client)
            }
            if let failure = PostgresBodyChunks.failure(isWhole: isWhole, isPending: isPending, length: length) { throw failure }
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

    /// Why a body whose chunks were found so cannot be sent, or `nil`: a row settled meanwhile (delivered
    /// by an instance that took the lease over), or leased to another instance now, is not damaged, and fails
    /// the try as an outbox's failure, which changes nothing (the operation learns the outcome); chunks that
    /// are not whole are ``FrozenBodyDamaged``.
    static func failure(isWhole: Bool, isPending: Bool, length: Int64) -> NetworkError? {
        guard isPending else {
            return NetworkError(.outboxUnavailable, "the outbox no longer holds this request as pending for this instance")
        }
        guard isWhole else {
            let detail = "the outbox's copy of its body is damaged: its chunks do not add up to its frozen length of \(length) bytes"
            return NetworkError(.outboxUnavailable, detail, underlying: FrozenBodyDamaged(detail))
        }
        return nil
    }
}
