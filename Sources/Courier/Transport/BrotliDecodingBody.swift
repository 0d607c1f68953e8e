import NIOCore

/// A `Content-Encoding: br` body decoded as it is read (RFC 7932), in constant memory, held to the same
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

        mutating func next() async throws -> ByteBuffer? {
            guard let decoder else {
                throw NetworkError(.invalidResponse, "a brotli body arrived but libbrotli is not available", url: url)
            }
            while let part = try await base.next() {
                let decoded = try decoder.decode(part, url: url)
                if decoded.readableBytes > 0 { return decoded }
            }
            try decoder.finish(url: url)
            return nil
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
    /// Decoded bytes are produced in pieces of this size at most, so the ratio is checked between them.
    static let outputChunk = 16 * 1024

    init?(library: BrotliLibrary, maximumRatio: Int) {
        guard let state = library.createInstance(nil, nil, nil) else { return nil }
        self.library = library
        self.state = state
        self.maximumRatio = max(1, maximumRatio)
    }

    deinit { library.destroyInstance(state) }

    /// Decodes one part of the compressed body.
    /// - Returns: What it decodes to (possibly nothing yet).
    /// - Throws: ``NetworkError/Code/bodyTooLarge`` past the ratio; ``NetworkError/Code/invalidResponse``
    ///   for corrupt data or bytes after the end of the compressed stream.
    func decode(_ part: ByteBuffer, url: String) throws(NetworkError) -> ByteBuffer {
        guard part.readableBytes > 0 else { return ByteBuffer() }
        if isComplete { throw Self.corrupt(url, "bytes follow the end of the brotli stream") }
        compressed += part.readableBytes
        var output = ByteBuffer()
        let result: Result<Void, NetworkError> = part.withUnsafeReadableBytes { input in
            var availableIn = input.count
            var nextIn = input.baseAddress.map { UnsafePointer($0.assumingMemoryBound(to: UInt8.self)) }
            while true {
                var status: Int32 = 0
                let produced = output.writeWithUnsafeMutableBytes(minimumWritableBytes: Self.outputChunk) { out in
                    var availableOut = min(out.count, Self.outputChunk)
                    var nextOut = out.baseAddress?.assumingMemoryBound(to: UInt8.self)
                    let offered = availableOut
                    status = library.decompressStream(state, &availableIn, &nextIn, &availableOut, &nextOut, nil)
                    return offered - availableOut
                }
                decoded += produced
                let (limit, overflow) = compressed.multipliedReportingOverflow(by: maximumRatio)
                if !overflow, decoded > limit {
                    return .failure(NetworkError(
                        .bodyTooLarge, "the compressed body inflates beyond the decompression ratio limit", url: url))
                }
                switch BrotliLibrary.Result(rawValue: status) {
                case .needsMoreOutput:
                    continue
                case .needsMoreInput:
                    return .success(())
                case .success:
                    isComplete = true
                    return availableIn == 0 ? .success(()) : .failure(Self.corrupt(url, "bytes follow the end of the brotli stream"))
                case .error, nil:
                    return .failure(Self.corrupt(url, "the brotli body is corrupt"))
                }
            }
        }
        try result.get()
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
