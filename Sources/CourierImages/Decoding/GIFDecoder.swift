#if canImport(CCourierImageCodecs)
import Foundation
internal import CCourierImageCodecs

/// GIF through giflib: the first frame only, composited on the logical screen (pixels outside the frame
/// transparent), the transparent index as alpha 0; always rgba8. Only records up to the first image are read,
/// so an animation's other frames cost nothing.
struct GIFDecoder: ImageDecoder {
    func canDecode(_ data: Data) -> Bool { ImageFormat(sniffing: data) == .gif }

    func decode(_ data: Data, options: ImageDecodingOptions) throws(NetworkError) -> CourierImage {
        guard let decoder = ccic_gif_decoder_create() else { throw NetworkError(.imageTooLarge, "out of memory") }
        defer { ccic_gif_decoder_destroy(decoder) }
        return try withImageBytes(data, format: .gif) { (bytes) throws(NetworkError) -> CourierImage in
            var width: Int32 = 0, height: Int32 = 0
            try codecCall(.gif) { ccic_gif_read_header(decoder, bytes.baseAddress, bytes.count, &width, &height, $0, $1) }
            let w = Int(width), h = Int(height)
            try options.checkDeclaredSize(width: w, height: h, format: .gif)
            let limit = options.maximumPixelCount
            let pixels = try makePixels(count: w * h * 4) { (pointer) throws(NetworkError) in
                try codecCall(.gif) { ccic_gif_decode(decoder, pointer, limit, $0, $1) }
            }
            return CourierImage(unchecked: w, h, .rgba8, pixels, .gif)
        }
    }
}
#endif
