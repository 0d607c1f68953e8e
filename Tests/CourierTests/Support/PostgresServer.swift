import CourierTestServer
import Foundation
import PostgresNIO
import Testing

extension PostgresServer {
    /// A client of this server with at most `connections` connections; run it (`client.run()`) while it is used.
    func makeClient(connections: Int = 20) -> PostgresClient {
        var configuration = PostgresClient.Configuration(
            host: "127.0.0.1", port: port, username: Self.user, password: Self.password, database: "postgres", tls: .disable)
        configuration.options.connectTimeout = .seconds(3)
        configuration.options.maximumConnections = connections
        return PostgresClient(configuration: configuration)
    }
}

extension PostgresServer {
    /// Runs `body` with a fresh server, one such test at a time in the process: `initdb` and a server's start
    /// are CPU-heavy, and a dozen at once on two cores starved the timing-sensitive tests beside them.
    static func with<T: Sendable>(_ body: (PostgresServer) async throws -> T) async throws -> T {
        await gate.acquire()
        do {
            let server = try await start()
            do {
                let value = try await body(server)
                await server.stop()
                await gate.release()
                return value
            } catch {
                await server.stop()
                throw error
            }
        } catch {
            await gate.release()
            throw error
        }
    }

    private static let gate = Gate()

    /// An asynchronous mutex: waiters resume in order.
    private actor Gate {
        private var isHeld = false
        private var waiters: [CheckedContinuation<Void, Never>] = []

        func acquire() async {
            guard isHeld else {
                isHeld = true
                return
            }
            await withCheckedContinuation { waiters.append($0) }
        }

        func release() {
            if waiters.isEmpty {
                isHeld = false
            } else {
                waiters.removeFirst().resume()
            }
        }
    }
}

extension Trait where Self == TimeLimitTrait {
    /// The time limit of a test that runs a server through `PostgresServer.with`: `minutes` of its own, plus
    /// the wait for its turn. A test's time counts from its start, and tests of the suites run in parallel
    /// wait there for all those before them: about five minutes in a loaded full run, which a two-minute
    /// limit once exceeded while the test itself took 12 s.
    static func postgres(minutes: Int) -> Self { .timeLimit(.minutes(minutes + 6)) }
}
