import CourierTestServer
import Foundation
import Logging
import Testing
@testable import Courier

@Suite("Logging")
struct LoggingTests {
    @Test func silentByDefault() {
        #expect(NetworkEngine.Configuration().logger.logLevel == Logger.courierSilent.logLevel)
        let engine = NetworkEngine.fake(FakeTransport())
        #expect(engine.configuration.logger.handler is SwiftLogNoOpLogHandler)
    }

    @Test func requestsAreLoggedWithCourierMetadataAndNoSecrets() async throws {
        let recorder = LogRecorder()
        try await withServer(configure: { $0.logger = recorder.logger(level: .trace) }) { _, engine in
            let op = engine.operation(path: "/redirect-to", params: ["url": "/get", "token": "q-secret"])
                .setHeader("Bearer h-secret", forName: "Authorization")
                .setHeader("session=c-secret", forName: "Cookie")
            _ = try await engine.send(op)
            _ = await failure(of: engine.operation(path: "/status/500"))
            _ = await failure(of: engine.operation(path: "/drop-mid-body"))
        }
        let records = recorder.all
        #expect(records.contains { $0.message == "courier request started" && $0.metadata["courier-method"] == "GET" && $0.metadata["courier-flight"] != nil })
        #expect(records.contains { $0.message == "courier following redirect" })
        #expect(records.contains { $0.message == "courier request finished" && $0.metadata["courier-status"] == "200" })
        #expect(records.contains { $0.message == "courier request finished" && $0.metadata["courier-status"] == "500" })
        #expect(records.contains { $0.message == "courier request failed" && $0.metadata["courier-error"] == "connectionLost" })
        #expect(records.allSatisfy { $0.level <= .debug }, "the library logs only at debug and trace")
        let everything = records.map { "\($0.message) \($0.metadata)" }.joined(separator: "\n")
        for secret in ["q-secret", "h-secret", "c-secret"] {
            #expect(!everything.contains(secret), "\(secret) reached the logs")
        }
    }
}
