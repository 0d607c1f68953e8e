import Courier
import CourierImages
import CourierTestServer
import Foundation
import Synchronization

extension Demo {
    /// Scene 13: images. Twenty views ask for the same thumbnail of a 12-megapixel photo at once: one
    /// request, one decode (downscaled by the JPEG decoder itself), then a memory-cache hit in
    /// microseconds. A photo cut short and an HTML page served as an image are typed errors.
    nonisolated func images(_ server: TestServer) async throws {
        say("13. Images: one request and one decode for twenty views, then the memory cache")
        let encoded: Result<Data, NetworkError> = Result { () throws(NetworkError) -> Data in
            try Self.photo(width: 4000, height: 3000).encoded(as: .jpeg(quality: 85))
        }
        if case .failure(let error) = encoded, error.code == .imageCodecUnavailable {
            // A machine without libjpeg-turbo's library: the codecs are loaded at run time, and the
            // demo goes on without this scene.
            say("   skipped: \(error.message)\n")
            return
        }
        let photo = try encoded.get()
        server.serve([UInt8](photo), at: "/photos/beach.jpg", contentType: "image/jpeg", delay: .milliseconds(100))
        server.serve([UInt8](photo.prefix(photo.count / 2)), at: "/photos/cut.jpg", contentType: "image/jpeg")
        server.serve(Array("<html><body>404</body></html>".utf8), at: "/photos/page.png", contentType: "image/png")
        let engine = NetworkEngine(host: "127.0.0.1", port: server.port, isSecure: false, queue: NetworkQueue())
        let counter = CountingDecoder()
        let pipeline = ImagePipeline(configuration: .init { $0.decoders = [counter] })
        let url = server.url("/photos/beach.jpg")
        let thumbnail = Thumbnail(maxPixelSize: 256)
        server.resetStatistics()
        let started = ContinuousClock.now
        let views = try await withThrowingTaskGroup(of: CourierImage.self) { group in
            for _ in 0..<20 { group.addTask { try await engine.image(url: url, thumbnail: thumbnail, pipeline: pipeline) } }
            return try await group.reduce(into: [CourierImage]()) { $0.append($1) }
        }
        let first = ContinuousClock.now - started
        let hitStarted = ContinuousClock.now
        let again = try await engine.image(url: url, thumbnail: thumbnail, pipeline: pipeline)
        let hit = ContinuousClock.now - hitStarted
        say("   20 views, a 4000x3000 JPEG (\(photo.count / 1024) KiB): \(server.requestCount(path: "/photos/beach.jpg")) request, "
            + "\(counter.decodes.load(ordering: .relaxed)) decode, \(Set(views).count) thumbnail of \(again.width)x\(again.height), "
            + "in \(first.formatted(.units(allowed: [.milliseconds])))")
        say("   asked again: a memory-cache hit in \(hit.formatted(.units(allowed: [.microseconds]))), no request")
        for (path, what) in [("/photos/cut.jpg", "the photo cut in half"), ("/photos/page.png", "an HTML page served as image/png")] {
            do throws(NetworkError) {
                _ = try await engine.image(url: server.url(path), pipeline: pipeline)
                say("   \(what): decoded?!")
            } catch {
                say("   \(what): \(error.code)")
            }
        }
        say("")
    }

    /// The standard decoders, counting their decodes (a custom decoder list is how an app adds a format).
    final class CountingDecoder: ImageDecoder {
        let decodes = Atomic<Int>(0)
        func canDecode(_ data: Data) -> Bool { ImageDecoders.standard.contains { $0.canDecode(data) } }
        func decode(_ data: Data, options: ImageDecodingOptions) throws(NetworkError) -> CourierImage {
            decodes.add(1, ordering: .relaxed)
            return try ImageDecoders.decode(data, options: options)
        }
    }

    /// A photo-like picture: smooth gradients and a few hard edges (what JPEG is made for).
    static func photo(width: Int, height: Int) throws(NetworkError) -> CourierImage {
        var pixels = [UInt8](repeating: 0, count: width * height * 3)
        pixels.withUnsafeMutableBufferPointer { buffer in
            for y in 0..<height {
                for x in 0..<width {
                    let i = (y * width + x) * 3
                    let sky = y < height / 2
                    buffer[i] = UInt8(truncatingIfNeeded: sky ? 60 + y * 100 / height : 200 - x * 60 / width)
                    buffer[i + 1] = UInt8(truncatingIfNeeded: sky ? 120 + y * 80 / height : 170 - y * 40 / height)
                    buffer[i + 2] = UInt8(truncatingIfNeeded: sky ? 230 - x * 30 / width : 90 + (x ^ y) % 32)
                }
            }
        }
        return try CourierImage(width: width, height: height, pixelFormat: .rgb8, pixels: pixels)
    }
}
