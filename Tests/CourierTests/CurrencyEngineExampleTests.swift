import CourierTestServer
import Foundation
import Testing
import Courier

/// The README's `CurrencyEngine`, as written there, against the in-process server's `/rates`.
struct CurrencyEngine {
    let engine: NetworkEngine

    struct Rates: Decodable { let base: String; let rates: [String: Double] }

    func rates(base: String) async throws -> Rates {
        try await engine.send(engine.operation(path: "rates", params: ["base": .string(base)]),
                              decoding: Rates.self)
    }

    /// The closure form, MKNetworkKit style.
    func rates(base: String, completion: @escaping @Sendable (Result<Rates, NetworkError>) -> Void) {
        let op = engine.operation(path: "rates", params: ["base": .string(base)])
        op.onCompletion { response in
            do throws(NetworkError) { completion(.success(try response.decode(Rates.self))) } catch { completion(.failure(error)) }
        }
        op.onError { completion(.failure($0)) }
        engine.enqueue(op)
    }
}

@Suite("README example: CurrencyEngine")
struct CurrencyEngineExampleTests {
    @Test func returnsModelsInBothForms() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let currency = CurrencyEngine(engine: NetworkEngine(
            host: "127.0.0.1", port: server.port, isSecure: false, headers: ["x-client-identifier": "iOS"], queue: NetworkQueue()))
        let rates = try await currency.rates(base: "USD")
        #expect(rates.base == "USD")
        #expect(rates.rates["GBP"] == 0.85)
        let viaClosure = await withCheckedContinuation { continuation in
            currency.rates(base: "EUR") { continuation.resume(returning: $0) }
        }
        #expect((try? viaClosure.get())?.base == "EUR")
        #expect(server.recordedRequests.first?.header("x-client-identifier") == "iOS")
    }
}
