import Foundation
import Testing
@testable import Courier

/// A server that speaks broken HTTP gets a typed error back, never a crash.
@Suite("Malformed responses")
struct MalformedResponseTests {
    static let cases: [(name: String, reply: String, codes: Set<NetworkError.Code>)] = [
        ("not HTTP at all", "garbage\r\n\r\n", [.invalidResponse]),
        ("bad Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\n", [.invalidResponse]),
        ("bad chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nZZZ\r\nxx\r\n", [.invalidResponse]),
        ("four-digit status", "HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n", [.invalidResponse]),
        ("NUL in a header name", "HTTP/1.1 200 OK\r\nX\u{0}Y: z\r\nContent-Length: 0\r\n\r\n", [.invalidResponse]),
        ("body shorter than declared", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc", [.connectionLost]),
        ("closed without a byte", "", [.connectionLost]),
        ("corrupt gzip", "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 10\r\n\r\n0123456789", [.invalidResponse]),
    ]

    @Test(arguments: cases.indices)
    func brokenServersGetTypedErrors(index: Int) async throws {
        let (name, reply, codes) = Self.cases[index]
        let server = try await RawResponseServer.start(replyingWith: Array(reply.utf8))
        let engine = NetworkEngine(host: "127.0.0.1", port: server.port, isSecure: false, queue: NetworkQueue())
        let error = await failure(of: engine.operation(path: "/"))
        try await server.shutdown()
        #expect(error.map { codes.contains($0.code) } == true, "\(name): \(String(describing: error))")
    }

    @Test func interimResponsesAreNeverTakenAsTheFinalResponse() async throws {
        let reply = "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
            + "HTTP/1.1 100 Continue\r\n\r\n"
            + "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
        let server = try await RawResponseServer.start(replyingWith: Array(reply.utf8))
        let engine = NetworkEngine(host: "127.0.0.1", port: server.port, isSecure: false, queue: NetworkQueue())
        let response = try await engine.send(engine.operation(path: "/"))
        try await server.shutdown()
        #expect(response.statusCode == 200)
        #expect(response.string == "ok")
        #expect(response.headers[HTTPField.Name("Link")!] == nil, "the interim response's fields are not the final response's")
    }

    @Test func httpsToAPlainHTTPServerIsATLSError() async throws {
        let server = try await RawResponseServer.start(replyingWith: Array("HTTP/1.1 400 Bad Request\r\n\r\n".utf8))
        let engine = NetworkEngine(host: "127.0.0.1", port: server.port, isSecure: true, queue: NetworkQueue())
        let error = await failure(of: engine.operation(path: "/"))
        try await server.shutdown()
        #expect(error?.code == .tls, "\(String(describing: error))")
    }
}
