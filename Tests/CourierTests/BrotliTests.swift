import Foundation
import HTTPTypes
import NIOCore
import Testing
@testable import Courier

/// Tier 3: `Content-Encoding: br` bodies, compressed by the reference encoder (the `brotli` package from
/// PyPI, which `scripts/test` installs), decoded through every way a body is read, held to the bomb
/// limit, and refused when corrupt. Includes the brotli case of the Swift HTTP API workgroup's client
/// conformance suite (`testBrotli`: `GET /brotli` answers "TEST\n", `Content-Encoding: br`).
@Suite("Brotli bodies")
struct BrotliTests {
    /// `data` compressed by Python's `brotli.compress`, waited for off the cooperative pool.
    static func compress(_ data: Data, quality: Int = 5) async throws -> Data {
        try await offThePool {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", "-c", "import brotli,sys; sys.stdout.buffer.write(brotli.compress(sys.stdin.buffer.read(), quality=\(quality)))"]
            let input = Pipe(), output = Pipe()
            process.standardInput = input
            process.standardOutput = output
            try process.run()
            let writer = Thread { input.fileHandleForWriting.write(data); try? input.fileHandleForWriting.close() }
            writer.start()
            let compressed = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else { throw CocoaError(.fileReadUnknown) }
            return compressed
        }
    }

    /// `count` zero bytes compressed by Python's `brotli.compress`, made in the child (no megabytes
    /// through a pipe), waited for off the cooperative pool.
    static func compressedZeros(_ count: Int) async throws -> Data {
        try await offThePool {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", "-c", "import brotli,sys; sys.stdout.buffer.write(brotli.compress(bytes(\(count)), quality=9))"]
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            let compressed = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else { throw CocoaError(.fileReadUnknown) }
            return compressed
        }
    }

    /// A server answering every request with `body`, sent as `Content-Encoding: br` in pieces of `piece` bytes.
    private func server(_ body: Data, piece: Int = 1000, encoding: String = "br") async throws -> EventStreamServer {
        try await EventStreamServer.start { _, _ in
            var steps: [EventStreamServer.Step] = [.head(200, [("Content-Type", "text/plain"), ("Content-Encoding", encoding)])]
            var offset = 0
            while offset < body.count {
                steps.append(.sendBytes(Array(body[offset ..< min(offset + piece, body.count)])))
                offset += piece
            }
            return steps + [.end]
        }
    }

    private static let text = Data((0..<4000).map { "{\"line\":\($0),\"note\":\"brotli streams\"}\n" }.joined().utf8)

    @Test func conformanceBrotli() async throws {
        #expect(BrotliLibrary.isAvailable, "libbrotli1 is installed by scripts/test")
        let server = try await server(try await Self.compress(Data("TEST\n".utf8)))
        defer { Task { try? await server.shutdown() } }
        let engine = ServerSentEventsTests.engine(server)
        let response = try await engine.send(engine.operation(path: "/brotli"))
        #expect(response.statusCode == 200)
        #expect(response.headers[.contentEncoding] == "br")
        #expect(response.string == "TEST\n")
        #expect(server.requests.first?.header("Accept-Encoding") == "br, gzip, deflate", "offered, since it is decoded")
    }

    @Test func theDecoderTakesTheBodySplitAnywhere() async throws {
        let compressed = try await Self.compress(Self.text)
        let decoder = try #require(BrotliLibrary.shared.flatMap { BrotliDecoder(library: $0, maximumRatio: 1_000_000) })
        var decoded = Data()
        var largest = 0
        for byte in compressed {
            var input = ByteBuffer(bytes: [byte])
            try decoder.receive(1, url: "/split")
            repeat {
                let piece = try decoder.decode(&input, url: "/split")
                largest = max(largest, piece.readableBytes)
                decoded += Data(piece.readableBytesView)
            } while input.readableBytes > 0 || decoder.hasPendingOutput
        }
        try decoder.finish(url: "/split")
        #expect(decoded == Self.text)
        #expect(largest <= BrotliDecoder.outputChunk)
        // An empty body (a HEAD, a 304) is no error; one that stops short is.
        let empty = try #require(BrotliLibrary.shared.flatMap { BrotliDecoder(library: $0, maximumRatio: 100) })
        try empty.finish(url: "/empty")
        let short = try #require(BrotliLibrary.shared.flatMap { BrotliDecoder(library: $0, maximumRatio: 100) })
        var head = ByteBuffer(bytes: compressed.prefix(10))
        try short.receive(head.readableBytes, url: "/short")
        _ = try short.decode(&head, url: "/short")
        #expect(throws: NetworkError.self) { try short.finish(url: "/short") }
    }

    @Test func aBodyThatInflatesHugelyIsReadInPiecesNotWhole() async throws {
        // 16 MiB of zeros from a few dozen bytes, allowed by a lenient ratio: read as a stream, each
        // piece is at most one decoder step, and the process never holds the whole.
        let size = 16 << 20
        let compressed = try await Self.compressedZeros(size)
        let server = try await server(compressed, piece: compressed.count)
        defer { Task { try? await server.shutdown() } }
        let engine = ServerSentEventsTests.engine(server)
        let op = engine.operation(path: "/huge")
        op.decompression = .enabled(maximumRatio: 10_000_000)
        let stream = op.bodyStream
        engine.enqueue(op)
        var total = 0, largest = 0
        for try await chunk in stream {
            total += chunk.count
            largest = max(largest, chunk.count)
        }
        #expect(total == size)
        #expect(largest <= BrotliDecoder.outputChunk, "one part of a few hundred bytes came out in 16 KiB pieces")
    }

    @Test func aStreamedBodyAndADownloadAreDecodedAsTheyArrive() async throws {
        let compressed = try await Self.compress(Self.text)
        #expect(compressed.count * 10 < Self.text.count)
        let server = try await server(compressed, piece: 97)
        defer { Task { try? await server.shutdown() } }
        let engine = ServerSentEventsTests.engine(server)
        #expect(try await engine.send(engine.operation(path: "/a")).body == Self.text)
        let op = engine.operation(path: "/b")
        #expect(try await ServerSentEventsTests.readStream(of: op, on: engine) == String(decoding: Self.text, as: UTF8.self))
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("brotli-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        _ = try await engine.download(path: "/c", to: file)
        #expect(try Data(contentsOf: file) == Self.text)
        // Through the connection that reports interim responses as well.
        let interim = engine.operation(path: "/d").onInformationalResponse { _ in }
        #expect(try await engine.send(interim).body == Self.text)
        #expect(server.requests.map { $0.header("Accept-Encoding") } == ["br, gzip, deflate", "br, gzip, deflate", "identity", "br, gzip, deflate"],
                "a resumable download asks for the file's own bytes")
    }

    @Test func withDecompressionOffNothingIsOfferedOrDecoded() async throws {
        let compressed = try await Self.compress(Self.text)
        let server = try await server(compressed)
        defer { Task { try? await server.shutdown() } }
        let engine = ServerSentEventsTests.engine(server)
        let op = engine.operation(path: "/raw")
        op.decompression = .disabled
        #expect(try await engine.send(op).body == compressed)
        #expect(server.requests.first?.header("Accept-Encoding") == nil)
        // A caller's own Accept-Encoding is kept as it is.
        let own = engine.operation(path: "/own").setHeader("gzip", forName: "Accept-Encoding")
        _ = try? await engine.send(own)
        #expect(server.requests.last?.header("Accept-Encoding") == "gzip")
    }

    @Test func aBrotliBombIsStoppedByTheRatioLimit() async throws {
        // 8 MiB of zeros compress to a few dozen bytes: far beyond the default ratio of 100.
        let bomb = try await Self.compressedZeros(8 << 20)
        #expect(bomb.count < 64 * 1024)
        let server = try await server(bomb)
        defer { Task { try? await server.shutdown() } }
        let engine = ServerSentEventsTests.engine(server)
        let error = await #expect(throws: NetworkError.self) { try await engine.send(engine.operation(path: "/bomb")) }
        #expect(error?.code == .bodyTooLarge)
        // A ratio high enough lets the same body through, decoded whole.
        let lenient = engine.operation(path: "/bomb")
        lenient.decompression = .enabled(maximumRatio: 1_000_000)
        #expect(try await engine.send(lenient).body == Data(count: 8 << 20))
    }

    @Test func corruptTruncatedOrPaddedBodiesAreInvalidResponses() async throws {
        let compressed = try await Self.compress(Self.text)
        let cases: [(String, Data)] = [
            ("corrupt", Data((0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 7919) })),
            ("truncated", compressed.prefix(compressed.count / 2)),
            ("padded", compressed + Data("trailing".utf8)),
        ]
        for (name, body) in cases {
            let server = try await server(body)
            let engine = ServerSentEventsTests.engine(server)
            let error = await #expect(throws: NetworkError.self, "\(name)") { try await engine.send(engine.operation(path: "/\(name)")) }
            #expect(error?.code == .invalidResponse, "\(name)")
            try? await server.shutdown()
        }
    }
}
