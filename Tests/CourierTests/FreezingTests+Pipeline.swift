import Foundation
import HTTPTypes
import Testing
@testable import Courier

extension FreezingTests {
    /// Records whether each request it adapted was a replay.
    final class ReplaySpy: RequestInterceptor {
        let replays = Recorder<Bool>()
        func adapt(_ request: HTTPRequest, context: InterceptorContext) async throws -> HTTPRequest {
            replays.append(context.isReplay)
            return request
        }
    }

    /// Issue 11: interceptors run for replays too, and what they add (a token, the jar's cookies) is
    /// never written to the outbox.
    @Test func aReplayRunsTheInterceptorsAndNothingTheyAddReachesTheOutbox() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let reachability = ManualReachability(.unreachable)
        let origin = Origin()
        let jar = CookieJar()
        jar.setCookies(["session=jar-secret-777; Path=/"], for: URL(string: "https://api.example.com/v1/login")!)
        let spy = ReplaySpy()
        let auth = BearerTokenAuthenticator(token: "interceptor-secret-666") { _ in "refreshed-secret-888" }
        let engine = engine(origin, directory, reachability: reachability) {
            $0.cookieJar = jar
            $0.interceptors = [spy, auth]
        }
        let op = engine.operation(path: "me", method: .patch, body: .text("x=1"))
        op.isFreezable = true
        engine.enqueue(op)
        #expect(await eventually { op.state == .frozen })
        #expect(secretsFound(["interceptor-secret-666", "jar-secret-777"], under: directory) == [])
        origin.isUp.withLockedValue { $0 = true }
        reachability.setStatus(.reachable(via: .wifi))
        _ = try await op.response()
        #expect(origin.received.all.last?.authorization == "Bearer interceptor-secret-666", "the replay carries the token again")
        #expect(origin.transport.requests.last?.headers[.cookie] == "session=jar-secret-777")
        // Unreachable from the start, it went to the outbox without an attempt: every request was a replay.
        #expect(!spy.replays.all.isEmpty && spy.replays.all.allSatisfy { $0 }, "the interceptors know it is a replay")
    }

    /// Credentials in an operation's URL are sent with Basic and kept out of its URL, so neither the
    /// outbox nor a log ever holds the password.
    @Test func credentialsInAURLAreSentAndNeverKept() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let reachability = ManualReachability(.unreachable)
        let origin = Origin()
        let engine = engine(origin, directory, reachability: reachability)
        let op = engine.operation(url: "https://ada:url-secret-999@api.example.com/v1/me", method: .put, body: .text("x"))
        #expect(op.url?.absoluteString == "https://api.example.com/v1/me")
        #expect(!op.description.contains("url-secret-999") && !op.curlCommand.contains("url-secret-999"))
        op.isFreezable = true
        engine.enqueue(op)
        #expect(await eventually { op.state == .frozen })
        #expect(secretsFound(["url-secret-999"], under: directory) == [])
        origin.isUp.withLockedValue { $0 = true }
        reachability.setStatus(.reachable(via: .wifi))
        _ = try await op.response()
        // Not written to the outbox (a credential), but this process still has the operation: its replay
        // sends it. (After a restart it would go without, as any Authorization.)
        #expect(origin.received.all.last?.authorization == "Basic " + Data("ada:url-secret-999".utf8).base64EncodedString())

        let direct = NetworkEngine.fake(origin.transport)
        _ = try await direct.send(direct.operation(url: "https://ada:url-secret-999@api.example.com/v1/now"))
        #expect(origin.received.all.last?.authorization == "Basic " + Data("ada:url-secret-999".utf8).base64EncodedString())
        #expect(origin.transport.requests.last?.url.absoluteString == "https://api.example.com/v1/now")
    }
}
