import Foundation
import HTTPTypes
import Logging
import Testing
@testable import Courier

/// Tier 2: the logging monitor writes request and response heads with every secret masked.
@Suite("LoggingEventMonitor")
struct LoggingEventMonitorTests {
    /// Adds a bearer token to every request, as an authenticator would.
    struct Token: RequestInterceptor {
        func adapt(_ request: HTTPRequest, context: InterceptorContext) async throws -> HTTPRequest {
            var request = request
            request.headerFields[.authorization] = "Bearer tok-SECRET-1"
            return request
        }
    }

    static let secretTransport = FakeTransport { _ in
        FakeTransport.reply(
            status: 200,
            headers: [.contentType: "application/json", .setCookie: "sid=setcookie-SECRET-2; Path=/; HttpOnly", HTTPField.Name("X-Trace")!: "t-1"],
            body: "{\"token\":\"body-SECRET-3\"}")
    }

    func engine(_ recorder: LogRecorder, loggerLevel: Logger.Level, level: Logger.Level = .debug) -> NetworkEngine {
        NetworkEngine.fake(Self.secretTransport, headers: ["X-Api-Key": "apikey-SECRET-4"]) {
            $0.eventMonitors = [LoggingEventMonitor(logger: recorder.logger(level: loggerLevel), level: level)]
            $0.interceptors = [Token()]
            $0.credentialProvider = { _ in [HTTPField.Name("X-Custom-Credential")!: "provider-SECRET-5"] }
        }
    }

    func sendSecretRequest(_ engine: NetworkEngine) async throws {
        let op = engine.operation(
            url: "https://user:pw-SECRET-6@api.example.com/v1/me?page=2&api_key=query-SECRET-7",
            method: .post, body: .json(["password": "json-SECRET-8"]))
        op.setHeader("session=cookie-SECRET-9; theme=dark", forName: "Cookie")
        op.setHeader("Basic proxy-SECRET-10", forName: "Proxy-Authorization")
        _ = try await engine.send(op)
        await engine.context.monitors?.drain()
    }

    func everything(_ records: [LogRecorder.Record]) -> String {
        records.map { "\($0.message) \($0.metadata.sorted { $0.key < $1.key })" }.joined(separator: "\n")
    }

    @Test func aURLInALocationFieldIsMaskedAsAURL() async throws {
        let recorder = LogRecorder()
        let transport = FakeTransport { request in
            if request.url.path.hasSuffix("/login") {
                return FakeTransport.reply(status: 302, headers: [.location: "/v1/home?access_token=location-SECRET-11&page=1"])
            }
            return FakeTransport.reply()
        }
        let engine = NetworkEngine.fake(transport) {
            $0.eventMonitors = [LoggingEventMonitor(logger: recorder.logger(level: .trace), level: .debug)]
        }
        _ = try await engine.send(engine.operation(path: "/login"))
        #expect(await eventually { recorder.all.contains { $0.message == "courier finished" } })
        let text = everything(recorder.all)
        #expect(!text.contains("SECRET"), "\(text)")
        #expect(text.contains("access_token=***"))
    }

    @Test func headsAreLoggedWithEverySecretMasked() async throws {
        let recorder = LogRecorder()
        try await sendSecretRequest(engine(recorder, loggerLevel: .trace))
        let text = everything(recorder.all)
        #expect(!text.contains("SECRET"), "\(text)")
        let request = try #require(recorder.all.first { $0.message == "courier request" })
        let headers = try #require(request.metadata["courier-headers"])
        #expect(headers.contains("Authorization: Bearer ***"))
        #expect(headers.contains("Proxy-Authorization: Basic ***"))
        #expect(headers.contains("Cookie: session=***; theme=***"))
        #expect(headers.contains("X-Api-Key: ***"))
        #expect(headers.contains("X-Custom-Credential: ***"), "the credential provider's fields count as secrets")
        #expect(request.metadata["courier-url"] == "https://api.example.com/v1/me?page=2&api_key=***", "user info is not sent")
        let enqueued = try #require(recorder.all.first { $0.message == "courier enqueued" })
        // The password left the URL when the operation was built (it went to an Authorization field).
        #expect(enqueued.metadata["courier-url"] == "https://api.example.com/v1/me?page=2&api_key=***")
        #expect(request.metadata["courier-method"] == "POST")
        let response = try #require(recorder.all.first { $0.message == "courier response" })
        #expect(response.metadata["courier-status"] == "200")
        #expect(response.metadata["courier-headers"]?.contains("Set-Cookie: sid=***; Path=***; HttpOnly") == true)
        #expect(response.metadata["courier-headers"]?.contains("X-Trace: t-1") == true, "other fields as they are")
        #expect(recorder.all.allSatisfy { $0.metadata["courier-operation-id"]?.hasPrefix("op-") == true })
        #expect(recorder.all.contains { $0.message.hasSuffix("progress") && $0.level == .trace })
        let finished = try #require(recorder.all.last)
        #expect(finished.message == "courier finished" && finished.metadata["courier-status"] == "200")
        #expect(finished.metadata["courier-total-ms"] != nil && finished.metadata["courier-ttfb-ms"] != nil)
    }

    @Test func itLogsAtTheChosenLevelAndOnlyWhatTheLoggerLetsThrough() async throws {
        let debug = LogRecorder()
        try await sendSecretRequest(engine(debug, loggerLevel: .debug))
        #expect(debug.all.map(\.message) == ["courier enqueued", "courier request", "courier response", "courier finished"])
        #expect(debug.all.allSatisfy { $0.level == .debug }, "no progress below trace")
        let info = LogRecorder()
        try await sendSecretRequest(engine(info, loggerLevel: .info, level: .info))
        #expect(info.all.count == 4 && info.all.allSatisfy { $0.level == .info })
        let silent = LogRecorder()
        try await sendSecretRequest(engine(silent, loggerLevel: .info))
        #expect(silent.all.isEmpty)
    }

    /// Signs each request with a field it declares as its credential.
    struct Signer: RequestInterceptor {
        static let name = HTTPField.Name("X-Signature")!
        func adapt(_ request: HTTPRequest, context: InterceptorContext) async throws -> HTTPRequest {
            var request = request
            request.headerFields[Self.name] = "hmac-SECRET-12"
            return request
        }
        func cacheCredentials(for url: URL) -> HTTPFields { [Self.name: "hmac-SECRET-12"] }
    }

    @Test func aFieldAnInterceptorDeclaresIsMaskedWhileTheRequestIsStillRunning() async throws {
        let recorder = LogRecorder()
        // The response waits until the request is logged: the record is written before the operation finishes.
        let transport = FakeTransport { _ in
            _ = await eventually { recorder.all.contains { $0.message == "courier request" } }
            return FakeTransport.reply()
        }
        let engine = NetworkEngine.fake(transport) {
            $0.eventMonitors = [LoggingEventMonitor(logger: recorder.logger(level: .trace), level: .debug)]
            $0.interceptors = [Signer()]
        }
        _ = try await engine.send(engine.operation(path: "/signed"))
        await engine.context.monitors?.drain()
        let request = try #require(recorder.all.first { $0.message == "courier request" })
        #expect(request.metadata["courier-headers"]?.contains("X-Signature: ***") == true, "\(everything(recorder.all))")
        #expect(!everything(recorder.all).contains("SECRET"))
    }

    @Test func aLoggerThatKeepsNothingCostsNoCredentialLookups() async throws {
        func providerCalls(monitors: [any EventMonitor]) async throws -> Int {
            let calls = Counter()
            let engine = NetworkEngine.fake(Self.secretTransport) {
                $0.eventMonitors = monitors
                $0.credentialProvider = { _ in calls.hit(); return [HTTPField.Name("X-Custom-Credential")!: "provider-SECRET-5"] }
            }
            _ = try await engine.send(engine.operation(path: "/me"))
            await engine.context.monitors?.drain()
            return calls.count()
        }
        let silent = LogRecorder()
        let baseline = try await providerCalls(monitors: [])
        #expect(try await providerCalls(monitors: [LoggingEventMonitor(logger: silent.logger(level: .info), level: .debug)]) == baseline)
        #expect(silent.all.isEmpty)
    }
}
