import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import Testing
@testable import Courier

/// Regressions an adversarial review of issue 24's fixes found: an interceptor's rewrite applied twice
/// to a request sent again without a redirect, and Digest requests in flight when a site's second realm
/// is learned.
@Suite("Request path review regressions")
struct ReviewRegressionTests {
    /// Signs every request: appends sig=1 to the query (a presigning / API-key-in-query interceptor).
    struct QuerySigner: RequestInterceptor {
        func adapt(_ request: HTTPRequest, context: InterceptorContext) async throws -> HTTPRequest {
            var request = request
            let path = request.path ?? "/"
            request.path = path + (path.contains("?") ? "&" : "?") + "sig=1"
            return request
        }
    }

    @Test func aRewriteIsAppliedOnceToEachRangeOfAResumedDownload() async throws {
        try await TransferTestSupport.withTemporaryDirectory { (folder: URL) async throws in
            let file = folder.appendingPathComponent("big.iso")
            let store = ResumeRecordStore(destination: file)
            try await TransferLockTests.plantPartial(store, bytes: 500)
            let body = TransferLockTests.body
            let transport = FakeTransport { request in
                let range = request.headers[.range] ?? ""
                if range == "bytes=500-" {
                    return FakeTransport.reply(status: 206, headers: [.eTag: "\"v1\"", .contentRange: "bytes 500-699/1000", .contentLength: "200"], data: Data(body[500..<700]))
                }
                if range == "bytes=700-" {
                    return FakeTransport.reply(status: 206, headers: [.eTag: "\"v1\"", .contentRange: "bytes 700-999/1000", .contentLength: "300"], data: Data(body[700..<1000]))
                }
                return FakeTransport.reply(status: 200, headers: [.eTag: "\"v1\"", .contentLength: "1000"], data: body)
            }
            let engine = NetworkEngine.fake(transport) { $0.interceptors = [QuerySigner()] }
            let result: Result<NetworkResponse, any Error>
            do { result = .success(try await engine.send(engine.operation(url: TransferLockTests.url).download(to: file, resumable: true))) } catch { result = .failure(error) }
            let urls = transport.requests.map { "\($0.url.absoluteString) [\($0.headers[.range] ?? "-")]" }
            #expect((try? result.get().statusCode) == 200)
            #expect(transport.requests.allSatisfy { $0.url.absoluteString == "https://api.example.com/big?sig=1" }, "\(urls)")
        }
    }

    @Test func concurrentRequestsMovingToASecondRealmAllSucceed() async throws {
        typealias Realm = DigestOriginServer.Realm
        try await DigestEndToEndTests.withDigestServer(.init(realms: [
            Realm(name: "one", pathPrefix: "/a", algorithms: ["SHA-256"]),
            Realm(name: "two", pathPrefix: "/b", algorithms: ["SHA-256"]),
        ])) { server, engine in
            _ = try await DigestEndToEndTests.get(engine, "/a/1")
            let errors = NIOLockedValueBox<[String]>([])
            await withTaskGroup(of: Void.self) { group in
                for index in 0..<6 {
                    group.addTask {
                        do { _ = try await DigestEndToEndTests.get(engine, "/b/\(index)") } catch {
                            errors.withLockedValue { $0.append("\(index): \(error)") }
                        }
                    }
                }
            }
            let failed = errors.withLockedValue { $0 }
            #expect(failed.isEmpty, "a legitimate two-realm site, right password: \(failed)")
        }
    }

}
