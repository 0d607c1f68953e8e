import Foundation

extension ImageDecodingOptions {
    /// Refuses a declared size before any pixel memory is allocated: zero or negative sides are
    /// `.invalidImage`, more than ``maximumPixelCount`` pixels (or an overflowing product) `.imageTooLarge`.
    func checkDeclaredSize(width: Int, height: Int, format: ImageFormat) throws(NetworkError) {
        guard width > 0, height > 0 else {
            throw NetworkError(.invalidImage, "\(format) declares \(width)x\(height)")
        }
        let (count, overflow) = width.multipliedReportingOverflow(by: height)
        guard !overflow, count <= maximumPixelCount else {
            throw NetworkError(
                .imageTooLarge,
                "\(format) declares \(width)x\(height) (\(overflow ? "too many" : "\(count)") pixels), over the limit of \(maximumPixelCount)"
            )
        }
    }
}

/// Calls `body` with `data`'s bytes (never a nil base address: empty data is `.invalidImage`), for decoders
/// whose C side reads the bytes across several calls.
func withImageBytes<R>(
    _ data: Data, format: ImageFormat, _ body: (UnsafeBufferPointer<UInt8>) throws(NetworkError) -> R
) throws(NetworkError) -> R {
    guard !data.isEmpty else { throw NetworkError(.invalidImage, "empty \(format) data") }
    let result: Result<R, NetworkError> = data.withUnsafeBytes { raw in
        Result { () throws(NetworkError) -> R in try body(raw.assumingMemoryBound(to: UInt8.self)) }
    }
    return try result.get()
}

/// A buffer of `count` bytes that `fill` initialises completely (or throws); no zero-filling first.
func makePixels(count: Int, _ fill: (UnsafeMutablePointer<UInt8>) throws(NetworkError) -> Void) throws(NetworkError) -> [UInt8] {
    var failure: NetworkError?
    let pixels = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
        do throws(NetworkError) {
            try fill(buffer.baseAddress!)
            initialized = count
        } catch {
            failure = error
            initialized = 0
        }
    }
    if let failure { throw failure }
    return pixels
}

#if canImport(CCourierImageCodecs)
internal import CCourierImageCodecs

/// Runs one C shim call that reports failure as a `CCIC_` code and a message, turning a failure into the
/// matching ``NetworkError``.
func codecCall(_ format: ImageFormat, _ body: (UnsafeMutablePointer<CChar>, Int) -> Int32) throws(NetworkError) {
    var buffer = [CChar](repeating: 0, count: 256)
    let code = buffer.withUnsafeMutableBufferPointer { body($0.baseAddress!, $0.count) }
    guard code != CCIC_OK else { return }
    let message = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    switch code {
    case CCIC_TOO_LARGE: throw NetworkError(.imageTooLarge, message)
    case CCIC_NO_MEMORY: throw NetworkError(.imageTooLarge, "\(format): \(message)")
    default: throw NetworkError(.invalidImage, message.isEmpty ? "invalid \(format)" : message)
    }
}
#endif
