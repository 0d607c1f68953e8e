import Foundation
import HTTPTypes
import Testing
@testable import Courier

/// Issue 23 E3: the engine's credential-like default headers (`X-API-Key`, whatever
/// `sensitiveHeaderNames` adds) go to the engine's origin only; the others go everywhere.
@Suite("default headers and origins")
struct DefaultHeaderOriginTests {
    @Test func sensitiveDefaultHeadersStayOnTheEnginesOrigin() async throws {
        let transport = FakeTransport()
        let engine = NetworkEngine.fake(
            transport, headers: ["X-API-Key": "key-secret-1", "X-Session": "session-2", "x-client-identifier": "iOS"]
        ) { $0.sensitiveHeaderNames.insert("X-Session") }
        _ = try await engine.send(engine.operation(path: "me"))
        _ = try await engine.send(engine.operation(url: "https://api.example.com/v1/absolute"))
        _ = try await engine.send(engine.operation(url: "https://cdn.example.net/image.png"))
        _ = try await engine.send(engine.operation(url: "http://api.example.com/v1/plain-http"))
        _ = try await engine.send(engine.operation(url: "https://api.example.com:8443/v1/other-port"))
        let requests = transport.requests
        #expect(requests.count == 5)
        for (index, request) in requests.enumerated() {
            let own = index < 2
            #expect((request.headers[HTTPField.Name("X-API-Key")!] == "key-secret-1") == own, "\(request.url)")
            #expect((request.headers[HTTPField.Name("X-Session")!] == "session-2") == own, "\(request.url)")
            #expect(request.headers[HTTPField.Name("x-client-identifier")!] == "iOS", "not a credential: sent everywhere")
        }
    }

    @Test func anOperationForAnotherOriginShowsNoSensitiveDefaultInItsCurlCommand() {
        let engine = NetworkEngine.fake(FakeTransport(), headers: ["X-API-Key": "key-secret-1"])
        let foreign = engine.operation(url: "https://elsewhere.example.org/x")
        #expect(!foreign.curlCommand.lowercased().contains("x-api-key"))
        #expect(engine.operation(path: "x").curlCommand.lowercased().contains("x-api-key"))
    }
}
