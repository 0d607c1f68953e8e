public import Foundation
#if canImport(CCourierImageCodecs)
internal import CCourierImageCodecs
#endif

extension CourierImage {
    /// The image encoded as `encoding` (libjpeg-turbo and libpng on Linux, ImageIO on Apple platforms).
    /// - Throws: `NetworkError` `.imageEncodingFailed` when the encoder fails, `.imageCodecUnavailable`
    ///   when its library is not installed (Linux).
    public func encoded(as encoding: ImageEncoding) throws(NetworkError) -> Data {
        #if canImport(CCourierImageCodecs)
        var output: UnsafeMutablePointer<UInt8>?
        var length = 0
        let channels = Int32(pixelFormat.bytesPerPixel), w = Int32(clamping: width), h = Int32(clamping: height)
        let stride = bytesPerRow
        do throws(NetworkError) {
            try pixels.withUnsafeBufferPointer { (source) throws(NetworkError) in
                try codecCall(encoding.format) { message, capacity in
                    switch encoding.kind {
                    case .jpeg(let quality):
                        ccic_jpeg_encode(source.baseAddress, w, h, channels, stride, Int32(quality), &output, &length, message, capacity)
                    case .png:
                        ccic_png_encode(source.baseAddress, w, h, channels, stride, &output, &length, message, capacity)
                    }
                }
            }
        } catch {
            // A codec whose library is missing says so (and which package to install).
            if error.code == .imageCodecUnavailable { throw error }
            throw NetworkError(.imageEncodingFailed, "\(encoding): \(error.message)")
        }
        guard let output else { throw NetworkError(.imageEncodingFailed, "\(encoding): no output") }
        return Data(bytesNoCopy: output, count: length, deallocator: .custom { pointer, _ in ccic_free(pointer) })
        #elseif canImport(ImageIO)
        return try encodedWithImageIO(as: encoding)
        #else
        throw NetworkError(.imageEncodingFailed, "no image encoder on this platform")
        #endif
    }
}
