import Courier
import CourierImages
import CourierTestServer
import Foundation
import Synchronization

/// Scenario 8: decoding and thumbnailing real-sized photos, CourierImages against Pillow's `thumbnail()`
/// (what a Python server making thumbnails of uploads would use), one image at a time on one thread each.
/// Scenario 9: what the decoded-image cache saves.
enum Images {
    /// Real-sized pictures written once per run: JPEGs of 12 megapixels (a phone photo) and PNGs of
    /// 3 megapixels (a screenshot), photo-like content (gradients, edges, a little texture).
    struct Corpus: Sendable {
        let directory: URL
        let files: [URL]
        let bytes: [Data]

        static func make(jpegs: Int, pngs: Int) throws -> Corpus {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-bench-images-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            var files: [URL] = []
            var bytes: [Data] = []
            for index in 0..<(jpegs + pngs) {
                let isJPEG = index < jpegs
                let image = try picture(width: isJPEG ? 4000 : 2000, height: isJPEG ? 3000 : 1500, seed: index)
                let data = try image.encoded(as: isJPEG ? .jpeg(quality: 85) : .png)
                let file = directory.appendingPathComponent("image-\(index).\(isJPEG ? "jpg" : "png")")
                try data.write(to: file)
                files.append(file)
                bytes.append(data)
            }
            return Corpus(directory: directory, files: files, bytes: bytes)
        }

        static func picture(width: Int, height: Int, seed: Int) throws(NetworkError) -> CourierImage {
            var pixels = [UInt8](repeating: 0, count: width * height * 3)
            pixels.withUnsafeMutableBufferPointer { buffer in
                var noise = UInt32(truncatingIfNeeded: 2_463_534_242 &+ seed)
                for y in 0..<height {
                    for x in 0..<width {
                        noise ^= noise << 13
                        noise ^= noise >> 17
                        noise ^= noise << 5
                        let i = (y * width + x) * 3
                        let edge = ((x / 200 + y / 150 + seed) % 3) * 40
                        buffer[i] = UInt8(truncatingIfNeeded: (x * 180 / width + edge) & 0xFF)
                        buffer[i + 1] = UInt8(truncatingIfNeeded: (y * 200 / height + Int(noise & 15)) & 0xFF)
                        buffer[i + 2] = UInt8(truncatingIfNeeded: (255 - x * 100 / width - edge / 2 + Int(noise >> 28)) & 0xFF)
                    }
                }
            }
            return try CourierImage(width: width, height: height, pixelFormat: .rgb8, pixels: pixels)
        }
    }

    static let pillowScript = """
        import sys, time
        from PIL import Image
        out, size, paths = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
        started = time.perf_counter()
        for path in paths:
            with Image.open(path) as image:
                image.thumbnail((size, size))
                image.load()
        open(out, "w").write(str(time.perf_counter() - started))
        """

    static func thumbnailScenario(corpus: @escaping @Sendable () throws -> Corpus, size: Int) -> Scenario {
        let python = which("python3")
        let pillow = python.flatMap { try? ChildRun.run($0, ["-c", "import PIL"]) }?.status == 0
        return Scenario(
            name: "Image thumbnails",
            details: "decode + thumbnail to \(size) px of 4 JPEGs of 4000x3000 (quality 85) and 4 PNGs of 2000x1500, one at a time on one thread, files in the page cache; Pillow's timing excludes Python's start",
            metrics: [
                Metric(name: "images/s", unit: "images decoded and thumbnailed per second", higherIsBetter: true),
                Metric(name: "JPEG ms", unit: "milliseconds per 12-megapixel JPEG", higherIsBetter: false),
                Metric(name: "PNG ms", unit: "milliseconds per 3-megapixel PNG", higherIsBetter: false),
            ],
            baseline: "Pillow thumbnail()",
            contenders: [
                Contender("Pillow thumbnail()", unavailable: pillow ? nil : "Pillow is not installed (python3 -m pip install pillow)") {
                    let corpus = try corpus()
                    func time(_ files: [URL]) throws -> Double {
                        let out = corpus.directory.appendingPathComponent("pillow-\(UUID().uuidString).txt")
                        let run = try ChildRun.run(python ?? "python3", ["-c", pillowScript, out.path, "\(size)"] + files.map(\.path))
                        guard run.status == 0, let text = try? String(contentsOf: out, encoding: .utf8), let seconds = Double(text) else {
                            throw BenchError("the Pillow script failed (status \(run.status))")
                        }
                        return seconds
                    }
                    let jpegs = corpus.files.filter { $0.pathExtension == "jpg" }, pngs = corpus.files.filter { $0.pathExtension == "png" }
                    let (jpeg, png) = (try time(jpegs), try time(pngs))
                    return ["images/s": Double(corpus.files.count) / (jpeg + png), "JPEG ms": jpeg * 1000 / Double(jpegs.count), "PNG ms": png * 1000 / Double(pngs.count)]
                },
                Contender("CourierImages") {
                    let corpus = try corpus()
                    var jpeg = 0.0, png = 0.0
                    for (file, data) in zip(corpus.files, corpus.bytes) {
                        let started = Machine.now
                        let image = try ImageDecoders.decode(data, options: ImageDecodingOptions(targetMaxPixelSize: size)).thumbnail(Thumbnail(maxPixelSize: size))
                        guard max(image.width, image.height) == size else { throw BenchError("thumbnail of \(image.width)x\(image.height)") }
                        if file.pathExtension == "jpg" { jpeg += Machine.now - started } else { png += Machine.now - started }
                    }
                    let half = Double(corpus.files.count / 2)
                    return ["images/s": Double(corpus.files.count) / (jpeg + png), "JPEG ms": jpeg * 1000 / half, "PNG ms": png * 1000 / half]
                },
            ])
    }

    static func cacheScenario(server: TestServer, corpus: @escaping @Sendable () throws -> Corpus, count: Int) -> Scenario {
        Scenario(
            name: "Decoded image cache",
            details: "engine.image(url:thumbnail: 256) of a 4000x3000 JPEG already fetched, \(count) times: a decoded-cache hit against decoding and thumbnailing the bytes again (what every request would cost without it)",
            metrics: [Metric(name: "latency us", unit: "microseconds per image", higherIsBetter: false)],
            baseline: "decode + thumbnail (no decoded cache)",
            contenders: [
                Contender("decode + thumbnail (no decoded cache)") {
                    let data = try corpus().bytes[0]
                    let rounds = max(1, count / 100)
                    let started = Machine.now
                    for _ in 0..<rounds {
                        _ = try ImageDecoders.decode(data, options: ImageDecodingOptions(targetMaxPixelSize: 256)).thumbnail(Thumbnail(maxPixelSize: 256))
                    }
                    return ["latency us": (Machine.now - started) * 1e6 / Double(rounds)]
                },
                Contender("decoded-cache hit (engine.image)") {
                    let data = try corpus().bytes[0]
                    server.serve([UInt8](data), at: "/bench/photo.jpg", contentType: "image/jpeg")
                    let engine = NetworkEngine(baseURL: server.baseURL, queue: NetworkQueue())
                    let pipeline = ImagePipeline()
                    let url = server.url("/bench/photo.jpg")
                    _ = try await engine.image(url: url, thumbnail: Thumbnail(maxPixelSize: 256), pipeline: pipeline)
                    let started = Machine.now
                    for _ in 0..<count { _ = try await engine.image(url: url, thumbnail: Thumbnail(maxPixelSize: 256), pipeline: pipeline) }
                    return ["latency us": (Machine.now - started) * 1e6 / Double(count)]
                },
            ])
    }
}

/// A value made on first use, once, shared by the scenarios that need it.
final class Lazy<Value: Sendable>: Sendable {
    private let make: @Sendable () throws -> Value
    private let value = Mutex<Result<Value, any Error>?>(nil)

    init(_ make: @escaping @Sendable () throws -> Value) {
        self.make = make
    }

    @Sendable func get() throws -> Value {
        try value.withLock { value in
            if let value { return try value.get() }
            let made = Result { try make() }
            value = made
            return try made.get()
        }
    }

    /// The value if it was made (and made without error).
    func getIfMade() throws -> Value? {
        try value.withLock { try $0?.get() }
    }
}
