import Foundation
import Testing
@testable import CourierImages

@Suite("Decoders against Pillow")
struct DecoderTests {
    @Test("Lossless formats decode exactly as Pillow does", arguments: [
        "rgb.png", "rgba.png", "gray.png", "gray-alpha.png", "palette-trns.png", "lossless.webp", "transparent.gif", "animated.gif", "one.png",
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

    @Test("16-bit PNGs are reduced to 8 bits (rounded), alpha straight", arguments: ["rgb16.png", "rgba16.png"])
    func sixteenBit(name: String) throws {
        let result = try Fixtures.compare(name)
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

    @Test("DCT scaling for a thumbnail: never so small that the thumbnail needs upscaling")
    func dctScalingForThumbnail() throws {
        let jpeg = try Fixtures.pattern(800, 200).encoded(as: .jpeg(quality: 90))
        func size(_ options: ImageDecodingOptions) throws -> [Int] {
            let image = try ImageDecoders.decode(jpeg, options: options)
            return [image.width, image.height]
        }
        #expect(try size(ImageDecodingOptions(targetMaxPixelSize: 100)) == [100, 25])
        #expect(try size(ImageDecodingOptions(thumbnail: Thumbnail(maxPixelSize: 100))) == [100, 25])
        #expect(try size(ImageDecodingOptions(thumbnail: Thumbnail(width: 100, height: 100, contentMode: .fill))) == [400, 100])
        #expect(try size(ImageDecodingOptions(thumbnail: Thumbnail(width: 800, height: 10, contentMode: .fill))) == [800, 200])
        let filled = try ImageDecoders.decode(jpeg, options: ImageDecodingOptions(thumbnail: Thumbnail(width: 100, height: 100, contentMode: .fill)))
            .thumbnail(Thumbnail(width: 100, height: 100, contentMode: .fill))
        #expect(filled.width == 100 && filled.height == 100)
        // Judged on the picture as shown: exif-6.jpg is stored 64x48, shown 48x64.
        let rotated = try ImageDecoders.decode(Fixtures.data("exif-6.jpg"), options: ImageDecodingOptions(thumbnail: Thumbnail(width: 24, height: 8)))
        #expect(rotated.width == 6 && rotated.height == 8)
    }

    @Test("Decoders run concurrently")
    func concurrent() async throws {
        let names = ["rgb.png", "photo.jpg", "lossy-alpha.webp", "transparent.gif", "exif-8.jpg", "progressive.jpg"]
        let expected = try names.map { try ImageDecoders.decode(Fixtures.data($0)) }
        let data = try names.map { try Fixtures.data($0) }
        try await withThrowingTaskGroup(of: (Int, CourierImage).self) { group in
            for round in 0..<4 {
                for index in names.indices {
                    group.addTask { _ = round; return (index, try ImageDecoders.decode(data[index])) }
                }
            }
            for try await (index, image) in group { #expect(image == expected[index]) }
        }
    }

    @Test("A 1x1 image decodes")
    func onePixel() throws {
        let png = try ImageDecoders.decode(Fixtures.data("one.png"))
        #expect(png.width == 1 && png.height == 1 && png.pixels == [12, 34, 56])
        let jpeg = try ImageDecoders.decode(Fixtures.data("one.jpg"))
        #expect(jpeg.width == 1 && jpeg.height == 1)
    }
}
