import Foundation
import Testing
@testable import CourierImages

@Suite("Thumbnails and resizing")
struct ThumbnailTests {
    @Test("fit keeps the aspect ratio, the longer side the box's")
    func fit() {
        let image = Fixtures.pattern(400, 300)
        let small = image.thumbnail(Thumbnail(maxPixelSize: 100))
        #expect(small.width == 100 && small.height == 75)
        let box = image.thumbnail(Thumbnail(width: 200, height: 50))
        #expect(box.width == 67 && box.height == 50)
        let tall = Fixtures.pattern(300, 400).thumbnail(Thumbnail(maxPixelSize: 256))
        #expect(tall.width == 192 && tall.height == 256)
    }

    @Test("fill covers the box exactly and crops the centre")
    func fill() throws {
        let image = Fixtures.pattern(400, 300)
        let filled = image.thumbnail(Thumbnail(width: 100, height: 100, contentMode: .fill))
        #expect(filled.width == 100 && filled.height == 100)
        // Thirds: red, green, blue; a square fill keeps the green middle only.
        var pixels = [UInt8]()
        for _ in 0..<100 {
            for x in 0..<300 { pixels += x < 100 ? [255, 0, 0] : x < 200 ? [0, 255, 0] : [0, 0, 255] }
        }
        let thirds = try CourierImage(width: 300, height: 100, pixelFormat: .rgb8, pixels: pixels)
        let centre = thirds.thumbnail(Thumbnail(width: 50, height: 50, contentMode: .fill))
        #expect(centre.width == 50 && centre.height == 50)
        #expect(centre.pixels == Fixtures.solid(50, 50, [0, 255, 0]).pixels)
    }

    @Test("Never upscales")
    func noUpscale() {
        let image = Fixtures.pattern(50, 40)
        #expect(image.thumbnail(Thumbnail(maxPixelSize: 256)) == image)
        let filled = Fixtures.pattern(100, 50).thumbnail(Thumbnail(width: 256, height: 256, contentMode: .fill))
        #expect(filled.width == 50 && filled.height == 50)
        let wide = Fixtures.pattern(100, 50).thumbnail(Thumbnail(width: 400, height: 100, contentMode: .fill))
        #expect(wide.width == 100 && wide.height == 25)
    }

    @Test("Extreme aspect ratios keep at least one pixel")
    func oddSizes() {
        let tall = Fixtures.pattern(3, 1000).thumbnail(Thumbnail(maxPixelSize: 256))
        #expect(tall.width == 1 && tall.height == 256)
        let wide = Fixtures.pattern(1000, 3).thumbnail(Thumbnail(maxPixelSize: 256))
        #expect(wide.width == 256 && wide.height == 1)
        let filled = Fixtures.pattern(3, 1000).thumbnail(Thumbnail(width: 64, height: 64, contentMode: .fill))
        #expect(filled.width == 3 && filled.height == 3)
        let odd = Fixtures.pattern(999, 7).thumbnail(Thumbnail(width: 13, height: 13, contentMode: .fill))
        #expect(odd.width == 7 && odd.height == 7)
    }

    @Test("A solid colour stays exactly that colour", arguments: [[200, 17, 99], [255, 255, 255], [77], [10, 200, 30, 128], [255, 0, 0, 255]] as [[UInt8]])
    func solid(pixel: [UInt8]) {
        let image = Fixtures.solid(997, 613, pixel)
        for thumbnail in [Thumbnail(maxPixelSize: 100), Thumbnail(width: 37, height: 91, contentMode: .fill), Thumbnail(maxPixelSize: 996)] {
            let small = image.thumbnail(thumbnail)
            #expect(small.pixels == Fixtures.solid(small.width, small.height, pixel).pixels, "\(thumbnail)")
        }
    }

    @Test("Area averaging: exact fractional coverage")
    func averaging() throws {
        let blackWhite = try CourierImage(width: 2, height: 1, pixelFormat: .rgb8, pixels: [0, 0, 0, 255, 255, 255])
        let grey = blackWhite.resized(width: 1, height: 1)
        #expect(grey.pixels.allSatisfy { $0 == 127 || $0 == 128 })
        let ramp = try CourierImage(width: 3, height: 1, pixelFormat: .gray8, pixels: [0, 90, 180])
        #expect(ramp.resized(width: 2, height: 1).pixels == [30, 150])
        let column = try CourierImage(width: 1, height: 3, pixelFormat: .gray8, pixels: [0, 90, 180])
        #expect(column.resized(width: 1, height: 2).pixels == [30, 150])
        // 4x4 -> 2x2: each output the mean of a 2x2 block.
        let blocks = try CourierImage(width: 4, height: 4, pixelFormat: .gray8, pixels: [0, 4, 100, 100, 8, 12, 100, 100, 50, 50, 1, 3, 50, 50, 5, 7])
        #expect(blocks.resized(width: 2, height: 2).pixels == [6, 100, 50, 4])
    }

    @Test("Matches exact area averaging (rational arithmetic) within rounding", arguments: [
        ("31x19", 31, 19), ("13x13", 13, 13), ("96x60", 96, 60),
    ])
    func pillowBox(name: String, width: Int, height: Int) throws {
        let noise = try ImageDecoders.decode(Fixtures.data("noise.png"))
        let expected = try [UInt8](Fixtures.data("noise.png.area-\(name).rgba"))
        let resized = noise.resized(width: width, height: height).converted(to: .rgba8)
        let largest = zip(resized.pixels, expected).map { abs(Int($0) - Int($1)) }.max() ?? 0
        #expect(resized.pixels.count == expected.count && largest <= 1, "largest difference \(largest)")
    }

    @Test("A .fill thumbnail is the exact area average of the centred crop")
    func pillowFill() throws {
        let noise = try ImageDecoders.decode(Fixtures.data("noise.png"))
        let expected = try [UInt8](Fixtures.data("noise.png.area-20x20-18,0,79,61.rgba"))
        let filled = noise.thumbnail(Thumbnail(width: 20, height: 20, contentMode: .fill)).converted(to: .rgba8)
        let largest = zip(filled.pixels, expected).map { abs(Int($0) - Int($1)) }.max() ?? 0
        #expect(filled.pixels.count == expected.count && largest <= 1, "largest difference \(largest)")
    }

    @Test("RGBA is averaged premultiplied: a transparent pixel's colour does not bleed")
    func premultiplied() throws {
        let image = try CourierImage(width: 2, height: 1, pixelFormat: .rgba8, pixels: [255, 0, 0, 255, 0, 255, 0, 0])
        let pixel = image.resized(width: 1, height: 1).pixels
        #expect(pixel[0] == 255 && pixel[1] == 0 && pixel[2] == 0 && (pixel[3] == 127 || pixel[3] == 128))
        let clear = Fixtures.solid(10, 10, [9, 9, 9, 0]).resized(width: 3, height: 3)
        #expect(clear.pixels.allSatisfy { $0 == 0 })
    }

    @Test("A decoded photo's thumbnail is close to the picture")
    func decodedThumbnail() throws {
        let image = try ImageDecoders.decode(Fixtures.data("rgb.png"))
        let small = image.thumbnail(Thumbnail(maxPixelSize: 32))
        #expect(small.width == 32 && small.height == 24 && small.pixelFormat == .rgb8 && small.sourceFormat == .png)
        // The red channel is an x gradient: it stays increasing along a row.
        let row = (0..<32).map { small.pixels[$0 * 3] }
        #expect(row == row.sorted())
    }

    @Test("Pixel format conversions")
    func conversions() throws {
        let rgba = try CourierImage(width: 2, height: 1, pixelFormat: .rgba8, pixels: [10, 20, 30, 255, 0, 0, 0, 0])
        #expect(rgba.converted(to: .rgb8).pixels == [10, 20, 30, 255, 255, 255])
        #expect(rgba.converted(to: .rgb8).converted(to: .rgba8).pixels == [10, 20, 30, 255, 255, 255, 255, 255])
        let gray = try CourierImage(width: 1, height: 1, pixelFormat: .gray8, pixels: [42])
        #expect(gray.converted(to: .rgba8).pixels == [42, 42, 42, 255])
        #expect(gray.converted(to: .rgb8).converted(to: .gray8).pixels == [42])
    }
}
