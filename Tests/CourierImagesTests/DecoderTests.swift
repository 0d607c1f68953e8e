import Foundation
import Testing
@testable import CourierImages

@Suite("Decoders against Pillow")
struct DecoderTests {
    @Test("Lossless formats decode exactly as Pillow does", arguments: [
        "rgb.png", "rgba.png", "gray.png", "palette-trns.png", "lossless.webp", "transparent.gif", "animated.gif", "one.png",
    ])
    func lossless(name: String) throws {
        let result = try Fixtures.compare(name)
        #expect(result.max == 0, "\(name): max \(result.max), mean \(result.mean)")
    }

    @Test("Pixel formats follow the file")
    func pixelFormats() throws {
        #expect(try ImageDecoders.decode(Fixtures.data("rgb.png")).pixelFormat == .rgb8)
        #expect(try ImageDecoders.decode(Fixtures.data("rgba.png")).pixelFormat == .rgba8)
        #expect(try ImageDecoders.decode(Fixtures.data("gray.png")).pixelFormat == .gray8)
        #expect(try ImageDecoders.decode(Fixtures.data("palette-trns.png")).pixelFormat == .rgba8)
        #expect(try ImageDecoders.decode(Fixtures.data("photo.jpg")).pixelFormat == .rgb8)
        #expect(try ImageDecoders.decode(Fixtures.data("gray.jpg")).pixelFormat == .gray8)
        #expect(try ImageDecoders.decode(Fixtures.data("lossless.webp")).pixelFormat == .rgb8)
        #expect(try ImageDecoders.decode(Fixtures.data("lossy-alpha.webp")).pixelFormat == .rgba8)
        #expect(try ImageDecoders.decode(Fixtures.data("transparent.gif")).pixelFormat == .rgba8)
        #expect(try ImageDecoders.decode(Fixtures.data("rgb.png")).sourceFormat == .png)
    }

    @Test("A 16-bit PNG is reduced to 8 bits (rounded)")
    func sixteenBit() throws {
        let result = try Fixtures.compare("rgb16.png")
        #expect(result.max <= 1, "max \(result.max)")
    }

    @Test("JPEGs are close to Pillow's decode", arguments: [
        "photo.jpg", "progressive.jpg", "gray.jpg", "one.jpg",
    ])
    func jpeg(name: String) throws {
        let result = try Fixtures.compare(name)
        #expect(result.max <= 8 && result.mean <= 1, "\(name): max \(result.max), mean \(result.mean)")
    }

    @Test("A CMYK JPEG decodes to RGB close to Pillow's")
    func cmyk() throws {
        let result = try Fixtures.compare("cmyk.jpg")
        #expect(result.image.pixelFormat == .rgb8)
        #expect(result.mean <= 4, "max \(result.max), mean \(result.mean)")
    }

    @Test("Lossy WebP with alpha is close to Pillow's decode (same libwebp)")
    func lossyWebP() throws {
        let result = try Fixtures.compare("lossy-alpha.webp")
        #expect(result.max <= 8 && result.mean <= 1, "max \(result.max), mean \(result.mean)")
    }

    @Test("DCT-scaled JPEG decode: the smallest scale still >= the target, proportional")
    func dctScaling() throws {
        let jpeg = try Fixtures.pattern(800, 600).encoded(as: .jpeg(quality: 90))
        for (target, expected) in [(100, (100, 75)), (101, (200, 150)), (250, (300, 225)), (700, (700, 525)), (2000, (800, 600)), (1, (100, 75))] {
            let image = try ImageDecoders.decode(jpeg, options: ImageDecodingOptions(targetMaxPixelSize: target))
            #expect(image.width == expected.0 && image.height == expected.1, "target \(target): \(image.width)x\(image.height)")
            #expect(max(image.width, image.height) >= min(target, 800))
        }
        // Scaled pixels still look like the picture (a 1/8 decode vs an area-averaged full decode).
        let scaled = try ImageDecoders.decode(jpeg, options: ImageDecodingOptions(targetMaxPixelSize: 100))
        let full = try ImageDecoders.decode(jpeg).resized(width: 100, height: 75)
        let difference = zip(scaled.pixels, full.pixels).map { abs(Int($0) - Int($1)) }.reduce(0, +)
        #expect(Double(difference) / Double(full.pixels.count) < 6)
    }

    @Test("A 1x1 image decodes")
    func onePixel() throws {
        let png = try ImageDecoders.decode(Fixtures.data("one.png"))
        #expect(png.width == 1 && png.height == 1 && png.pixels == [12, 34, 56])
        let jpeg = try ImageDecoders.decode(Fixtures.data("one.jpg"))
        #expect(jpeg.width == 1 && jpeg.height == 1)
    }
}
