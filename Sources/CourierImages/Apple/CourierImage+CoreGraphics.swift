#if canImport(CoreGraphics)
public import CoreGraphics
import Foundation

extension CourierImage {
    /// The image as a `CGImage` (sRGB, or device gray for `.gray8`; straight alpha), or nil when Core
    /// Graphics refuses it.
    public var cgImage: CGImage? {
        let space: CGColorSpace? = pixelFormat == .gray8 ? CGColorSpaceCreateDeviceGray() : CGColorSpace(name: CGColorSpace.sRGB)
        let alpha: CGImageAlphaInfo = pixelFormat == .rgba8 ? .last : .none
        guard let space, let provider = CGDataProvider(data: Data(pixels) as CFData) else { return nil }
        return CGImage(
            width: width, height: height, bitsPerComponent: 8, bitsPerPixel: 8 * pixelFormat.bytesPerPixel,
            bytesPerRow: bytesPerRow, space: space, bitmapInfo: CGBitmapInfo(rawValue: alpha.rawValue),
            provider: provider, decode: nil, shouldInterpolate: true, intent: .defaultIntent
        )
    }

    /// Draws `cgImage` into sRGB pixels: `.gray8` for a gray image without alpha, `.rgb8` for an opaque one,
    /// `.rgba8` (un-premultiplied) otherwise.
    /// - Throws: `NetworkError` `.invalidImage` when Core Graphics cannot draw it.
    public init(cgImage: CGImage) throws(NetworkError) {
        let width = cgImage.width, height = cgImage.height
        guard width > 0, height > 0 else { throw NetworkError(.invalidImage, "CGImage of \(width)x\(height)") }
        let opaqueInfos: [CGImageAlphaInfo] = [.none, .noneSkipLast, .noneSkipFirst]
        let opaque = opaqueInfos.contains(cgImage.alphaInfo)
        let gray = opaque && cgImage.colorSpace?.model == .monochrome
        let bytesPerPixel = gray ? 1 : 4
        let space: CGColorSpace? = gray ? CGColorSpaceCreateDeviceGray() : CGColorSpace(name: CGColorSpace.sRGB)
        let info: CGImageAlphaInfo = gray ? .none : (opaque ? .noneSkipLast : .premultipliedLast)
        var drawn = false
        var pixels = [UInt8](repeating: 0, count: width * height * bytesPerPixel)
        pixels.withUnsafeMutableBytes { buffer in
            guard let space, let context = CGContext(
                data: buffer.baseAddress, width: width, height: height, bitsPerComponent: 8,
                bytesPerRow: width * bytesPerPixel, space: space, bitmapInfo: info.rawValue
            ) else { return }
            context.draw(cgImage, in: CGRect(x: 0, y: 0, width: width, height: height))
            drawn = true
        }
        guard drawn else { throw NetworkError(.invalidImage, "Core Graphics cannot draw this CGImage") }
        if gray {
            self.init(unchecked: width, height, .gray8, pixels, nil)
            return
        }
        if opaque {
            // The fourth byte is skipped, not necessarily written: copy the colour, never composite it.
            var rgb = [UInt8](repeating: 0, count: width * height * 3)
            for pixel in 0..<(width * height) {
                rgb[pixel * 3] = pixels[pixel * 4]
                rgb[pixel * 3 + 1] = pixels[pixel * 4 + 1]
                rgb[pixel * 3 + 2] = pixels[pixel * 4 + 2]
            }
            self.init(unchecked: width, height, .rgb8, rgb, nil)
            return
        }
        // Core Graphics draws premultiplied; CourierImage is straight alpha.
        for i in stride(from: 0, to: pixels.count, by: 4) {
            let a = Int(pixels[i + 3])
            guard a != 0, a != 255 else { continue }
            for c in 0..<3 { pixels[i + c] = UInt8(min(255, (Int(pixels[i + c]) * 255 + a / 2) / a)) }
        }
        self.init(unchecked: width, height, .rgba8, pixels, nil)
    }
}
#endif
