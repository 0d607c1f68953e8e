// A tiny client of one JSON API, written against the `Courier` product alone:
//   swift run CourierOnly http://127.0.0.1:8080/get
// prints the status and the JSON's top-level keys of the URL it is given.
import Courier
import Foundation

/// The app's engine: callers get models, never URLs or JSON keys.
struct EchoEngine {
    let engine: NetworkEngine

    init(url: URL) {
        engine = NetworkEngine(host: url.host() ?? "localhost", port: url.port, isSecure: url.scheme == "https",
                               headers: ["x-client-identifier": "CourierOnly"])
    }

    func keys(of url: URL) async throws(NetworkError) -> (status: Int, keys: [String]) {
        let response = try await engine.send(engine.operation(url: url.absoluteString))
        let object = try response.json() as? [String: Any] ?? [:]
        return (response.statusCode, object.keys.sorted())
    }
}

guard CommandLine.arguments.count == 2, let url = URL(string: CommandLine.arguments[1]) else {
    print("usage: CourierOnly URL")
    exit(2)
}
do {
    let (status, keys) = try await EchoEngine(url: url).keys(of: url)
    print("\(status): \(keys.joined(separator: ", "))")
} catch {
    print("failed: \(error)")
    exit(1)
}
