import Foundation
import HTTPTypes
import NIOCore
import NIOConcurrencyHelpers
import Testing
@testable import Courier

/// Where the pipeline stops: other origins, other users' cached responses, bodies that cannot be sent or
/// read twice.
extension PipelineTests {
    /// Adds a token without declaring it to the cache.
    struct UndeclaredToken: RequestInterceptor {
        func adapt(_ request: HTTPRequest, context: InterceptorContext) async throws -> HTTPRequest {
            var request = request
            request.headerFields[.authorization] = "Bearer undeclared"
            return request
        }
    }

    @Test func eachTokenHasItsOwnCachedResponsesAndUndeclaredCredentialsAreNotStored() async throws {
        let transport = FakeTransport { request in
            FakeTransport.reply(
                headers: [.cacheControl: "private, max-age=600", .contentType: "text/plain"],
                body: request.headers[.authorization] ?? "anonymous")
        }
        let auth = BearerTokenAuthenticator(token: "ada") { _ in "ada" }
        let engine = NetworkEngine.fake(transport) {
            $0.cache = ResponseCache(directory: nil)
            $0.interceptors = [auth]
        }
        #expect(try await engine.send(engine.operation(path: "/me")).string == "Bearer ada")
        #expect(try await engine.send(engine.operation(path: "/me")).cacheOutcome == .hit)
        auth.setToken("grace")
        let grace = try await engine.send(engine.operation(path: "/me"))
        #expect(grace.string == "Bearer grace", "never Ada's response")
        #expect(transport.requestCount == 2)

        let undeclared = NetworkEngine.fake(transport) {
            $0.cache = ResponseCache(directory: nil)
            $0.interceptors = [UndeclaredToken()]
        }
        _ = try await undeclared.send(undeclared.operation(path: "/me"))
        let again = try await undeclared.send(undeclared.operation(path: "/me"))
        #expect(again.cacheOutcome == .miss, "a response to credentials the cache cannot tell apart is not stored")
        #expect(transport.requestCount == 4)
    }

    @Test func credentialsStayWithTheEnginesOriginAndOtherOrigins401sAreNotRetried() async throws {
        let transport = FakeTransport { request in
            if request.url.host == "api.example.com", request.url.path.hasSuffix("/away") {
                return FakeTransport.reply(status: 302, headers: [.location: "https://other.example.net/private"])
            }
            return FakeTransport.reply(status: request.url.host == "other.example.net" ? 401 : 200)
        }
        let refreshes = Counter()
        let engine = NetworkEngine.fake(transport) {
            $0.interceptors = [
                BearerTokenAuthenticator(token: "secret") { _ in refreshes.hit(); return "secret2" },
                DigestAuthenticator(user: "u", password: "p"),
            ]
        }
        // An absolute URL elsewhere (a link to a CDN): no token.
        let link = engine.operation(url: "https://other.example.net/file")
        engine.enqueue(link)
        _ = await failure(of: link)
        #expect(transport.requests.last?.headers[.authorization] == nil)
        #expect(transport.requestCount == 1, "its 401 is not the token's: no retry")
        // A redirect to another origin that answers 401: no refresh, no loop.
        let away = engine.operation(path: "/away")
        engine.enqueue(away)
        _ = await failure(of: away)
        #expect(transport.requestCount == 3)
        #expect(refreshes.count() == 0)
    }

    @Test func aBodyStreamIsRetriedUntilItsReaderHasAByteAndAOneShotBodyIsNot() async throws {
        let answers = NIOLockedValueBox(0)
        let transport = FakeTransport { request in
            guard request.url.path.hasSuffix("/events") else { return FakeTransport.reply(status: 503, headers: [.retryAfter: "0"], body: "busy") }
            // Two 503s (their bodies are not the reader's), then a body that breaks after its first bytes.
            let answer = answers.withLockedValue { $0 += 1; return $0 }
            if answer <= 2 { return FakeTransport.reply(status: 503, headers: [.retryAfter: "0"], body: "busy") }
            return FakeTransport.reply(
                status: 200, headers: [.contentType: "text/plain"], body: "hello", failure: NetworkError(.connectionLost))
        }
        let engine = NetworkEngine.fake(transport) { $0.interceptors = [RetryAll(times: 3)] }
        let streamed = engine.operation(path: "/events")
        let chunks = streamed.bodyStream
        engine.enqueue(streamed)
        var received = Data()
        var streamError: NetworkError?
        do {
            for try await chunk in chunks { received += chunk }
        } catch {
            streamError = error as? NetworkError
        }
        let outcome = await failure(of: streamed)
        #expect(String(decoding: received, as: UTF8.self) == "hello", "only the attempt that was accepted reached the reader")
        #expect(streamError?.code == .connectionLost)
        #expect(outcome?.code == .connectionLost)
        #expect(transport.requestCount == 3, "the 503s were retried; the broken body, which the reader had begun, was not")

        let once = AsyncStream<ByteBuffer> { continuation in
            continuation.yield(ByteBuffer(string: "data"))
            continuation.finish()
        }
        let upload = engine.operation(path: "/upload", method: .put, body: .stream(once, length: 4))
        engine.enqueue(upload)
        let error = await failure(of: upload)
        #expect(error?.code == .unacceptableStatus, "the 503 itself, not bodyNotReplayable: \(String(describing: error))")
        #expect(transport.requestCount == 4)
    }
}
