import CourierImages
import CourierTestServer
import Foundation
import Testing

/// `courier image`, run as a user would: over HTTP and from files, thumbnails written, hostile inputs
/// refused with a typed error in bounded memory.
extension CLITests {
    static func photoJPEG(width: Int, height: Int) throws -> Data {
        let pixels = (0..<(width * height)).flatMap { i -> [UInt8] in [UInt8(i % width % 256), UInt8(i / width % 256), 90] }
        return try CourierImage(width: width, height: height, pixelFormat: .rgb8, pixels: pixels).encoded(as: .jpeg(quality: 90))
    }

    @Test func imageFetchesDecodesThumbnailsAndWritesTheResult() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-cli-image-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        server.serve([UInt8](try Self.photoJPEG(width: 800, height: 600)), at: "/p.jpg", contentType: "image/jpeg")
        let out = folder.appendingPathComponent("t.jpg")
        let run = try await courier("image", server.url("/p.jpg"), "--thumbnail", "100", "-o", out.path)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.hasPrefix("jpeg "), "\(run.stdout)")
        #expect(run.stdout.contains("thumbnail 100x75"))
        #expect(run.stdout.contains("fetch ") && run.stdout.contains("peak memory"))
        let written = try ImageDecoders.decode(try Data(contentsOf: out))
        #expect(written.width == 100 && written.height == 75 && written.sourceFormat == .jpeg)

        // A local file, filled into a box, written as PNG for a .png name.
        let input = folder.appendingPathComponent("in.jpg")
        try Self.photoJPEG(width: 300, height: 100).write(to: input)
        let card = folder.appendingPathComponent("card.png")
        let local = try await courier("image", input.path, "--size", "40x40", "--fill", "-o", card.path)
        #expect(local.status == 0, "\(local.stderr)")
        let filled = try ImageDecoders.decode(try Data(contentsOf: card))
        #expect(filled.width == 40 && filled.height == 40 && filled.sourceFormat == .png)

        // Usage errors and a 404.
        #expect(try await courier("image", input.path, "--thumbnail", "0").status == 2)
        #expect(try await courier("image", input.path, "--fill").status == 2)
        #expect(try await courier("image", input.path, "--thumbnail", "10", "--size", "5x5").status == 2)
        #expect(try await courier("image", server.url("/status/404")).status == 1)
        // Not a regular file (endless): refused at once, nothing read.
        let device = try await courier("image", "/dev/zero")
        #expect(device.status == 1 && device.stderr.contains("fileUnavailable: /dev/zero is not a regular file"), "\(device.stderr)")
        #expect(try await courier("image", folder.appendingPathComponent("missing.jpg").path).status == 1)
    }

    @Test func hostileImagesAreTypedErrorsInBoundedMemory() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-cli-hostile-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let jpeg = try Self.photoJPEG(width: 400, height: 300)
        // A PNG declaring 60000x60000 pixels (14.4 GB as RGBA) in 69 bytes, its chunks' CRCs correct.
        func chunk(_ type: String, _ data: [UInt8]) -> Data {
            let body = Data(type.utf8) + Data(data)
            let crc = body.reduce(UInt32(0xFFFF_FFFF)) { crc, byte in
                (0..<8).reduce(crc ^ UInt32(byte)) { c, _ in c & 1 == 1 ? (c >> 1) ^ 0xEDB8_8320 : c >> 1 }
            } ^ 0xFFFF_FFFF
            let length = UInt32(data.count)
            return Data([UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)]) + body
                + Data([UInt8(crc >> 24), UInt8(crc >> 16 & 0xFF), UInt8(crc >> 8 & 0xFF), UInt8(crc & 0xFF)])
        }
        let bomb = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) + chunk("IHDR", [0, 0, 0xEA, 0x60, 0, 0, 0xEA, 0x60, 8, 6, 0, 0, 0])
            + chunk("IDAT", [0x78, 0x9C, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01]) + chunk("IEND", [])
        let cases: [(name: String, bytes: Data, code: String)] = [
            ("bomb.png", bomb, "imageTooLarge"),
            ("cut.jpg", jpeg.prefix(jpeg.count / 2), "invalidImage"),
            ("page.png", Data("<html><body>Not found</body></html>".utf8), "unsupportedImageFormat"),
            ("noise.bin", Data((0..<4096).map { UInt8(($0 * 7919 + 13) % 251) }), "unsupportedImageFormat"),
        ]
        for (name, bytes, code) in cases {
            let file = folder.appendingPathComponent(name)
            try bytes.write(to: file)
            let run = try await courier("image", file.path, "--thumbnail", "64")
            #expect(run.status == 1, "\(name): \(run.stderr)")
            #expect(run.stderr.contains("courier: error: \(code)"), "\(name): \(run.stderr)")
            // The whole process's peak (the runtime, Foundation, the libraries) stays far below the
            // pixels a bomb declares: nothing was allocated for them.
            let peak = run.stderr.split(separator: "\n").first { $0.hasPrefix("peak memory ") }
            let mebibytes = peak.flatMap { Double($0.split(separator: " ")[2]) }
            #expect(mebibytes.map { $0 < 128 } == true, "\(name): \(peak ?? "no peak reported")")
        }
    }
}
