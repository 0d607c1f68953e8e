#if !canImport(CCourierImageCodecs) && canImport(ImageIO)
import CoreGraphics
import Foundation
import ImageIO

extension CourierImage {
    /// ``encoded(as:)`` on Apple platforms: ImageIO's JPEG and PNG encoders.
    func encodedWithImageIO(as encoding: ImageEncoding) throws(NetworkError) -> Data {
        // JPEG has no alpha: composited on white, as on Linux.
        let image = encoding.format == .jpeg && pixelFormat == .rgba8 ? converted(to: .rgb8) : self
        let type = (encoding.format == .jpeg ? "public.jpeg" : "public.png") as CFString
        let output = NSMutableData()
        guard let cgImage = image.cgImage, let destination = CGImageDestinationCreateWithData(output as CFMutableData, type, 1, nil) else {
            throw NetworkError(.imageEncodingFailed, "\(encoding): ImageIO refused the image")
        }
        var properties: [CFString: Any] = [:]
        if case .jpeg(let quality) = encoding.kind {
            properties[kCGImageDestinationLossyCompressionQuality] = Double(quality) / 100
        }
        CGImageDestinationAddImage(destination, cgImage, properties as CFDictionary)
        guard CGImageDestinationFinalize(destination) else {
            throw NetworkError(.imageEncodingFailed, "\(encoding): ImageIO could not write the image")
        }
        return output as Data
    }
}
#endif
