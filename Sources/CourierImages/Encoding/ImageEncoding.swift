/// An encoded format to write an image in, for ``CourierImage/encoded(as:)``.
public struct ImageEncoding: Sendable, Hashable, CustomStringConvertible {
    enum Kind: Hashable {
        case jpeg(quality: Int)
        case png
    }

    let kind: Kind

    /// JPEG at `quality` (1 to 100, clamped; 85 by default). JPEG has no alpha: an RGBA image is composited
    /// on white.
    public static func jpeg(quality: Int = 85) -> ImageEncoding {
        ImageEncoding(kind: .jpeg(quality: min(100, max(1, quality))))
    }

    /// PNG, lossless, in the image's own pixel format (gray, RGB or RGBA, 8 bits).
    public static let png = ImageEncoding(kind: .png)

    /// The format written.
    public var format: ImageFormat {
        switch kind {
        case .jpeg: .jpeg
        case .png: .png
        }
    }

    /// For instance `jpeg(quality: 85)` or `png`.
    public var description: String {
        switch kind {
        case .jpeg(let quality): "jpeg(quality: \(quality))"
        case .png: "png"
        }
    }
}
