import Foundation
import Testing
@testable import CourierImages

/// The fixtures scripts/make-image-fixtures writes, and comparisons against Pillow's decodes of them.
enum Fixtures {
    static let directory = Bundle.module.url(forResource: "Fixtures", withExtension: nil)!

    static func data(_ name: String) throws -> Data {
        try Data(contentsOf: directory.appendingPathComponent(name))
    }

    /// Pillow's decode of `name` (orientation applied) as RGBA, with its size.
    static func reference(_ name: String) throws -> (width: Int, height: Int, rgba: [UInt8]) {
        let size = try String(contentsOf: directory.appendingPathComponent(name + ".size"), encoding: .utf8)
        let parts = size.split(separator: "x").compactMap { Int($0) }
        let rgba = try [UInt8](Data(contentsOf: directory.appendingPathComponent(name + ".rgba")))
        return (parts[0], parts[1], rgba)
    }

    /// Decodes `name` and measures how far it is from Pillow's decode: the largest and the mean absolute
    /// channel difference (pixels transparent in both count as equal whatever their colour).
    static func compare(_ name: String, options: ImageDecodingOptions = ImageDecodingOptions()) throws -> (image: CourierImage, max: Int, mean: Double) {
        let image = try ImageDecoders.decode(data(name), options: options)
        let reference = try reference(name)
        #expect(image.width == reference.width && image.height == reference.height, "\(name): \(image.width)x\(image.height)")
        let rgba = image.converted(to: .rgba8).pixels
        guard rgba.count == reference.rgba.count else { return (image, 255, 255) }
        var maximum = 0, total = 0
        for pixel in stride(from: 0, to: rgba.count, by: 4) {
            if rgba[pixel + 3] == 0 && reference.rgba[pixel + 3] == 0 { continue }
            for c in 0..<4 {
                let difference = abs(Int(rgba[pixel + c]) - Int(reference.rgba[pixel + c]))
                maximum = max(maximum, difference)
                total += difference
            }
        }
        return (image, maximum, Double(total) / Double(rgba.count))
    }

    /// An image whose every pixel is `pixel`.
    static func solid(_ width: Int, _ height: Int, _ pixel: [UInt8]) -> CourierImage {
        let format: CourierImage.PixelFormat = pixel.count == 4 ? .rgba8 : pixel.count == 3 ? .rgb8 : .gray8
        var pixels = [UInt8]()
        pixels.reserveCapacity(width * height * pixel.count)
        for _ in 0..<width * height { pixels += pixel }
        return try! CourierImage(width: width, height: height, pixelFormat: format, pixels: pixels)
    }

    /// A deterministic picture (gradients and a pattern) of any size.
    static func pattern(_ width: Int, _ height: Int) -> CourierImage {
        var pixels = [UInt8]()
        pixels.reserveCapacity(width * height * 3)
        for y in 0..<height {
            for x in 0..<width {
                pixels += [UInt8(x * 255 / max(1, width - 1)), UInt8(y * 255 / max(1, height - 1)), UInt8((x / 16 + y / 16) % 2 * 200)]
            }
        }
        return try! CourierImage(width: width, height: height, pixelFormat: .rgb8, pixels: pixels)
    }
}

/// The error code decoding `data` throws, or nil when it decodes.
func decodeError(_ data: Data, options: ImageDecodingOptions = ImageDecodingOptions()) -> NetworkError.Code? {
    do throws(NetworkError) {
        _ = try ImageDecoders.decode(data, options: options)
        return nil
    } catch {
        return error.code
    }
}
