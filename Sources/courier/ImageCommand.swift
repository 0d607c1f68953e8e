import ArgumentParser
import Courier
import CourierImages
import Dispatch
import Foundation

/// `courier image URL|FILE [--thumbnail N | --size WxH [--fill]] [-o out.jpg]`: fetches (or reads), decodes
/// and thumbnails an image, prints what it found and how long each step took, and writes the result.
struct ImageCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "image",
        abstract: "Fetch or read an image, decode it, make a thumbnail, and print its size, format and timings.",
        discussion: """
            Formats are recognised by their bytes: PNG, JPEG (EXIF orientation applied), WebP and GIF (first frame). \
            The output format follows -o's extension: .png writes PNG, anything else JPEG. A corrupt or hostile \
            image (a decompression bomb declaring billions of pixels) is refused with a message, exit status 1.
            """)

    @Argument(help: "An absolute http(s) URL, or a local file.")
    var source: String

    @Option(help: ArgumentHelp("Scale down so the longer side is at most this many pixels (1 to 65535).", valueName: "pixels"),
            transform: { try OptionValue.integer($0, in: OptionValue.pixelSideRange) })
    var thumbnail: Int?

    @Option(help: ArgumentHelp("Scale down to fit a box, WIDTHxHEIGHT (with --fill, to fill it, cropped).", valueName: "WxH"),
            transform: { try OptionValue.pixelBox($0) })
    var size: OptionValue.PixelBox?

    @Flag(help: "With --size: fill the box, cropping what overflows, instead of fitting inside it.")
    var fill = false

    @Option(name: [.customShort("o"), .long], help: ArgumentHelp("Write the (scaled) image to this file: PNG for .png, JPEG otherwise.", valueName: "file"))
    var output: String?

    @Option(help: ArgumentHelp("JPEG quality for -o, 1-100 (default 85).", valueName: "q"), transform: { try OptionValue.integer($0, in: 1...100) })
    var quality = 85

    @Option(help: ArgumentHelp("Refuse images declaring more pixels than this (default 64 Mi, at most 1 Gi: 1073741824).", valueName: "n"),
            transform: { try OptionValue.integer($0, in: 1...(1 << 30)) })
    var maxPixels: Int?

    @Option(name: .customShort("H"), help: ArgumentHelp("A request header, 'Name: value'. Repeatable.", valueName: "header"))
    var headers: [String] = []

    @OptionGroup var pipeline: PipelineOptions

    func run() async throws {
        try await runImage()
    }

    nonisolated func runImage() async throws {
        let box = try thumbnailBox()
        let clock = ContinuousClock()
        let started = clock.now
        let data = try await fetch()
        let fetched = clock.now
        var options = ImageDecodingOptions(thumbnail: box)
        if let maxPixels { options.maximumPixelCount = maxPixels }
        let decodingOptions = options
        let pair = try await Self.failingWithStatus1 { () async throws(NetworkError) -> [CourierImage] in
            do throws(NetworkError) {
                return try await Self.onWorkQueue { () throws(NetworkError) -> [CourierImage] in
                    let image = try ImageDecoders.decode(data, options: decodingOptions)
                    return [image, box.map { image.thumbnail($0) } ?? image]
                }
            } catch {
                // What refusing a hostile image cost, for the record.
                if let peak = Self.peakMemoryBytes() { StandardStream.standardError.line("peak memory \(Self.size(peak))") }
                throw error
            }
        }
        let decoded = pair[0], scaled = pair[1]
        let processed = clock.now
        let out = StandardStream.standardOutput
        let format = ImageFormat(sniffing: data)?.name ?? "?"
        out.line("\(format) \(Self.size(data.count)), decoded \(decoded.width)x\(decoded.height) \(decoded.pixelFormat)")
        if box != nil { out.line("thumbnail \(scaled.width)x\(scaled.height)") }
        var timings = "\(source.contains("://") ? "fetch" : "read") \(Self.ms(fetched - started)), decode\(box == nil ? "" : " + thumbnail") \(Self.ms(processed - fetched))"
        if let output {
            let encoding: ImageEncoding = output.lowercased().hasSuffix(".png") ? .png : .jpeg(quality: quality)
            let encoded = try await Self.failingWithStatus1 { () async throws(NetworkError) -> Data in
                try await Self.onWorkQueue { () throws(NetworkError) -> Data in try scaled.encoded(as: encoding) }
            }
            try await Self.failingWithStatus1 { () async throws(NetworkError) in
                try await Self.onWorkQueue { () throws(NetworkError) in
                    do {
                        // A regular file is replaced whole (atomically); /dev/stdout, a pipe and the like are written.
                        let type = (try? FileManager.default.attributesOfItem(atPath: output))?[.type] as? FileAttributeType
                        let options: Data.WritingOptions = type == nil || type == .typeRegular ? .atomic : []
                        try encoded.write(to: URL(fileURLWithPath: output), options: options)
                    } catch {
                        throw NetworkError(.fileUnavailable, "cannot write \(output): \(error.localizedDescription)")
                    }
                }
            }
            timings += ", encode + write \(Self.ms(clock.now - processed)) (\(Self.size(encoded.count)) to \(output))"
        }
        out.line(timings + ", total \(Self.ms(clock.now - started))")
        if let peak = Self.peakMemoryBytes() { out.line("peak memory \(Self.size(peak))") }
    }

    /// The box the options ask for.
    private func thumbnailBox() throws(CLIFailure) -> Thumbnail? {
        if let thumbnail {
            guard size == nil else { throw CLIFailure.usage("give --thumbnail or --size, not both") }
            return Thumbnail(maxPixelSize: thumbnail)
        }
        guard let size else {
            if fill { throw CLIFailure.usage("--fill needs --size") }
            return nil
        }
        return Thumbnail(width: size.width, height: size.height, contentMode: fill ? .fill : .fit)
    }

    /// The encoded bytes: from the network through an engine (so auth, retries and cookies apply), or a file.
    private func fetch() async throws -> Data {
        guard source.contains("://") else {
            let path = source
            return try await Self.failingWithStatus1 { () async throws(NetworkError) -> Data in
                try await Self.onWorkQueue { () throws(NetworkError) -> Data in try Self.readImageFile(path) }
            }
        }
        let (interceptors, jar) = try pipeline.interceptors(for: source)
        let engine = NetworkEngine(baseURL: PipelineOptions.withoutUserInfo(source), configuration: .init {
            $0.interceptors = interceptors
            $0.cookieJar = jar
        }, queue: NetworkQueue())
        let operation = engine.operation(url: PipelineOptions.withoutUserInfo(source))
        for (name, value) in try RequestOptions.headerPairs(headers) { operation.setHeader(value, forName: name) }
        do {
            let response = try await engine.send(operation)
            await jar?.waitUntilPersisted()
            return response.body
        } catch {
            await jar?.waitUntilPersisted()
            throw CLIFailure(exitCode: 1, message: error.description)
        }
    }

    /// A local file's bytes: a regular file of at most the engine's in-memory body limit (so `/dev/zero`
    /// or a huge file is an error, not all the memory there is).
    static func readImageFile(_ path: String) throws(NetworkError) -> Data {
        let limit = NetworkEngine.Configuration().maximumResponseBodySize
        let type = (try? FileManager.default.attributesOfItem(atPath: path))?[.type] as? FileAttributeType
        guard type == nil || type == .typeRegular else { throw NetworkError(.fileUnavailable, "\(path) is not a regular file") }
        let data: Data?
        do {
            let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
            defer { try? handle.close() }
            data = try handle.read(upToCount: limit + 1)
        } catch {
            throw NetworkError(.fileUnavailable, "cannot read \(path): \(error.localizedDescription)")
        }
        guard let data, data.count <= limit else {
            throw NetworkError(data == nil ? .invalidImage : .bodyTooLarge, data == nil ? "\(path) is empty" : "\(path) is larger than \(limit) bytes")
        }
        return data
    }

    /// A library error ends the program with status 1 and its description.
    static func failingWithStatus1<T: Sendable>(_ body: () async throws(NetworkError) -> T) async throws(CLIFailure) -> T {
        do {
            return try await body()
        } catch {
            throw CLIFailure(exitCode: 1, message: error.description)
        }
    }

    /// Runs CPU work and file I/O on a thread of its own, not on Swift's cooperative pool.
    static func onWorkQueue<T: Sendable>(_ work: @escaping @Sendable () throws(NetworkError) -> T) async throws(NetworkError) -> T {
        let result: Result<T, NetworkError> = await withCheckedContinuation { continuation in
            DispatchQueue.global(qos: .userInitiated).async {
                continuation.resume(returning: Result { () throws(NetworkError) -> T in try work() })
            }
        }
        return try result.get()
    }

    static func ms(_ duration: Duration) -> String {
        String(format: "%.1f ms", Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15)
    }

    static func size(_ bytes: Int) -> String { ProgressBar.size(Int64(bytes)) }

    /// The process's peak resident memory (Linux: VmHWM; elsewhere: getrusage), for hostile-input checks.
    static func peakMemoryBytes() -> Int? {
        #if os(Linux)
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
            let kib = Int(line.split(separator: " ").dropFirst().first ?? "")
        else { return nil }
        return kib * 1024
        #else
        var usage = rusage()
        guard getrusage(RUSAGE_SELF, &usage) == 0 else { return nil }
        return Int(usage.ru_maxrss)
        #endif
    }
}
