import Foundation
import NIOCore
import Testing
@testable import Courier

/// Tier 1–2: where request bodies come from (data, file, multipart form, one-shot stream).
@Suite("RequestBodySource")
struct RequestBodySourceTests {
    private typealias Support = TransferTestSupport

    @Test func dataIsReplayableWithItsLengthKnownAtOnce() async throws {
        var source = RequestBodySource.data(Data("hello".utf8))
        #expect(source.length == 5)
        #expect(source.isReplayable)
        try await source.prepare()
        #expect(try await Support.collect(any: source.makeStream()) == Array("hello".utf8))
        #expect(try await Support.collect(any: source.makeStream()) == Array("hello".utf8))
    }

    @Test func largeDataIsChunked() async throws {
        var source = RequestBodySource.data(Data(repeating: 9, count: 200_000))
        source.chunkSize = 64 * 1024
        var sizes: [Int] = []
        for try await chunk in source.makeStream() { sizes.append(chunk.readableBytes) }
        #expect(sizes == [65536, 65536, 65536, 200_000 - 3 * 65536])
    }

    @Test func aFileIsMeasuredWhenPreparedAndReadInChunks() async throws {
        try await Support.withTemporaryDirectory { folder in
            let file = folder.appendingPathComponent("body.bin")
            let content = (0..<150_000).map { UInt8(truncatingIfNeeded: $0) }
            try Data(content).write(to: file)
            var source = RequestBodySource.file(file)
            #expect(source.length == nil)
            #expect(source.isReplayable)
            try await source.prepare()
            #expect(source.length == 150_000)
            #expect(try await Support.collect(any: source.makeStream()) == content)
            #expect(try await Support.collect(any: source.makeStream()) == content)
        }
    }

    @Test func aFileThatChangedSizeAfterPrepareFails() async throws {
        try await Support.withTemporaryDirectory { folder in
            let file = folder.appendingPathComponent("body.bin")
            try Data(repeating: 1, count: 5000).write(to: file)
            var source = RequestBodySource.file(file)
            try await source.prepare()
            try Data(repeating: 1, count: 4000).write(to: file)
            let error = await #expect(throws: NetworkError.self) { _ = try await Support.collect(any: source.makeStream()) }
            #expect(error?.code == .fileUnavailable)
        }
    }

    @Test func aMissingFileFailsPrepare() async throws {
        var source = RequestBodySource.file(URL(fileURLWithPath: "/nonexistent/\(UUID().uuidString)"))
        let error = await #expect(throws: NetworkError.self) { try await source.prepare() }
        #expect(error?.code == .fileUnavailable)
    }

    @Test func aFormIsMeasuredWhenPreparedAndStreamsItsParts() async throws {
        try await Support.withTemporaryDirectory { folder in
            let file = folder.appendingPathComponent("notes.txt")
            try Data("some notes".utf8).write(to: file)
            var form = MultipartForm()
            form.addField("1", name: "id")
            form.addFile(file, name: "notes")
            var source = RequestBodySource.multipart(form)
            #expect(source.isReplayable)
            try await source.prepare()
            let bytes = try await Support.collect(any: source.makeStream())
            #expect(Int64(bytes.count) == source.length)
            let parts = try #require(Support.parseMultipart(bytes, boundary: form.boundary))
            #expect(parts.map(\.body) == [Array("1".utf8), Array("some notes".utf8)])
        }
    }

    @Test func aStreamOfBuffersIsSentOnceThenNotReplayable() async throws {
        let chunks = [ByteBuffer(string: "ab"), ByteBuffer(string: "cd")]
        let source = RequestBodySource.stream(AsyncStreamOfChunks(chunks: chunks), length: 4)
        #expect(!source.isReplayable)
        #expect(source.length == 4)
        #expect(try await Support.collect(any: source.makeStream()) == Array("abcd".utf8))
        let error = await #expect(throws: NetworkError.self) { _ = try await Support.collect(any: source.makeStream()) }
        #expect(error?.code == .bodyNotReplayable)
    }

    @Test func aStreamOfByteArraysWithUnknownLength() async throws {
        let (stream, continuation) = AsyncStream<[UInt8]>.makeStream()
        continuation.yield([1, 2])
        continuation.yield([3])
        continuation.finish()
        let source = RequestBodySource.stream(stream, length: nil)
        #expect(source.length == nil)
        #expect(try await Support.collect(any: source.makeStream()) == [1, 2, 3])
        let copy = source  // a copy shares the one-shot stream
        let error = await #expect(throws: NetworkError.self) { _ = try await Support.collect(any: copy.makeStream()) }
        #expect(error?.code == .bodyNotReplayable)
    }

    @Test func aFailingStreamPassesItsErrorOn() async throws {
        struct Boom: Error {}
        let stream = AsyncThrowingStream<ByteBuffer, any Error> { continuation in
            continuation.yield(ByteBuffer(string: "x"))
            continuation.finish(throwing: Boom())
        }
        let source = RequestBodySource.stream(stream, length: nil)
        await #expect(throws: Boom.self) { _ = try await Support.collect(any: source.makeStream()) }
    }
}

/// A replayable-looking sequence of fixed chunks (the one-shot rule is the source's, not the sequence's).
private struct AsyncStreamOfChunks: AsyncSequence, Sendable {
    let chunks: [ByteBuffer]
    func makeAsyncIterator() -> Iterator { Iterator(chunks: chunks[...]) }
    struct Iterator: AsyncIteratorProtocol {
        var chunks: ArraySlice<ByteBuffer>
        mutating func next() async -> ByteBuffer? { chunks.popFirst() }
    }
}
