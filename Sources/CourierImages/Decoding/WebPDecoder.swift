#if canImport(CCourierImageCodecs)
import Foundation
internal import CCourierImageCodecs

/// WebP (lossy, lossless, extended) through libwebp: rgba8 when the file has alpha, rgb8 otherwise. An
/// animated WebP is `.unsupportedImageFormat` (libwebp's simple decoder does not do animations).
struct WebPDecoder: ImageDecoder {
    func canDecode(_ data: Data) -> Bool { ImageFormat(sniffing: data) == .webp }

    func decode(_ data: Data, options: ImageDecodingOptions) throws(NetworkError) -> CourierImage {
        try withImageBytes(data, format: .webp) { (bytes) throws(NetworkError) -> CourierImage in
            var width: Int32 = 0, height: Int32 = 0, hasAlpha: Int32 = 0, hasAnimation: Int32 = 0
            try codecCall(.webp) {
                ccic_webp_read_header(bytes.baseAddress, bytes.count, &width, &height, &hasAlpha, &hasAnimation, $0, $1)
            }
            let w = Int(width), h = Int(height)
            try options.checkDeclaredSize(width: w, height: h, format: .webp)
            guard hasAnimation == 0 else { throw NetworkError(.unsupportedImageFormat, "animated WebP is not supported") }
            let format: CourierImage.PixelFormat = hasAlpha != 0 ? .rgba8 : .rgb8
            let stride = w * format.bytesPerPixel
            let pixels = try makePixels(count: stride * h) { (pointer) throws(NetworkError) in
                try codecCall(.webp) {
                    ccic_webp_decode(bytes.baseAddress, bytes.count, pointer, stride, Int32(format.bytesPerPixel), $0, $1)
                }
            }
            return CourierImage(unchecked: w, h, format, pixels, .webp)
        }
    }
}
#endif
