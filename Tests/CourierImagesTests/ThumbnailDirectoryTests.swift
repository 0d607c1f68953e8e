@testable import CourierImages
import CourierTestServer
import Foundation
import Testing

/// Tier 3: thumbnails kept on disk across pipelines (a restart), only for public images.
@Suite("Image pipeline thumbnail directory")
struct ThumbnailDirectoryTests {
    static func png(width: Int, height: Int) throws -> [UInt8] {
        let pixels = (0..<(width * height)).flatMap { i -> [UInt8] in [UInt8(i % width * 255 / width), UInt8(i / width * 255 / height), 128] }
        return [UInt8](try CourierImage(width: width, height: height, pixelFormat: .rgb8, pixels: pixels).encoded(as: .png))
    }

    func pipeline(_ directory: URL) -> ImagePipeline {
        ImagePipeline(configuration: .init { $0.thumbnailDirectory = directory })
    }

    func files(in directory: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).filter { $0.hasSuffix(".thumbnail") }
    }

    @Test func aPublicThumbnailSurvivesARestartAndIsServedWithoutARequest() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-thumbs-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        server.serve(try Self.png(width: 300, height: 200), at: "/pub.png", contentType: "image/png", headers: [("Cache-Control", "public, max-age=60")])
        let engine = NetworkEngine(baseURL: server.baseURL)
        let first = pipeline(directory)
        let made = try await engine.image(url: server.url("/pub.png"), thumbnail: Thumbnail(maxPixelSize: 60), pipeline: first)
        #expect(made.width == 60 && made.height == 40)
        await first.disk?.synchronize()
        #expect(files(in: directory).count == 1)
        // A new pipeline on the same directory (the next launch): no request.
        let second = pipeline(directory)
        let again = try await NetworkEngine(baseURL: server.baseURL).image(url: server.url("/pub.png"), thumbnail: Thumbnail(maxPixelSize: 60), pipeline: second)
        #expect(again.width == 60 && again.height == 40)
        #expect(server.requestCount(path: "/pub.png") == 1)
        // A damaged file is fetched again and replaced.
        let file = directory.appendingPathComponent(files(in: directory)[0])
        try Data("garbage".utf8).write(to: file)
        let third = pipeline(directory)
        _ = try await engine.image(url: server.url("/pub.png"), thumbnail: Thumbnail(maxPixelSize: 60), pipeline: third)
        #expect(server.requestCount(path: "/pub.png") == 2)
        await third.disk?.synchronize()
        #expect(try Data(contentsOf: file).starts(with: [0xFF, 0xD8]), "rewritten as a JPEG (no alpha)")
        await third.removeAllThumbnails()
        #expect(files(in: directory).isEmpty)
    }

    @Test func privateImagesAndImagesFetchedWithCredentialsNeverReachTheDisk() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-thumbs-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let png = try Self.png(width: 120, height: 80)
        server.serve(png, at: "/private.png", contentType: "image/png", headers: [("Cache-Control", "private, max-age=60")])
        server.serve(png, at: "/mine.png", contentType: "image/png")
        let pipeline = pipeline(directory)
        _ = try await NetworkEngine(baseURL: server.baseURL).image(url: server.url("/private.png"), thumbnail: Thumbnail(maxPixelSize: 30), pipeline: pipeline)
        let signedIn = NetworkEngine(baseURL: server.baseURL, headers: ["Authorization": "Bearer alice"])
        _ = try await signedIn.image(url: server.url("/mine.png"), thumbnail: Thumbnail(maxPixelSize: 30), pipeline: pipeline)
        let inURL = server.url("/mine.png").replacingOccurrences(of: "http://", with: "http://bob:pw@")
        _ = try await NetworkEngine(baseURL: server.baseURL).image(url: inURL, thumbnail: Thumbnail(maxPixelSize: 31), pipeline: pipeline)
        await pipeline.disk?.synchronize()
        #expect(files(in: directory).isEmpty)
    }
}
