import Courier
import NIOCore
import PostgresNIO

/// The body of a frozen file or form, read back from its outbox's chunks one at a time while the replay
/// sends it: constant memory whatever its size. Each iteration starts over from the first chunk, so a
/// redirect or a retry sends it again. A row dropped while its body is read ends the sequence early (the
/// transport then reports a body shorter than its `Content-Length`). A chunk the server has not returned
/// within the store's timeout fails the body with ``NetworkError/Code/outboxUnavailable`` (the replay fails
/// and is tried again later), rather than holding the request and its lane for as long as the server stalls.
struct PostgresBodyChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    typealias Failure = any Error

    let schema: PostgresOutboxSchema
    let client: PostgresClient
    let id: String
    let timeout: Duration

    func makeAsyncIterator() -> Iterator { Iterator(chunks: self) }

    struct Iterator: AsyncIteratorProtocol {
        let chunks: PostgresBodyChunks
        var part = 0
        var isFinished = false

        mutating func next() async throws -> ByteBuffer? {
            guard !isFinished else { return nil }
            guard let chunk = try await read(part: part) else {
                isFinished = true
                return nil
            }
            part += 1
            return chunk
        }

        /// Chunk `part`, or `nil` past the last, waited for at most the timeout (a query that ignores its
        /// cancellation is left behind, not waited for).
        private func read(part: Int) async throws -> ByteBuffer? {
            let chunks = chunks
            let outcome = await BoundedWait<Result<ByteBuffer?, any Error>>.run(until: .now + chunks.timeout) {
                do {
                    return .success(try await chunks.schema.chunk(id: chunks.id, part: part, client: chunks.client))
                } catch {
                    return .failure(error)
                }
            }
            switch outcome {
            case .value(let result):
                return try result.get()
            case .timedOut:
                throw NetworkError(
                    .outboxUnavailable,
                    "the PostgreSQL server did not return part \(part) of the frozen body within \(PostgresOutboxStore.seconds(chunks.timeout))")
            case .cancelled:
                throw CancellationError()
            }
        }
    }
}
