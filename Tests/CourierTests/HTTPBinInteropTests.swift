import Foundation
import Testing
@testable import Courier

/// Interop: Courier against httpbin (from PyPI), an HTTP server written by others.
///
/// `scripts/test` starts httpbin under gunicorn on a free 127.0.0.1 port and sets `HTTPBIN_URL`
/// (and `COURIER_REQUIRE_INTEROP=1`, which turns a missing server into a failure instead of a skip).
@Suite("Interop: httpbin", .enabled(if: HTTPBin.isAvailable, "HTTPBIN_URL is not set: run scripts/test to start httpbin"))
struct HTTPBinInteropTests {
    private func engine(_ configure: (inout NetworkEngine.Configuration) -> Void = { _ in }) throws -> NetworkEngine {
        var configuration = NetworkEngine.Configuration()
        configure(&configuration)
        return NetworkEngine(baseURL: try #require(HTTPBin.url), configuration: configuration, queue: NetworkQueue())
    }

    private func object(_ response: NetworkResponse) throws -> [String: Any] {
        try #require(try response.json() as? [String: Any])
    }

    @Test func queryAndHeadersAreEchoed() async throws {
        let engine = try engine()
        let op = engine.operation(path: "/get", params: ["q": "a b&c", "n": 1, "ok": true])
            .setHeader("interop", forName: "X-Courier-Test")
        let json = try object(try await engine.send(op))
        #expect(json["args"] as? [String: String] == ["n": "1", "ok": "1", "q": "a b&c"])
        let headers = try #require(json["headers"] as? [String: String])
        #expect(headers["X-Courier-Test"] == "interop")
        #expect(headers["User-Agent"]?.hasPrefix("Courier/") == true)
        #expect(headers["Accept-Language"]?.isEmpty == false)
    }

    @Test func multipartFilesAndFieldsAreParsedByHTTPBin() async throws {
        let engine = try engine()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("courier-interop-\(UUID().uuidString).txt")
        try Data("file contents\n".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        var form = MultipartForm()
        form.addField("Ada Lovelace", name: "name")
        form.addFile(file, name: "document")
        form.addData(Data("in memory".utf8), name: "note", filename: "note.txt", contentType: "text/plain")
        let json = try object(try await engine.send(engine.operation(path: "/post", method: .post, body: .multipart(form))))
        #expect((json["form"] as? [String: Any])?["name"] as? String == "Ada Lovelace")
        let files = try #require(json["files"] as? [String: Any])
        #expect(files["document"] as? String == "file contents\n")
        #expect(files["note"] as? String == "in memory")
        let headers = try #require(json["headers"] as? [String: String])
        #expect(headers["Content-Type"]?.hasPrefix("multipart/form-data; boundary=") == true)
        #expect(headers["Content-Length"] != nil, "the length is known without reading the files")
    }

    @Test func formBodiesAreParsedAsForms() async throws {
        let engine = try engine()
        let json = try object(try await engine.send(engine.operation(path: "/post", params: ["name": "Ada Lovelace", "tags": ["x", "y"]], method: .post)))
        let form = try #require(json["form"] as? [String: Any])
        #expect(form["name"] as? String == "Ada Lovelace")
        #expect(form["tags[]"] as? [String] == ["x", "y"])
    }

    @Test func jsonBodiesAreParsedAsJSON() async throws {
        struct Payload: Codable, Equatable { var id: Int; var name: String }
        let engine = try engine()
        let json = try object(try await engine.send(engine.operation(path: "/post", method: .post, body: .json(Payload(id: 7, name: "é")))))
        let echoed = try #require(json["json"] as? [String: Any])
        #expect(echoed["id"] as? Int == 7)
        #expect(echoed["name"] as? String == "é")
        #expect((json["headers"] as? [String: String])?["Content-Type"] == "application/json")
    }

    @Test func redirectsAreFollowed() async throws {
        let engine = try engine()
        let op = engine.operation(path: "/redirect/3")
        _ = try await engine.send(op)
        #expect(op.redirectChain.count == 3)
        #expect(op.url?.path == "/get")
        let absolute = engine.operation(path: "/absolute-redirect/2")
        _ = try await engine.send(absolute)
        #expect(absolute.redirectChain.count == 2)
        let limited = try self.engine { $0.redirects = .follow(maximum: 2) }
        #expect(await failure(of: limited.operation(path: "/redirect/5"))?.code == .tooManyRedirects)
    }

    @Test func statusCodesMapToErrorsWithResponses() async throws {
        let engine = try engine()
        for code in [404, 418, 500, 503] {
            let error = await failure(of: engine.operation(path: "/status/\(code)"))
            #expect(error?.code == .unacceptableStatus)
            #expect(error?.response?.statusCode == code)
        }
        #expect(try await engine.send(engine.operation(path: "/status/204")).body.isEmpty)
    }

    @Test func gzipAndDeflateBodiesAreDecompressed() async throws {
        let engine = try engine()
        #expect(try object(try await engine.send(engine.operation(path: "/gzip")))["gzipped"] as? Bool == true)
        #expect(try object(try await engine.send(engine.operation(path: "/deflate")))["deflated"] as? Bool == true)
    }

    @Test func basicAuth() async throws {
        let engine = try engine()
        #expect(await failure(of: engine.operation(path: "/basic-auth/user/passwd"))?.response?.statusCode == 401)
        let token = Data("user:passwd".utf8).base64EncodedString()
        let op = engine.operation(path: "/basic-auth/user/passwd").setHeader("Basic \(token)", forName: "Authorization")
        #expect(try object(try await engine.send(op))["authenticated"] as? Bool == true)
    }

    @Test func anyMethodAndCoalescing() async throws {
        let engine = try engine()
        let ops = (0..<20).map { _ in engine.operation(path: "/delay/1") }
        for op in ops { engine.enqueue(op) }
        for op in ops { #expect(try await op.response().statusCode == 200) }
        for method in [HTTPRequest.Method.put, .patch, .delete] {
            let json = try object(try await engine.send(engine.operation(path: "/anything", method: method)))
            #expect(json["method"] as? String == method.rawValue)
        }
    }
}

enum HTTPBin {
    static var url: String? { ProcessInfo.processInfo.environment["HTTPBIN_URL"].flatMap { $0.isEmpty ? nil : $0 } }
    static var isRequired: Bool { ProcessInfo.processInfo.environment["COURIER_REQUIRE_INTEROP"] == "1" }
    static var isAvailable: Bool { url != nil }
}

@Suite("Interop: httpbin is running where it is required")
struct HTTPBinRequirementTests {
    @Test func interopServerIsPresentWhenRequired() {
        if HTTPBin.isRequired {
            #expect(HTTPBin.url != nil, "COURIER_REQUIRE_INTEROP=1 but HTTPBIN_URL is not set")
        }
    }
}
