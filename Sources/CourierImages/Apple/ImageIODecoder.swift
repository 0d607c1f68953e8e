#if !canImport(CCourierImageCodecs) && canImport(ImageIO)
import CoreGraphics
import Foundation
import ImageIO

/// PNG, JPEG, WebP and GIF (first frame) through ImageIO. The orientation is applied by ImageIO
/// (`kCGImageSourceCreateThumbnailWithTransform`); with ``ImageDecodingOptions/targetMaxPixelSize`` or
/// ``ImageDecodingOptions/thumbnail`` ImageIO decodes straight to the size needed (its thumbnail path, which
/// uses JPEG's DCT scaling).
struct ImageIODecoder: ImageDecoder {
    func canDecode(_ data: Data) -> Bool { ImageFormat(sniffing: data) != nil }

    func decode(_ data: Data, options: ImageDecodingOptions) throws(NetworkError) -> CourierImage {
        guard let format = ImageFormat(sniffing: data) else {
            throw NetworkError(.unsupportedImageFormat, "not an image format Courier decodes")
        }
        let sourceOptions = [kCGImageSourceShouldCache: false] as CFDictionary
        guard let source = CGImageSourceCreateWithData(data as CFData, sourceOptions), CGImageSourceGetCount(source) > 0,
            let properties = CGImageSourceCopyPropertiesAtIndex(source, 0, sourceOptions) as? [CFString: Any],
            let width = (properties[kCGImagePropertyPixelWidth] as? NSNumber)?.intValue,
            let height = (properties[kCGImagePropertyPixelHeight] as? NSNumber)?.intValue
        else {
            throw NetworkError(.invalidImage, "invalid \(format)")
        }
        try options.checkDeclaredSize(width: width, height: height, format: format)
        let orientation = (properties[kCGImagePropertyOrientation] as? NSNumber)?.intValue ?? 1
        let shown = options.appliesOrientation && orientation >= 5 ? (height, width) : (width, height)
        let longer = max(width, height)
        let size = Int((Double(longer) * options.neededScale(width: shown.0, height: shown.1)).rounded(.up))
        let thumbnailOptions: [CFString: Any] = [
            kCGImageSourceCreateThumbnailFromImageAlways: true,
            kCGImageSourceCreateThumbnailWithTransform: options.appliesOrientation,
            kCGImageSourceThumbnailMaxPixelSize: min(longer, max(1, size)),
            kCGImageSourceShouldCacheImmediately: true,
        ]
        guard let cgImage = CGImageSourceCreateThumbnailAtIndex(source, 0, thumbnailOptions as CFDictionary) else {
            throw NetworkError(.invalidImage, "ImageIO cannot decode this \(format)")
        }
        // A truncated file decodes partially (gray) in ImageIO; the status, known once it has decoded, says so.
        guard CGImageSourceGetStatusAtIndex(source, 0) == .statusComplete else {
            throw NetworkError(.invalidImage, "truncated or corrupt \(format)")
        }
        var image = try CourierImage(cgImage: cgImage)
        image.sourceFormat = format
        return image
    }
}
#endif
