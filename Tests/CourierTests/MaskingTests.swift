import Foundation
import HTTPTypes
import Logging
import Testing
@testable import Courier

/// Issue 23 part E4: secrets that escaped the masking. A nameless cookie (`Set-Cookie: SECRETTOKEN123`),
/// a token in the query of an error's URL or of the insecure-redirect message, and sensitive parameter
/// names given in another case. Tier 2: engines over a fake transport, logs in memory.
@Suite("Masking")
struct MaskingTests {
    static func text(_ records: [LogRecorder.Record]) -> String {
        records.map { "\($0.message) \($0.metadata.sorted { $0.key < $1.key })" }.joined(separator: "\n")
    }

    // MARK: Nameless cookies

    @Test func aNamelessCookieIsNeitherLoggedNorInTheCurlCommand() async throws {
        let recorder = LogRecorder()
        let transport = FakeTransport { _ in
            var headers: HTTPFields = [.contentType: "text/plain"]
            headers.append(HTTPField(name: .setCookie, value: "SECRETTOKEN123"))
            headers.append(HTTPField(name: .setCookie, value: "=EMPTYNAME-SECRET-2; Path=/; Secure"))
            return FakeTransport.reply(status: 200, headers: headers, body: "ok")
        }
        let engine = NetworkEngine.fake(transport) {
            $0.eventMonitors = [LoggingEventMonitor(logger: recorder.logger(level: .trace), level: .debug)]
        }
        let op = engine.operation(path: "me")
        op.setHeader("NAMELESS-SECRET-3; theme=dark", forName: "Cookie")
        #expect(!op.curlCommand.contains("SECRET"), "\(op.curlCommand)")
        #expect(op.curlCommand.contains("Cookie: ***; theme=***"))
        _ = try await engine.send(op)
        await engine.context.monitors?.drain()
        #expect(await eventually { recorder.all.contains { $0.message == "courier finished" } })
        let logged = Self.text(recorder.all)
        #expect(!logged.contains("SECRET"), "\(logged)")
        #expect(logged.contains("Set-Cookie: ***") && logged.contains("Set-Cookie: =***; Path=***; Secure"))
    }

    @Test func cookieValuesAreMaskedPairByPair() {
        #expect(NetworkOperation.masked(name: "Cookie", value: "SECRETTOKEN123") == "***")
        #expect(NetworkOperation.masked(name: "cookie", value: "a=1; SECRET ;b=2;") == "a=***; ***; b=***")
        #expect(NetworkOperation.masked(name: "Set-Cookie", value: "SECRETTOKEN123; HttpOnly") == "***; HttpOnly")
        #expect(NetworkOperation.masked(name: "Set-Cookie", value: "sid=x; Path=/; HttpOnly") == "sid=***; Path=***; HttpOnly")
    }

    // MARK: Errors

    @Test func anErrorsDescriptionMasksSensitiveQueryItems() {
        let error = NetworkError(.timeout, url: "https://api.example.com/v1/me?page=2&access_token=ERR-SECRET-4&Api_Key=ERR-SECRET-5")
        #expect(!error.description.contains("SECRET"), "\(error.description)")
        #expect(error.description.contains("page=2&access_token=***&Api_Key=***"))
        #expect(error.url?.contains("ERR-SECRET-4") == true, "the url property is left as it was")
        let withPassword = NetworkError(.timeout, url: "https://ada:PW-SECRET-6@api.example.com/")
        #expect(!withPassword.description.contains("SECRET"))
    }

    /// The report's scenario: a failed request whose URL carries a token, as an app would log it.
    @Test func aFailedOperationsErrorAsAppsLogItHidesTheToken() async throws {
        let transport = FakeTransport { _ in FakeTransport.reply(status: 500, body: "{}") }
        let engine = NetworkEngine.fake(transport)
        let op = engine.operation(path: "me", params: ["access_token": "OP-SECRET-7", "page": "1"])
        do {
            _ = try await engine.send(op)
            Issue.record("a 500 should fail")
        } catch {
            #expect(!"\(error)".contains("SECRET"), "\(error)")
            #expect("\(error)".contains("access_token=***"))
        }
    }

    @Test func theInsecureRedirectMessageMasksTheTargetsQuery() async throws {
        let transport = FakeTransport { request in
            if request.url.scheme == "https" {
                return FakeTransport.reply(status: 302, headers: [.location: "http://api.example.com/cb?code=1&access_token=REDIR-SECRET-8"])
            }
            return FakeTransport.reply()
        }
        let engine = NetworkEngine.fake(transport)
        do {
            _ = try await engine.send(engine.operation(path: "login"))
            Issue.record("an https to http redirect should fail")
        } catch {
            #expect(error.code == .insecureRedirect)
            #expect(!error.message.contains("SECRET") && !error.description.contains("SECRET"), "\(error)")
            #expect(error.message.contains("http://api.example.com/cb?code=1&access_token=***"))
        }
    }

    /// Descriptions apps log: an operation's (with its engine's names) and an outbox entry's.
    @Test func operationAndOutboxEntryDescriptionsMaskTheQuery() {
        let engine = NetworkEngine.fake(FakeTransport()) { $0.sensitiveParameterNames.insert("Own_Secret") }
        let op = engine.operation(path: "me", params: ["access_token": "DESC-SECRET-14", "own_secret": "DESC-SECRET-15", "page": "2"])
        #expect(!op.description.contains("SECRET") && op.description.contains("page=2"), "\(op.description)")
        let entry = OutboxEntry(
            id: "0123456789", method: .post, url: URL(string: "https://api.example.com/v1/x?token=DESC-SECRET-16")!, idempotencyKey: "k",
            createdAt: Date(), attempts: 0, nextAttemptAt: Date(), state: .pending, lastStatus: nil, lastError: nil)
        #expect(!entry.description.contains("SECRET") && entry.description.contains("token=***"), "\(entry.description)")
    }

    // MARK: Case

    @Test func sensitiveParameterNamesMatchInAnyCase() {
        let engine = NetworkEngine.fake(FakeTransport()) { $0.sensitiveParameterNames.insert("X-Session-Key") }
        let query = engine.operation(url: "https://api.example.com/v1/a?x-session-key=CASE-SECRET-9&ACCESS_TOKEN=CASE-SECRET-10&q=1")
        #expect(!query.curlCommand.contains("SECRET"), "\(query.curlCommand)")
        #expect(query.curlCommand.contains("q=1"))
        let form = engine.operation(path: "a", method: .post, body: .form(["X-SESSION-KEY": "CASE-SECRET-11"]))
        #expect(!form.curlCommand.contains("SECRET"), "\(form.curlCommand)")
        let json = engine.operation(path: "a", method: .post, body: .json(["x-Session-key": "CASE-SECRET-12"]))
        #expect(!json.curlCommand.contains("SECRET"), "\(json.curlCommand)")
        #expect(SensitiveParameters.masked(url: "https://h/?Token=CASE-SECRET-13", names: ["TOKEN"]) == "https://h/?Token=***")
    }
}
