import Foundation

/// A decoded image: its size, how its pixels are laid out, and the pixels themselves.
///
/// Pixels are 8 bits per channel, rows top to bottom with no padding (`width * pixelFormat.bytesPerPixel`
/// bytes per row), alpha straight (not premultiplied). Decoders apply the file's orientation (EXIF) so
/// that the first row is the top of the picture as it should be shown.
public struct CourierImage: Sendable, Hashable {
    /// How one pixel is stored.
    public struct PixelFormat: Sendable, Hashable, CustomStringConvertible {
        /// Bytes per pixel (and channels: one byte each).
        public let bytesPerPixel: Int
        private let name: String
        private init(_ name: String, _ bytesPerPixel: Int) {
            self.name = name
            self.bytesPerPixel = bytesPerPixel
        }

        /// Red, green, blue and alpha (straight, not premultiplied).
        public static let rgba8 = PixelFormat("rgba8", 4)
        /// Red, green and blue, opaque.
        public static let rgb8 = PixelFormat("rgb8", 3)
        /// One gray channel, opaque.
        public static let gray8 = PixelFormat("gray8", 1)

        /// Whether pixels carry an alpha channel.
        public var hasAlpha: Bool { self == .rgba8 }
        /// The format's name (`rgba8`, `rgb8`, `gray8`).
        public var description: String { name }
    }

    /// Width in pixels.
    public let width: Int
    /// Height in pixels.
    public let height: Int
    /// How each pixel is stored.
    public let pixelFormat: PixelFormat
    /// The pixels, rows top to bottom, `bytesPerRow` bytes each.
    public let pixels: [UInt8]
    /// The encoded format the image was decoded from, when it was decoded.
    public var sourceFormat: ImageFormat?

    /// Creates an image from pixels laid out as ``pixelFormat`` says.
    /// - Throws: `NetworkError` `.invalidImage` when `pixels` does not hold exactly
    ///   `width * height * pixelFormat.bytesPerPixel` bytes or a dimension is not positive.
    public init(width: Int, height: Int, pixelFormat: PixelFormat, pixels: [UInt8], sourceFormat: ImageFormat? = nil) throws(NetworkError) {
        let (rowBytes, overflow1) = width.multipliedReportingOverflow(by: pixelFormat.bytesPerPixel)
        let (total, overflow2) = rowBytes.multipliedReportingOverflow(by: height)
        guard width > 0, height > 0, !overflow1, !overflow2, total == pixels.count else {
            throw NetworkError(.invalidImage, "\(width)x\(height) \(pixelFormat) needs \(overflow2 ? "too many" : "\(total)") bytes, got \(pixels.count)")
        }
        self.init(unchecked: width, height, pixelFormat, pixels, sourceFormat)
    }

    /// For decoders and processors that computed the layout themselves.
    init(unchecked width: Int, _ height: Int, _ pixelFormat: PixelFormat, _ pixels: [UInt8], _ sourceFormat: ImageFormat?) {
        self.width = width
        self.height = height
        self.pixelFormat = pixelFormat
        self.pixels = pixels
        self.sourceFormat = sourceFormat
    }

    /// Bytes per row of ``pixels``.
    public var bytesPerRow: Int { width * pixelFormat.bytesPerPixel }

    /// The memory its pixels take, in bytes (what the decoded-image cache counts).
    public var byteCount: Int { pixels.count }
}
