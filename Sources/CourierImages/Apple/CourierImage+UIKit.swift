#if canImport(UIKit)
public import UIKit

extension CourierImage {
    /// The image as a `UIImage` (scale 1), or nil when Core Graphics refuses it.
    public var uiImage: UIImage? {
        cgImage.map { UIImage(cgImage: $0) }
    }
}
#endif
