@testable import CourierImages
import CourierTestServer
import Foundation
import Synchronization
import Testing

/// Tier 3, the acceptance: images served by the test server, fetched through an engine and the
/// pipeline with the real decoders, match Pillow's decode; a hundred callers make one request and one
/// decode; hostile images served as images are typed errors.
@Suite("Images end to end")
struct ImageAcceptanceTests {
    /// The standard decoders, counting their decodes.
    final class Counting: ImageDecoder {
        let decodes = Atomic<Int>(0)
        func canDecode(_ data: Data) -> Bool { ImageDecoders.standard.contains { $0.canDecode(data) } }
        func decode(_ data: Data, options: ImageDecodingOptions) throws(NetworkError) -> CourierImage {
            decodes.add(1, ordering: .relaxed)
            return try ImageDecoders.decode(data, options: options)
        }
    }

    /// The largest and mean channel difference from Pillow's decode of `name` (transparent in both: equal).
    static func distance(_ image: CourierImage, from name: String) throws -> (max: Int, mean: Double) {
        let reference = try Fixtures.reference(name)
        #expect(image.width == reference.width && image.height == reference.height, "\(name): \(image.width)x\(image.height)")
        let rgba = image.converted(to: .rgba8).pixels
        guard rgba.count == reference.rgba.count else { return (255, 255) }
        var maximum = 0, total = 0
        for pixel in stride(from: 0, to: rgba.count, by: 4) where !(rgba[pixel + 3] == 0 && reference.rgba[pixel + 3] == 0) {
            for c in 0..<4 {
                let difference = abs(Int(rgba[pixel + c]) - Int(reference.rgba[pixel + c]))
                maximum = max(maximum, difference)
                total += difference
            }
        }
        return (maximum, Double(total) / Double(rgba.count))
    }

    static let served: [(name: String, type: String, lossy: Bool)] = [
        ("rgb.png", "image/png", false), ("rgba.png", "image/png", false), ("exif-6.jpg", "image/jpeg", true),
        ("progressive.jpg", "image/jpeg", true), ("lossless.webp", "image/webp", false), ("lossy-alpha.webp", "image/webp", true),
        ("transparent.gif", "image/gif", false), ("animated.gif", "image/gif", false),
    ]

    @Test func everyFormatServedOverHTTPDecodesAsPillowDoesAndThumbnailsKeepTheAspect() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let engine = NetworkEngine(baseURL: server.baseURL)
        let pipeline = ImagePipeline()
        for (name, type, lossy) in Self.served {
            server.serve([UInt8](try Fixtures.data(name)), at: "/img/\(name)", contentType: type)
            let image = try await engine.image(url: server.url("/img/\(name)"), pipeline: pipeline)
            let (maximum, mean) = try Self.distance(image, from: name)
            if lossy {
                #expect(maximum <= 16 && mean <= 2, "\(name): max \(maximum), mean \(mean)")
            } else {
                #expect(maximum == 0, "\(name): max \(maximum)")
            }
            let reference = try Fixtures.reference(name)
            let thumbnail = try await engine.image(url: server.url("/img/\(name)"), thumbnail: Thumbnail(maxPixelSize: 16), pipeline: pipeline)
            #expect(max(thumbnail.width, thumbnail.height) == min(16, max(reference.width, reference.height)), "\(name)")
            let aspect = Double(reference.width) / Double(reference.height)
            #expect(abs(Double(thumbnail.width) / Double(thumbnail.height) - aspect) <= 1.0 / Double(min(thumbnail.width, thumbnail.height)) + 0.01, "\(name)")
        }
        // Without an HTTP cache, the thumbnail (another entry of the memory cache) fetched the bytes again.
        #expect(server.requestCount == Self.served.count * 2)
    }

    @Test func aHundredCallersForARealPhotoMakeOneRequestAndOneDecodeThenAHitWithoutTheQueue() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        server.serve([UInt8](try Fixtures.data("exif-6.jpg")), at: "/photo.jpg", contentType: "image/jpeg", delay: .milliseconds(300))
        let counting = Counting()
        let pipeline = ImagePipeline(configuration: .init { $0.decoders = [counting] })
        let enqueues = ImagePipelineTests.Enqueues()
        let engine = NetworkEngine(baseURL: server.baseURL, configuration: .init { $0.eventMonitors = [enqueues] })
        let url = server.url("/photo.jpg")
        let thumbnails = try await withThrowingTaskGroup(of: CourierImage.self) { group in
            for _ in 0..<100 { group.addTask { try await engine.image(url: url, thumbnail: Thumbnail(maxPixelSize: 20), pipeline: pipeline) } }
            return try await group.reduce(into: [CourierImage]()) { $0.append($1) }
        }
        #expect(Set(thumbnails).count == 1)
        #expect(server.requestCount(path: "/photo.jpg") == 1)
        #expect(counting.decodes.load(ordering: .relaxed) == 1)
        let reference = try Fixtures.reference("exif-6.jpg")
        #expect((thumbnails[0].width < thumbnails[0].height) == (reference.width < reference.height), "EXIF orientation 6 applied")
        #expect(enqueues.count.load(ordering: .relaxed) == 1)
        let again = try await engine.image(url: url, thumbnail: Thumbnail(maxPixelSize: 20), pipeline: pipeline)
        #expect(again == thumbnails[0])
        #expect(enqueues.count.load(ordering: .relaxed) == 1, "the memory cache answered: no operation was enqueued")
        #expect(server.requestCount(path: "/photo.jpg") == 1 && counting.decodes.load(ordering: .relaxed) == 1)
    }

    @Test func hostileImagesServedAsImagesAreTypedErrors() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let engine = NetworkEngine(baseURL: server.baseURL)
        let pipeline = ImagePipeline()
        let cases: [(String, NetworkError.Code)] = [
            ("truncated.jpg", .invalidImage), ("badcrc.png", .invalidImage), ("huge.png", .imageTooLarge), ("huge.jpg", .imageTooLarge),
            ("huge.webp", .imageTooLarge), ("huge.gif", .imageTooLarge), ("random.bin", .unsupportedImageFormat),
            ("page.html", .unsupportedImageFormat),
        ]
        for (name, code) in cases {
            server.serve([UInt8](try Fixtures.data(name)), at: "/bad/\(name)", contentType: "image/png")
            let error = await #expect(throws: NetworkError.self) { try await engine.image(url: server.url("/bad/\(name)"), pipeline: pipeline) }
            #expect(error?.code == code, "\(name)")
        }
        #expect(pipeline.memoryCacheUsage.count == 0)
    }
}
