#if canImport(AppKit) && !targetEnvironment(macCatalyst)
public import AppKit

extension CourierImage {
    /// The image as an `NSImage` (one point per pixel), or nil when Core Graphics refuses it.
    public var nsImage: NSImage? {
        cgImage.map { NSImage(cgImage: $0, size: NSSize(width: width, height: height)) }
    }
}
#endif
