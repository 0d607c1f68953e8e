#if canImport(CCourierImageCodecs)
import Foundation
internal import CCourierImageCodecs

/// PNG through libpng's simplified API: rgba8 when the file has alpha (an alpha channel or a `tRNS` chunk),
/// rgb8 for colour, gray8 for gray; 16-bit files are reduced to 8 bits. libpng applies the file's gamma
/// (`gAMA`) when it is not sRGB's. A bad CRC in a critical chunk or truncated data is `.invalidImage`.
struct PNGDecoder: ImageDecoder {
    func canDecode(_ data: Data) -> Bool { ImageFormat(sniffing: data) == .png }

    func decode(_ data: Data, options: ImageDecodingOptions) throws(NetworkError) -> CourierImage {
        guard let decoder = ccic_png_decoder_create() else { throw NetworkError(.imageTooLarge, "out of memory") }
        defer { ccic_png_decoder_destroy(decoder) }
        return try withImageBytes(data, format: .png) { (bytes) throws(NetworkError) -> CourierImage in
            var width: Int32 = 0, height: Int32 = 0, channels: Int32 = 0
            try codecCall(.png) { ccic_png_read_header(decoder, bytes.baseAddress, bytes.count, &width, &height, &channels, $0, $1) }
            let w = Int(width), h = Int(height), bytesPerPixel = Int(channels)
            try options.checkDeclaredSize(width: w, height: h, format: .png)
            let format: CourierImage.PixelFormat = bytesPerPixel == 4 ? .rgba8 : bytesPerPixel == 3 ? .rgb8 : .gray8
            let stride = w * bytesPerPixel
            let pixels = try makePixels(count: stride * h) { (pointer) throws(NetworkError) in
                try codecCall(.png) { ccic_png_decode(decoder, pointer, stride, $0, $1) }
            }
            return CourierImage(unchecked: w, h, format, pixels, .png)
        }
    }
}
#endif
