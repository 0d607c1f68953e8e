import CourierTestServer
import Foundation
@testable import Courier

/// Starts an in-process server on 127.0.0.1:0 for one test, with a fresh queue and engine, and
/// shuts the server down afterwards, whatever happened.
func withServer<T>(
    maximumConcurrent: Int = 6,
    isSuspended: Bool = false,
    configure: (inout NetworkEngine.Configuration) -> Void = { _ in },
    _ body: (TestServer, NetworkEngine) async throws -> T
) async throws -> T {
    let server = try await TestServer.start()
    let queue = NetworkQueue(maximumConcurrentOperations: maximumConcurrent, isSuspended: isSuspended)
    var configuration = NetworkEngine.Configuration()
    configuration.callbackQueue = DispatchQueue(label: "test.e2e.callbacks")
    configure(&configuration)
    let engine = NetworkEngine(host: "127.0.0.1", port: server.port, isSecure: false, configuration: configuration, queue: queue)
    do {
        let result = try await body(server, engine)
        queue.cancelAll()
        try await server.shutdown()
        return result
    } catch {
        queue.cancelAll()
        try? await server.shutdown()
        throw error
    }
}

/// The error an operation ends with, or `nil` if it succeeded.
func failure(of operation: NetworkOperation) async -> NetworkError? {
    do {
        _ = try await operation.response()
        return nil
    } catch {
        return error
    }
}
