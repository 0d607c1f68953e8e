import NIOCore

/// A streamed request body as it is handed to the transport: each part reported as upload progress
/// and held back while a bandwidth limit says so (the transport then has nothing to send, so the
/// socket stays idle).
struct MeteredParts: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let base: any AsyncSequence<ByteBuffer, any Error> & Sendable
    let total: Int64?
    let progress: @Sendable (Int64, Int64?) -> Void
    let throttles: [Throttle]

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: any AsyncIteratorProtocol<ByteBuffer, any Error>
        let total: Int64?
        let progress: @Sendable (Int64, Int64?) -> Void
        let throttles: [Throttle]
        var sent: Int64 = 0

        mutating func next() async throws -> ByteBuffer? {
            guard let part = try await base.next() else { return nil }
            try await Throttle.wait(for: part.readableBytes, under: throttles)
            sent += Int64(part.readableBytes)
            progress(sent, total)
            return part
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: base.makeAsyncIterator(), total: total, progress: progress, throttles: throttles)
    }
}
