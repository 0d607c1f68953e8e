import NIOCore

/// A streamed request body as it is handed to the transport: its parts counted as upload progress
/// (reported through a ``ProgressMeter``, with rate and time left) and held back while a bandwidth
/// limit says so (the transport then has nothing to send, so the socket stays idle).
struct MeteredParts: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let base: any AsyncSequence<ByteBuffer, any Error> & Sendable
    let total: Int64?
    let progress: @Sendable (TransferProgress) -> Void
    let throttles: [Throttle]

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: any AsyncIteratorProtocol<ByteBuffer, any Error>
        let progress: @Sendable (TransferProgress) -> Void
        let throttles: [Throttle]
        var meter: ProgressMeter

        mutating func next() async throws -> ByteBuffer? {
            guard let part = try await base.next() else {
                if let report = meter.finish(at: .now) { progress(report) }
                return nil
            }
            try await Throttle.wait(for: part.readableBytes, under: throttles)
            if let report = meter.add(part.readableBytes, at: .now) { progress(report) }
            return part
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(
            base: base.makeAsyncIterator(), progress: progress, throttles: throttles, meter: ProgressMeter(total: total, at: .now))
    }
}
