import CourierTestServer
import Foundation
import Testing
@testable import Courier

/// Tier 3: interim (1xx) responses reported to a callback, never taken as the final response.
@Suite("Interim responses")
struct InformationalResponseTests {
    @Test func earlyHintsAndContinueAreReportedInOrderBeforeTheResponse() async throws {
        let reply = "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\nLink: </app.js>; rel=preload\r\n\r\n"
            + "HTTP/1.1 100 Continue\r\n\r\n"
            + "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Final: yes\r\n\r\nok"
        let server = try await RawResponseServer.start(replyingWith: Array(reply.utf8))
        let engine = NetworkEngine(host: "127.0.0.1", port: server.port, isSecure: false, queue: NetworkQueue())
        let interim = Recorder<InformationalResponse>()
        let finalSeen = Recorder<Int>()
        let op = engine.operation(path: "/page", params: ["q": "1"])
            .onInformationalResponse { interim.append($0) }
            .onCompletion { _ in finalSeen.append(interim.all.count) }
        let response = try await engine.send(op)
        await drain(engine.configuration.callbackQueue)
        try await server.shutdown()
        #expect(interim.all.map(\.status.code) == [103, 100])
        #expect(interim.all.first?.headers[values: HTTPField.Name("Link")!] == ["</style.css>; rel=preload", "</app.js>; rel=preload"])
        #expect(finalSeen.all == [2], "both interim responses were heard before the final one")
        #expect(response.statusCode == 200)
        #expect(response.string == "ok")
        #expect(response.headers[HTTPField.Name("X-Final")!] == "yes")
        #expect(response.headers[HTTPField.Name("Link")!] == nil)
        #expect(server.received.hasPrefix("GET /page?q=1 HTTP/1.1\r\n"), "\(server.received)")
    }

    @Test func aBodyWithExpectContinueHearsTheServersContinue() async throws {
        try await withServer { server, engine throws in
            let interim = Recorder<Int>()
            let op = engine.operation(path: "/echo", method: .post, body: .text("hello, interim"))
                .setHeader("100-continue", forName: "Expect")
                .onInformationalResponse { interim.append($0.status.code) }
            let response = try await engine.send(op)
            await drain(engine.configuration.callbackQueue)
            #expect(interim.all == [100])
            #expect(response.statusCode == 200)
            #expect(response.string?.contains("hello, interim") == true)
        }
    }

    @Test func withoutAHandlerNothingChangesAndWithOneTheOperationIsNotCoalesced() async throws {
        try await withServer { server, engine throws in
            let plain = engine.operation(path: "/get")
            let watched = engine.operation(path: "/get").onInformationalResponse { _ in }
            #expect(plain.allowsCoalescing)
            #expect(!watched.allowsCoalescing)
            engine.enqueue(plain)
            engine.enqueue(watched)
            #expect(try await plain.response().statusCode == 200)
            #expect(try await watched.response().statusCode == 200)
            #expect(server.requestCount(path: "/get") == 2)
        }
    }

    /// The connection of its own is as strict as the pooled client: broken HTTP is a typed error.
    @Test(arguments: MalformedResponseTests.cases.indices)
    func brokenServersGetTypedErrorsOnTheInterimPath(index: Int) async throws {
        let (name, reply, codes) = MalformedResponseTests.cases[index]
        let server = try await RawResponseServer.start(replyingWith: Array(reply.utf8))
        let engine = NetworkEngine(host: "127.0.0.1", port: server.port, isSecure: false, queue: NetworkQueue())
        let error = await failure(of: engine.operation(path: "/").onInformationalResponse { _ in })
        try await server.shutdown()
        #expect(error.map { codes.contains($0.code) } == true, "\(name): \(String(describing: error))")
    }

    @Test func refusedStalledAndTLSMismatchAreTypedToo() async throws {
        let away = try await RawResponseServer.start(replyingWith: [])
        let port = away.port
        try await away.shutdown()
        let refused = NetworkEngine(host: "127.0.0.1", port: port, isSecure: false, queue: NetworkQueue())
        #expect(await failure(of: refused.operation(path: "/").onInformationalResponse { _ in })?.code == .cannotConnect)

        try await withServer(configure: { $0.timeouts.read = .milliseconds(300) }) { _, engine in
            #expect(await failure(of: engine.operation(path: "/stall").onInformationalResponse { _ in })?.code == .timeout)
        }
        let plain = try await RawResponseServer.start(replyingWith: Array("HTTP/1.1 400 Bad Request\r\n\r\n".utf8))
        let tls = NetworkEngine(host: "127.0.0.1", port: plain.port, isSecure: true, queue: NetworkQueue())
        let tlsError = await failure(of: tls.operation(path: "/").onInformationalResponse { _ in })
        #expect(tlsError?.code == .tls, "\(String(describing: tlsError))")
        try await plain.shutdown()
    }
}

/// Issue 18 item 3: the connection that reports interim responses writes the same request target as the
/// pooled path, byte for byte: percent-encoded, so a path can never forge a header.
@Suite("Interim responses: request target")
struct InterimRequestTargetTests {
    static let paths = [
        "items/a b\r\nX-Injected: yes/", "a%20b", "a%2Fb", "a%3Fb", "100%25", "line%0D%0Abreak", "dir/", "matrix;v=1",
        "caf\u{E9}/\u{65E5}\u{672C}", "q", "items?x=a%20b&y=%0D%0A",
    ]

    @Test(arguments: paths) func bothTransportsSendTheSameTarget(path: String) async throws {
        try await withServer { server, engine throws in
            let pooled = engine.operation(path: path)
            pooled.allowsCoalescing = false
            let interim = engine.operation(path: path).onInformationalResponse { _ in }
            _ = try? await engine.send(pooled)
            _ = try? await engine.send(interim)
            let targets = server.recordedRequests.map(\.uri)
            #expect(targets.count == 2)
            #expect(Set(targets).count == 1, "pooled \(targets.first ?? "") vs interim \(targets.last ?? "")")
            for target in targets {
                #expect(!target.contains("\r") && !target.contains("\n") && !target.contains(" "), "\(target)")
            }
            #expect(!server.recordedRequests.contains { $0.header("X-Injected") != nil })
        }
    }
}

/// Issue 18 item 9: the interim-response connection stops as soon as its reader does.
@Suite("Interim responses: the body's reader decides")
struct InterimBodyFlowTests {
    @Test func theBodySizeLimitClosesTheConnection() async throws {
        try await withServer(configure: { $0.maximumResponseBodySize = 64 << 10 }) { server, engine in
            // 64 MiB offered, slowly enough that the limit trips long before the end.
            let op = engine.operation(path: "/bytes/67108864", params: ["chunkSize": .int(16384), "delayMs": .int(5)])
                .onInformationalResponse { _ in }
            #expect(await failure(of: op)?.code == .bodyTooLarge)
            #expect(await server.waitForAbortedRequests(count: 1, timeout: .seconds(10)), "the server saw the connection go")
        }
    }

    @Test func cancellingMidBodyClosesTheConnection() async throws {
        try await withServer { server, engine in
            let op = engine.operation(path: "/bytes/67108864", params: ["chunkSize": .int(16384), "delayMs": .int(5)])
                .onInformationalResponse { _ in }
            let progress = Recorder<Int64>()
            op.onDownloadProgress { progress.append($0.completedBytes) }
            engine.enqueue(op)
            #expect(await eventually { !progress.all.isEmpty })
            op.cancel()
            #expect(await failure(of: op)?.code == .cancelled)
            #expect(await server.waitForAbortedRequests(count: 1, timeout: .seconds(10)))
        }
    }
}
