/// A size to scale an image down to, keeping its aspect ratio: what ``CourierImage/thumbnail(_:)``
/// makes and what the image pipeline caches a result under.
public struct Thumbnail: Sendable, Hashable, CustomStringConvertible {
    /// How an image fits a box of another aspect ratio.
    public enum ContentMode: String, Sendable, Hashable {
        /// The whole image inside the box (one side shorter than the box's).
        case fit
        /// The box filled, the overflow cropped around the centre.
        case fill
    }

    /// The box's width in pixels.
    public let width: Int
    /// The box's height in pixels.
    public let height: Int
    /// How the image goes in the box.
    public let contentMode: ContentMode

    /// A thumbnail whose longer side is at most `maxPixelSize` (a `maxPixelSize` square, `.fit`).
    public init(maxPixelSize: Int) {
        self.init(width: maxPixelSize, height: maxPixelSize, contentMode: .fit)
    }

    /// A thumbnail that fits or fills a `width` x `height` box.
    public init(width: Int, height: Int, contentMode: ContentMode = .fit) {
        self.width = max(1, width)
        self.height = max(1, height)
        self.contentMode = contentMode
    }

    /// For instance `256x256 fit`.
    public var description: String { "\(width)x\(height) \(contentMode.rawValue)" }

    /// The scale `thumbnail` applies to an image of `width` x `height` (at most 1: never upscaled).
    func scale(width: Int, height: Int) -> Double {
        let horizontal = Double(self.width) / Double(max(1, width)), vertical = Double(self.height) / Double(max(1, height))
        return min(1, contentMode == .fit ? min(horizontal, vertical) : max(horizontal, vertical))
    }
}
