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

extension ImageDecodingOptions {
    /// The smallest fraction of an image shown `width` x `height` (orientation applied) the caller needs:
    /// 1 without ``targetMaxPixelSize`` and ``thumbnail``.
    func neededScale(width: Int, height: Int) -> Double {
        guard targetMaxPixelSize != nil || thumbnail != nil else { return 1 }
        var scale = 0.0
        if let target = targetMaxPixelSize { scale = Double(max(1, target)) / Double(max(width, height)) }
        if let thumbnail { scale = max(scale, thumbnail.scale(width: width, height: height)) }
        return min(1, scale)
    }

    /// The JPEG DCT scale numerator M (of M/8, 1...8) to decode at: the smallest whose output (libjpeg
    /// rounds up) still has its longer side >= ``targetMaxPixelSize`` and is large enough for ``thumbnail``.
    func jpegScale(width: Int, height: Int) -> Int {
        guard targetMaxPixelSize != nil || thumbnail != nil else { return 8 }
        for m in 1...8 {
            let scaledWidth = (width * m + 7) / 8, scaledHeight = (height * m + 7) / 8
            if let target = targetMaxPixelSize, max(scaledWidth, scaledHeight) < min(target, max(width, height)) { continue }
            if let thumbnail, Double(m) / 8 < thumbnail.scale(width: width, height: height) - 1e-9 { continue }
            return m
        }
        return 8
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
    case CCIC_UNAVAILABLE: throw NetworkError(.imageCodecUnavailable, message)
    default: throw NetworkError(.invalidImage, message.isEmpty ? "invalid \(format)" : message)
    }
}
#endif
