import Foundation
import Testing
@testable import Courier

/// Upload sources that change while they are sent: the `Content-Length` is already promised, so the
/// upload must fail with a typed error and the server must never receive a complete body.
extension TransferAcceptanceTests {
    /// What happens to a file while it is being uploaded (throttled, so it happens mid-upload).
    enum UploadMishap: String, CaseIterable, Sendable, CustomTestStringConvertible {
        /// A `.file` body is truncated to less than what was already sent.
        case fileBodyShrinks
        /// The file part of a multipart form (between two fields) is truncated.
        case formFileShrinks
        /// A form's second file part is deleted while its first one is being sent.
        case formFileDisappears

        var testDescription: String { rawValue }
    }

    @Test(arguments: UploadMishap.allCases)
    func anUploadWhoseFileChangesFailsTypedAndTheServerNeverGetsAWholeBody(_ mishap: UploadMishap) async throws {
        let server = try await TransferOriginServer.start(content: GeneratedContent(size: 1))
        defer { Task { try? await server.shutdown() } }
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let engine = Self.engine(port: server.port)
        let first = folder.appendingPathComponent("first.bin"), second = folder.appendingPathComponent("second.bin")
        try await GeneratedContent(size: 4 << 20, seed: 1).write(to: first)
        try await GeneratedContent(size: 1 << 20, seed: 2).write(to: second)

        let body: RequestBody
        var form = MultipartForm()
        switch mishap {
        case .fileBodyShrinks:
            body = .file(first)
        case .formFileShrinks:
            form.addField("before", name: "title")
            form.addFile(first, name: "document")
            form.addField("after", name: "note")
            body = .multipart(form)
        case .formFileDisappears:
            form.addFile(first, name: "document")
            form.addFile(second, name: "attachment")
            body = .multipart(form)
        }
        let op = engine.operation(path: "/upload", method: .post, body: body)
        op.maximumBytesPerSecond = 2 << 20
        engine.enqueue(op)

        #expect(await eventually(timeout: .seconds(20)) { server.uploadedBytes >= 1 << 20 }, "the upload is under way")
        switch mishap {
        case .fileBodyShrinks, .formFileShrinks:
            let handle = try FileHandle(forWritingTo: first)
            try handle.truncate(atOffset: 512 * 1024)
            try handle.close()
        case .formFileDisappears:
            try FileManager.default.removeItem(at: second)
        }

        let error = await failure(of: op)
        #expect(error?.code == .fileUnavailable, "\(String(describing: error))")
        let changed = mishap == .formFileDisappears ? second : first
        let reason = mishap == .formFileDisappears ? "does not exist" : "shrank"
        #expect(error?.message.contains(changed.path) == true && error?.message.contains(reason) == true, "\(String(describing: error))")
        let uploads = server.uploads
        #expect(uploads.count == 1, "the upload started once and was not retried: \(uploads.count)")
        #expect(uploads.allSatisfy { !$0.isComplete }, "the server never saw the whole promised body")
        #expect(uploads.allSatisfy { $0.body.count < ($0.declaredLength ?? 0) })
    }

    @Test func aFileBodyRemovedMidUploadIsSentWholeFromTheOpenFile() async throws {
        let server = try await TransferOriginServer.start(content: GeneratedContent(size: 1))
        defer { Task { try? await server.shutdown() } }
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let engine = Self.engine(port: server.port)
        let file = folder.appendingPathComponent("upload.bin")
        let content = GeneratedContent(size: 4 << 20, seed: 3)
        try await content.write(to: file)
        let op = engine.operation(path: "/upload", method: .post, body: .file(file))
        op.maximumBytesPerSecond = 4 << 20
        engine.enqueue(op)
        #expect(await eventually(timeout: .seconds(20)) { server.uploadedBytes >= 1 << 20 })
        try FileManager.default.removeItem(at: file)
        // The file is open while it is sent: on POSIX systems its bytes stay readable, whole and unchanged,
        // so a success is right as long as every byte is the original one.
        let response = try await op.response()
        #expect(response.statusCode == 200)
        let upload = try #require(server.uploads.first)
        #expect(upload.isComplete && upload.body == content.bytes(count: content.size))
    }
}
