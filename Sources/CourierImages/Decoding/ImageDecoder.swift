public import Foundation

/// Turns encoded bytes of one format into a ``CourierImage``.
///
/// The library's decoders (libpng, libjpeg-turbo, libwebp and giflib on Linux; ImageIO on Apple
/// platforms) are in ``ImageDecoders/standard``; add your own for another format.
public protocol ImageDecoder: Sendable {
    /// Whether `data` is in this decoder's format, judged from its first bytes.
    func canDecode(_ data: Data) -> Bool

    /// Decodes `data`.
    /// - Throws: `NetworkError` with `.imageTooLarge` when the declared size exceeds
    ///   `options.maximumPixelCount` (checked before any pixel memory is allocated), `.invalidImage` for
    ///   a corrupt or truncated image.
    func decode(_ data: Data, options: ImageDecodingOptions) throws(NetworkError) -> CourierImage
}

/// How to decode.
public struct ImageDecodingOptions: Sendable, Hashable {
    /// The most pixels (width x height, as the file declares them) an image may have; a larger one is
    /// refused before its pixels are allocated (a decompression bomb declares 60000x60000 in a few bytes).
    /// Default: 64 megapixels (256 MiB as RGBA).
    public var maximumPixelCount: Int
    /// The largest side the caller will use, when it wants a smaller image (a thumbnail): decoders that can
    /// decode at a reduced size cheaply (JPEG's DCT scaling) do, never below this size.
    public var targetMaxPixelSize: Int?
    /// Whether to apply the file's orientation (EXIF), so pixels come out as the picture should be shown.
    public var appliesOrientation: Bool
    /// The thumbnail the caller will make of the image, when it makes one: decoders that can decode at a
    /// reduced size cheaply do, never so small that the thumbnail would need upscaling. Better than
    /// ``targetMaxPixelSize`` for `.fill` and non-square boxes (a panorama filling a square needs its
    /// shorter side, not its longer one, at the box's size).
    public var thumbnail: Thumbnail?

    /// Creates options.
    public init(
        maximumPixelCount: Int = 64 * 1024 * 1024, targetMaxPixelSize: Int? = nil, appliesOrientation: Bool = true,
        thumbnail: Thumbnail? = nil
    ) {
        self.maximumPixelCount = maximumPixelCount
        self.targetMaxPixelSize = targetMaxPixelSize
        self.appliesOrientation = appliesOrientation
        self.thumbnail = thumbnail
    }
}
