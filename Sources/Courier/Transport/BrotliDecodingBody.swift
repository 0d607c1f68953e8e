import NIOCore

/// A `Content-Encoding: br` body decoded as it is read (RFC 7932), in constant memory: each step hands
/// out at most ``BrotliDecoder/outputChunk`` decoded bytes, keeping the compressed bytes not yet needed,
/// so a part that inflates to a gigabyte is read piece by piece like any other body. Held to the same
/// ratio limit as gzip and deflate: more than `maximumRatio` decoded bytes per compressed byte received
/// fails with ``NetworkError/Code/bodyTooLarge`` before the excess is produced.
struct BrotliDecodingBody<Base: AsyncSequence & Sendable>: AsyncSequence, Sendable where Base.Element == ByteBuffer {
    typealias Element = ByteBuffer
    let base: Base
    let maximumRatio: Int
    let url: String

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: Base.AsyncIterator
        let decoder: BrotliDecoder?
        let url: String
        /// Compressed bytes received and not yet given to the decoder.
        var pending = ByteBuffer()

        mutating func next() async throws -> ByteBuffer? {
            guard let decoder else {
                throw NetworkError(.invalidResponse, "a brotli body arrived but libbrotli is not available", url: url)
            }
            while true {
                if pending.readableBytes > 0 || decoder.hasPendingOutput {
                    let decoded = try decoder.decode(&pending, url: url)
                    if decoded.readableBytes > 0 { return decoded }
                    if pending.readableBytes > 0 || decoder.hasPendingOutput { continue }
                }
                guard let part = try await base.next() else {
                    try decoder.finish(url: url)
                    return nil
                }
                try decoder.receive(part.readableBytes, url: url)
                pending = part
            }
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(
            base: base.makeAsyncIterator(),
            decoder: BrotliLibrary.shared.flatMap { BrotliDecoder(library: $0, maximumRatio: maximumRatio) }, url: url)
    }
}

/// One brotli decoder state, used by one body's reader.
final class BrotliDecoder {
    private let library: BrotliLibrary
    private let state: OpaquePointer
    private let maximumRatio: Int
    private var compressed = 0
    private var decoded = 0
    private var isComplete = false
    /// The decoder holds output it could not hand over yet (its last step filled the piece).
    private(set) var hasPendingOutput = false
    /// The most decoded bytes one step produces: the ratio is checked between steps, and a reader holds
    /// no more than this at a time.
    static let outputChunk = 16 * 1024

    init?(library: BrotliLibrary, maximumRatio: Int) {
        guard let state = library.createInstance(nil, nil, nil) else { return nil }
        self.library = library
        self.state = state
        self.maximumRatio = max(1, maximumRatio)
    }

    deinit { library.destroyInstance(state) }

    /// Counts compressed bytes received (what the ratio limit is measured against).
    /// - Throws: ``NetworkError/Code/invalidResponse`` for bytes after the end of the compressed stream.
    func receive(_ count: Int, url: String) throws(NetworkError) {
        if isComplete, count > 0 { throw Self.corrupt(url, "bytes follow the end of the brotli stream") }
        compressed += count
    }

    /// One step: decodes from `input` (advancing its reader index past what was used) up to
    /// ``outputChunk`` bytes.
    /// - Returns: The decoded bytes, possibly none (the decoder needs more input).
    /// - Throws: ``NetworkError/Code/bodyTooLarge`` past the ratio; ``NetworkError/Code/invalidResponse``
    ///   for corrupt data or bytes after the end of the compressed stream.
    func decode(_ input: inout ByteBuffer, url: String) throws(NetworkError) -> ByteBuffer {
        if isComplete {
            if input.readableBytes > 0 { throw Self.corrupt(url, "bytes follow the end of the brotli stream") }
            return ByteBuffer()
        }
        var output = ByteBuffer()
        var status: Int32 = 0
        let used = input.withUnsafeReadableBytes { source -> Int in
            var availableIn = source.count
            var nextIn = source.baseAddress.map { UnsafePointer($0.assumingMemoryBound(to: UInt8.self)) }
            _ = output.writeWithUnsafeMutableBytes(minimumWritableBytes: Self.outputChunk) { out in
                var availableOut = min(out.count, Self.outputChunk)
                var nextOut = out.baseAddress?.assumingMemoryBound(to: UInt8.self)
                let offered = availableOut
                status = library.decompressStream(state, &availableIn, &nextIn, &availableOut, &nextOut, nil)
                return offered - availableOut
            }
            return source.count - availableIn
        }
        input.moveReaderIndex(forwardBy: used)
        decoded += output.readableBytes
        let (limit, overflow) = compressed.multipliedReportingOverflow(by: maximumRatio)
        if !overflow, decoded > limit {
            throw NetworkError(.bodyTooLarge, "the compressed body inflates beyond the decompression ratio limit", url: url)
        }
        hasPendingOutput = false
        switch BrotliLibrary.Result(rawValue: status) {
        case .needsMoreOutput:
            hasPendingOutput = true
        case .needsMoreInput:
            break
        case .success:
            isComplete = true
            if input.readableBytes > 0 { throw Self.corrupt(url, "bytes follow the end of the brotli stream") }
        case .error, nil:
            throw Self.corrupt(url, "the brotli body is corrupt")
        }
        return output
    }

    /// Checks that the body ended where the compressed stream does.
    /// - Throws: ``NetworkError/Code/invalidResponse`` for a truncated stream.
    func finish(url: String) throws(NetworkError) {
        if compressed > 0, !isComplete { throw Self.corrupt(url, "the brotli body ends before its compressed stream does") }
    }

    private static func corrupt(_ url: String, _ message: String) -> NetworkError {
        NetworkError(.invalidResponse, message, url: url)
    }
}
