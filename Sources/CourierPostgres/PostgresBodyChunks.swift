import Courier
import NIOCore
import PostgresNIO

/// The body of a frozen file or form, read back from its outbox's chunks one at a time while the replay
/// sends it: constant memory whatever its size. Each iteration starts over from the first chunk, so a
/// redirect or a retry sends it again. A row dropped while its body is read ends the sequence early (the
/// transport then reports a body shorter than its `Content-Length`).
struct PostgresBodyChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    typealias Failure = any Error

    let schema: PostgresOutboxSchema
    let client: PostgresClient
    let id: String

    func makeAsyncIterator() -> Iterator { Iterator(chunks: self) }

    struct Iterator: AsyncIteratorProtocol {
        let chunks: PostgresBodyChunks
        var part = 0
        var isFinished = false

        mutating func next() async throws -> ByteBuffer? {
            guard !isFinished else { return nil }
            guard let chunk = try await chunks.schema.chunk(id: chunks.id, part: part, client: chunks.client) else {
                isFinished = true
                return nil
            }
            part += 1
            return chunk
        }
    }
}
