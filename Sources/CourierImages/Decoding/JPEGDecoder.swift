#if canImport(CCourierImageCodecs)
import Foundation
internal import CCourierImageCodecs

/// JPEG through libjpeg-turbo: rgb8, or gray8 for a grayscale file; CMYK and YCCK files are converted to
/// RGB (inverted CMYK when the file has Adobe's APP14 marker, as Photoshop writes it). With
/// ``ImageDecodingOptions/targetMaxPixelSize`` or ``ImageDecodingOptions/thumbnail`` it decodes at the
/// smallest DCT scale (1/8 to 8/8) whose longer side is still at least the target and that the thumbnail
/// does not need to upscale. The EXIF orientation (APP1) is applied when
/// ``ImageDecodingOptions/appliesOrientation``. A truncated file is `.invalidImage`, never a gray-filled image;
/// so is a file of more than 500 scans (a few kilobytes can otherwise cost minutes of CPU). libjpeg's
/// working memory is held to 4 bytes per allowed pixel (`.imageTooLarge` past it).
struct JPEGDecoder: ImageDecoder {
    func canDecode(_ data: Data) -> Bool { ImageFormat(sniffing: data) == .jpeg }

    func decode(_ data: Data, options: ImageDecodingOptions) throws(NetworkError) -> CourierImage {
        guard let decoder = ccic_jpeg_decoder_create() else { throw NetworkError(.imageTooLarge, "out of memory") }
        defer { ccic_jpeg_decoder_destroy(decoder) }
        return try withImageBytes(data, format: .jpeg) { (bytes) throws(NetworkError) -> CourierImage in
            var info = ccic_jpeg_info()
            try codecCall(.jpeg) { ccic_jpeg_read_header(decoder, bytes.baseAddress, bytes.count, &info, $0, $1) }
            try options.checkDeclaredSize(width: Int(info.width), height: Int(info.height), format: .jpeg)
            var orientation = ExifOrientation.up
            if options.appliesOrientation, let exif = info.exif, info.exif_length > 0 {
                orientation = ExifOrientation(tiff: UnsafeBufferPointer(start: exif, count: info.exif_length)) ?? .up
            }
            // DCT scaling, judged on the picture as shown (width and height swap for orientations 5 to 8).
            let shownWidth = Int(orientation.swapsDimensions ? info.height : info.width)
            let shownHeight = Int(orientation.swapsDimensions ? info.width : info.height)
            let scale = options.jpegScale(width: shownWidth, height: shownHeight)
            if scale < 8 {
                try codecCall(.jpeg) { ccic_jpeg_set_scale(decoder, Int32(scale), &info, $0, $1) }
            }
            // libjpeg's own memory (a progressive file's coefficients, 2 bytes per sample of the whole image
            // whatever the scale) is held to 4 bytes per allowed pixel, as the output is.
            let (limit, overflow) = options.maximumPixelCount.multipliedReportingOverflow(by: 4)
            ccic_jpeg_set_memory_limit(decoder, overflow ? Int.max : max(limit, 16 << 20))
            let w = Int(info.output_width), h = Int(info.output_height), channels = Int(info.channels)
            guard w > 0, h > 0 else { throw NetworkError(.invalidImage, "JPEG decodes to \(w)x\(h)") }
            let stride = w * channels
            let pixels = try makePixels(count: stride * h) { (pointer) throws(NetworkError) in
                try codecCall(.jpeg) { ccic_jpeg_decode(decoder, pointer, stride, $0, $1) }
            }
            let image = CourierImage(unchecked: w, h, channels == 1 ? .gray8 : .rgb8, pixels, .jpeg)
            return image.oriented(orientation)
        }
    }
}
#endif
