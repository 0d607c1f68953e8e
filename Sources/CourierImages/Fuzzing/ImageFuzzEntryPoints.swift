import Courier
import Foundation

/// The image decoders as seen by the fuzz harness (`Sources/CourierFuzz`, run by `scripts/fuzz`): each
/// entry point feeds arbitrary bytes to the decoders and checks what must hold for every input. A
/// violated property traps, which libFuzzer reports as a crash with the input that caused it.
///
/// `package` access, like Courier's `FuzzEntryPoints`: the harness and the tests reach internal code
/// without `@testable import`; library users never see it.
package enum ImageFuzzEntryPoints {
    /// One fuzz target.
    package enum Target: String, CaseIterable, Sendable {
        /// Any bytes through the standard decoders (by signature), at most 1 megapixel, with a thumbnail
        /// hint; a decoded image's pixels match its size, its thumbnail fits the box, and a PNG of it
        /// decodes back to the same pixels.
        case imageDecode = "image-decode"
        /// A JPEG's EXIF payload (a TIFF header and its first IFD) read for the orientation.
        case exifOrientation = "exif-orientation"
    }

    /// Runs `target` on `bytes` and traps when a property does not hold.
    package static func run(_ target: Target, _ bytes: UnsafeRawBufferPointer) {
        switch target {
        case .imageDecode: decode(Data(bytes))
        case .exifOrientation: _ = ExifOrientation(tiff: bytes.assumingMemoryBound(to: UInt8.self))
        }
    }

    private static func decode(_ data: Data) {
        let options = ImageDecodingOptions(maximumPixelCount: 1 << 20, thumbnail: Thumbnail(maxPixelSize: 48))
        let image: CourierImage
        do throws(NetworkError) {
            image = try ImageDecoders.decode(data, options: options)
        } catch {
            let expected: Set<NetworkError.Code> = [.unsupportedImageFormat, .invalidImage, .imageTooLarge]
            precondition(expected.contains(error.code), "unexpected error \(error)")
            return
        }
        precondition(image.width > 0 && image.height > 0 && image.width * image.height <= 1 << 20, "\(image.width)x\(image.height)")
        precondition(image.pixels.count == image.width * image.height * image.pixelFormat.bytesPerPixel, "pixels do not match the size")
        let thumbnail = image.thumbnail(Thumbnail(maxPixelSize: 48))
        precondition(thumbnail.width >= 1 && thumbnail.height >= 1 && thumbnail.width <= 48 && thumbnail.height <= 48, "thumbnail \(thumbnail.width)x\(thumbnail.height)")
        do throws(NetworkError) {
            let png = try thumbnail.encoded(as: .png)
            let back = try ImageDecoders.decode(png)
            precondition(back.width == thumbnail.width && back.height == thumbnail.height, "PNG round trip changed the size")
            precondition(back.converted(to: thumbnail.pixelFormat).pixels == thumbnail.pixels, "PNG round trip changed the pixels")
        } catch {
            preconditionFailure("a decoded image does not survive PNG: \(error)")
        }
    }
}
