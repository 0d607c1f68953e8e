import AsyncHTTPClient
import CourierTestServer
import Foundation
import NIOCore
import NIOSSL
import Testing
@testable import Courier

/// Issue 18 items 11, 15 and 20: transport failures read as what they are, in words a user can act on.
@Suite("Error mapping")
struct ErrorMappingTests {
    @Test func aTLSPeerThatHangsUpMidBodyLostTheConnection() {
        let error = AsyncHTTPClientTransport.networkError(for: NIOSSLError.uncleanShutdown, url: "https://x/")
        #expect(error.code == .connectionLost, "freezable, like any lost connection; not a TLS failure")
    }

    @Test func aRequestBodyOfTheWrongLengthIsTheCallersBody() {
        let error = AsyncHTTPClientTransport.networkError(for: HTTPClientError.bodyLengthMismatch, url: "https://x/")
        #expect(error.code == .encodingFailed)
        #expect(error.message.contains("request body"))
    }

    @Test func aRefusedConnectionSaysSoInOneLine() async throws {
        // A port nothing listens on (outside the ephemeral range: no parallel test can take it).
        let port = try await TestServer.vacantPort()
        let engine = NetworkEngine(host: "127.0.0.1", port: port, isSecure: false, queue: NetworkQueue())
        let error = await failure(of: engine.operation(path: "x"))
        #expect(error?.code == .cannotConnect)
        #expect(error?.message.contains("connection refused") == true, "\(String(describing: error?.message))")
        #expect(error?.message.contains("127.0.0.1:\(port)") == true, "\(String(describing: error?.message))")
        #expect(error?.message.contains("error set") == false)
        #expect(error?.message.contains("errno") == false)
    }

    @Test func aRefusedSocketErrorNamesTheEndpointNotTheSyscall() {
        // NIO describes this one as "connection reset (error set): Connection refused (errno: 111)".
        let refused = IOError(errnoCode: ECONNREFUSED, reason: "connection reset (error set)")
        let error = AsyncHTTPClientTransport.networkError(for: refused, url: "http://127.0.0.1:1/get")
        #expect(error.code == .cannotConnect)
        #expect(error.message == "could not connect to 127.0.0.1:1: connection refused (nothing listens on that port)")
        let https = AsyncHTTPClientTransport.networkError(for: refused, url: "https://[::1]/x")
        #expect(https.message.hasPrefix("could not connect to [::1]:443: connection refused"), "\(https.message)")
    }

    @Test func otherSocketErrorsReadWithoutNIOsWording() {
        let reset = IOError(errnoCode: ECONNRESET, reason: "connection reset (error set)")
        let error = AsyncHTTPClientTransport.networkError(for: reset, url: "http://127.0.0.1:1/get")
        #expect(error.code == .connectionLost)
        #expect(error.message == "the connection failed: connection reset by peer", "\(error.message)")
        let unreachable = AsyncHTTPClientTransport.networkError(
            for: IOError(errnoCode: ENETUNREACH, reason: "connect"), url: "http://10.1.2.3:8080/")
        #expect(unreachable.code == .cannotConnect)
        #expect(unreachable.message == "could not connect to 10.1.2.3:8080: network is unreachable", "\(unreachable.message)")
    }

    @Test func httpsToAPlainHTTPServerSaysWhatToChange() async throws {
        try await withServer { server, _ in
            // isSecure defaults to true: a newcomer's first mistake against a local server.
            let engine = NetworkEngine(host: "127.0.0.1", port: server.port, queue: NetworkQueue())
            let error = await failure(of: engine.operation(path: "get"))
            #expect(error?.code == .tls)
            #expect(error?.message.contains("isSecure: false") == true, "\(String(describing: error?.message))")
        }
    }
}
