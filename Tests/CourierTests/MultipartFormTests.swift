import Foundation
import NIOCore
import Testing
@testable import Courier

/// Tier 1–2: multipart/form-data encoding (RFC 7578), streamed from memory and disk.
@Suite("MultipartForm")
struct MultipartFormTests {
    private typealias Support = TransferTestSupport

    @Test func aFixedBoundaryFormEncodesToTheExpectedBytes() async throws {
        var form = MultipartForm(boundary: "XyZ")
        form.addField("hello", name: "greeting")
        form.addData(Data([0, 1, 2]), name: "blob", filename: "b.bin")
        let expected = "--XyZ\r\nContent-Disposition: form-data; name=\"greeting\"\r\n\r\nhello\r\n"
            + "--XyZ\r\nContent-Disposition: form-data; name=\"blob\"; filename=\"b.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n"
        var bytes = Array(expected.utf8) + [0, 1, 2]
        bytes += Array("\r\n--XyZ--\r\n".utf8)
        #expect(form.contentType == "multipart/form-data; boundary=XyZ")
        #expect(try await Support.collect(form.bodyStream()).bytes == bytes)
        #expect(try await form.contentLength() == Int64(bytes.count))
    }

    @Test func fieldsDataAndAFileParseBackAndTheLengthIsExact() async throws {
        try await Support.withTemporaryDirectory { folder in
            let file = folder.appendingPathComponent("photo.JPG")
            let content = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            try Data(content).write(to: file)
            var form = MultipartForm()
            form.addField("Holiday ☀️", name: "album")
            form.addFile(file, name: "photo")
            form.addData(Data("{\"a\":1}".utf8), name: "meta", filename: "meta.json")
            form.addData(Data(repeating: 7, count: 10_000), name: "raw", contentType: "application/x-raw")
            let length = try await form.contentLength()
            let (bytes, chunks) = try await Support.collect(form.bodyStream(chunkSize: 8192))
            #expect(Int64(bytes.count) == length)
            #expect(chunks.allSatisfy { $0 <= 8192 && $0 > 0 })
            #expect(form.boundary.hasPrefix("courier-") && form.boundary.count == 40)
            let parts = try #require(Support.parseMultipart(bytes, boundary: form.boundary))
            #expect(parts.count == 4)
            #expect(parts[0].headers["content-disposition"] == "form-data; name=\"album\"")
            #expect(parts[0].headers["content-type"] == nil)
            #expect(String(decoding: parts[0].body, as: UTF8.self) == "Holiday ☀️")
            #expect(parts[1].headers["content-disposition"] == "form-data; name=\"photo\"; filename=\"photo.JPG\"")
            #expect(parts[1].headers["content-type"] == "image/jpeg")
            #expect(parts[1].body == content)
            #expect(parts[2].headers["content-type"] == "application/json")
            #expect(String(decoding: parts[2].body, as: UTF8.self) == "{\"a\":1}")
            #expect(parts[3].headers["content-disposition"] == "form-data; name=\"raw\"")
            #expect(parts[3].headers["content-type"] == "application/x-raw")
            #expect(parts[3].body == Array(repeating: 7, count: 10_000))
        }
    }

    @Test func theStreamCanBeReadAgain() async throws {
        try await Support.withTemporaryDirectory { folder in
            let file = folder.appendingPathComponent("a.txt")
            try Data("abc".utf8).write(to: file)
            var form = MultipartForm()
            form.addFile(file, name: "f")
            _ = try await form.contentLength()
            let stream = form.bodyStream()
            let first = try await Support.collect(stream).bytes
            let second = try await Support.collect(stream).bytes
            #expect(first == second)
            #expect(Support.parseMultipart(first, boundary: form.boundary)?.first?.headers["content-type"] == "text/plain")
        }
    }

    @Test func namesAndFileNamesAreQuotedAndEscapedAsBrowsersDo() async throws {
        var form = MultipartForm(boundary: "b")
        form.addData(Data("x".utf8), name: "a\"b\r\nc", filename: "q\"u\no\rte ü.txt")
        let text = String(decoding: try await Support.collect(form.bodyStream()).bytes, as: UTF8.self)
        #expect(text.contains("name=\"a%22b%0D%0Ac\"; filename=\"q%22u%0Ao%0Dte ü.txt\""))
        #expect(text.contains("Content-Type: text/plain\r\n"))
    }

    @Test func theBoundaryIsDrawnAgainWhenTheContentHoldsIt() async throws {
        var form = MultipartForm(boundary: "collide")
        form.addField("before --collide after", name: "f")
        #expect(form.boundary != "collide")
        #expect(form.boundary.hasPrefix("courier-"))
        let bytes = try await Support.collect(form.bodyStream()).bytes
        let parts = try #require(Support.parseMultipart(bytes, boundary: form.boundary))
        #expect(String(decoding: parts[0].body, as: UTF8.self) == "before --collide after")

        var random = MultipartForm()
        let original = random.boundary
        random.addField("x--\(original)y", name: "g")
        #expect(random.boundary != original)
    }

    @Test func aQuotedBoundaryWhenItIsNotAToken() {
        #expect(MultipartForm(boundary: "a b:c").contentType == "multipart/form-data; boundary=\"a b:c\"")
        #expect(MultipartForm.isValidBoundary(String(repeating: "a", count: 70)))
        #expect(!MultipartForm.isValidBoundary(String(repeating: "a", count: 71)))
        #expect(!MultipartForm.isValidBoundary("ends with space "))
        #expect(!MultipartForm.isValidBoundary("semi;colon"))
    }

    @Test func contentTypesAreGuessedFromExtensions() {
        #expect(MIMEType.forFileName("a.png") == "image/png")
        #expect(MIMEType.forFileName("A.PDF") == "application/pdf")
        #expect(MIMEType.forFileName("archive.tar.gz") == "application/gzip")
        #expect(MIMEType.forFileName("noextension") == "application/octet-stream")
        #expect(MIMEType.forFileName(".hidden") == "application/octet-stream")
        #expect(MIMEType.forFileName("x.unknownext") == "application/octet-stream")
        #expect(MIMEType.table.count >= 40)
    }

    @Test func aMissingFileFailsTheLength() async throws {
        var form = MultipartForm()
        form.addFile(URL(fileURLWithPath: "/nonexistent/courier-\(UUID().uuidString).bin"), name: "f")
        await #expect(throws: NetworkError.self) { _ = try await form.contentLength() }
        do {
            _ = try await form.contentLength()
        } catch {
            #expect(error.code == .fileUnavailable)
            #expect(error.message.contains("does not exist"))
        }
    }

    @Test func aFolderIsNotAFile() async throws {
        try await Support.withTemporaryDirectory { folder in
            var form = MultipartForm()
            form.addFile(folder, name: "f")
            let error = await #expect(throws: NetworkError.self) { _ = try await form.contentLength() }
            #expect(error?.code == .fileUnavailable)
        }
    }

    @Test func aFileRemovedAfterTheLengthFailsTheStream() async throws {
        try await Support.withTemporaryDirectory { folder in
            let file = folder.appendingPathComponent("gone.bin")
            try Data(repeating: 1, count: 1000).write(to: file)
            var form = MultipartForm()
            form.addField("v", name: "first")
            form.addFile(file, name: "f")
            _ = try await form.contentLength()
            try FileManager.default.removeItem(at: file)
            let error = await #expect(throws: NetworkError.self) { _ = try await Support.collect(form.bodyStream()) }
            #expect(error?.code == .fileUnavailable)
            #expect(error?.message.contains(file.path) == true)
        }
    }

    /// A path swapped for a FIFO after the form was measured fails at once: opening a FIFO for reading
    /// would wait for a writer forever, holding a thread of the pool (and, for a freeze, a transaction).
    @Test(.timeLimit(.minutes(1))) func aFileSwappedForAFIFOAfterTheLengthFailsTheStreamAtOnce() async throws {
        try await Support.withTemporaryDirectory { folder in
            let file = folder.appendingPathComponent("swapped.bin")
            try Data(repeating: 1, count: 1000).write(to: file)
            var form = MultipartForm()
            form.addFile(file, name: "f")
            _ = try await form.contentLength()
            let fifo = folder.appendingPathComponent("fifo").path
            #expect(mkfifo(fifo, 0o600) == 0)
            #expect(rename(fifo, file.path) == 0)
            let started = ContinuousClock.now
            let error = await #expect(throws: NetworkError.self) { _ = try await Support.collect(form.bodyStream()) }
            #expect(error?.code == .fileUnavailable)
            #expect(error?.message.contains("not a regular file") == true, "\(String(describing: error))")
            #expect(ContinuousClock.now - started < .seconds(10))
            // The pool's threads are free: a regular file still streams.
            let other = folder.appendingPathComponent("other.bin")
            try Data(repeating: 3, count: 100_000).write(to: other)
            let body = try await Support.collect(any: RequestBodySource.file(other).makeStream())
            #expect(body.count == 100_000)
        }
    }

    @Test func aSymbolicLinkToAFileIsReadThroughAsWhenItWasMeasured() async throws {
        try await Support.withTemporaryDirectory { folder in
            let file = folder.appendingPathComponent("target.bin")
            try Data(repeating: 7, count: 70_000).write(to: file)
            let link = folder.appendingPathComponent("link.bin")
            try FileManager.default.createSymbolicLink(at: link, withDestinationURL: file)
            var form = MultipartForm(boundary: "b")
            form.addFile(link, name: "f")
            let length = try await form.contentLength()
            let body = try await Support.collect(form.bodyStream()).bytes
            #expect(Int64(body.count) == length)
            #expect(body.filter { $0 == 7 }.count == 70_000)
        }
    }

    @Test func aFileTruncatedWhileStreamingFailsTheStream() async throws {
        try await Support.withTemporaryDirectory { folder in
            let file = folder.appendingPathComponent("shrinks.bin")
            try Data(repeating: 2, count: 1 << 20).write(to: file)
            var form = MultipartForm()
            form.addFile(file, name: "f")
            _ = try await form.contentLength()
            var iterator = form.bodyStream(chunkSize: 64 * 1024).makeAsyncIterator()
            _ = try await iterator.next()  // the part's headers
            _ = try await iterator.next()  // the first 64 KiB of the file
            let handle = try FileHandle(forWritingTo: file)
            try handle.truncate(atOffset: 100_000)
            try handle.close()
            let error = await #expect(throws: NetworkError.self) {
                while try await iterator.next() != nil {}
            }
            #expect(error?.code == .fileUnavailable)
            #expect(error?.message.contains("shrank") == true)
            #expect(try await iterator.next() == nil)
        }
    }

    @Test func aFileThatGrewSendsTheBytesMeasured() async throws {
        try await Support.withTemporaryDirectory { folder in
            let file = folder.appendingPathComponent("grows.bin")
            try Data(repeating: 3, count: 1000).write(to: file)
            var form = MultipartForm()
            form.addFile(file, name: "f")
            let measured = try await form.contentLength()
            let handle = try FileHandle(forWritingTo: file)
            try handle.seekToEnd()
            try handle.write(contentsOf: Data([4]))
            try handle.close()
            // The declared length is what is sent (issue 23 B10): growth after measuring is not an error.
            let sent = try await Support.collect(form.bodyStream()).bytes
            #expect(Int64(sent.count) == measured, "the measured length, not the grown file")
            #expect(!sent.contains(4))
        }
    }

    @Test func aStreamAbandonedHalfWayClosesItsFile() async throws {
        try await Support.withTemporaryDirectory { folder in
            let file = folder.appendingPathComponent("half.bin")
            try Data(repeating: 5, count: 300_000).write(to: file)
            var form = MultipartForm()
            form.addFile(file, name: "f")
            do {
                var iterator = form.bodyStream(chunkSize: 1024).makeAsyncIterator()
                _ = try await iterator.next()
                _ = try await iterator.next()
            }
            // NIOFileSystem traps on a handle dropped open; reaching here without a trap is the test.
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    @Test func memoryPerChunkDoesNotGrowWithTheFile() async throws {
        try await Support.withTemporaryDirectory { folder in
            let file = folder.appendingPathComponent("sparse.bin")
            _ = FileManager.default.createFile(atPath: file.path, contents: nil)
            let handle = try FileHandle(forWritingTo: file)
            try handle.truncate(atOffset: 64 << 20)  // 64 MiB, sparse: no disk used
            try handle.close()
            var form = MultipartForm()
            form.addField("x", name: "a")
            form.addFile(file, name: "big")
            let chunkSize = 64 * 1024
            let length = try await form.contentLength()
            var total: Int64 = 0
            var largest = 0
            for try await chunk in form.bodyStream(chunkSize: chunkSize) {
                total += Int64(chunk.readableBytes)
                largest = max(largest, chunk.readableBytes, chunk.capacity)
            }
            #expect(total == length)
            #expect(length > 64 << 20)
            #expect(largest <= chunkSize + 512)
        }
    }
}
