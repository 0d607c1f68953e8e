import Foundation
import HTTPTypes
import Testing
@testable import Courier

/// Tier 1: the cheap forms of rules the request path applies to every operation give the answers of
/// their long forms.
@Suite("Request path: cheap forms of the rules")
struct RequestPathCostTests {
    private func key(_ fields: [HTTPField]) -> CoalescingKey {
        let headers = HTTPFields(fields)
        return CoalescingKey(
            request: PreparedRequest(
                method: .get, url: URL(string: "http://h/x")!, headers: headers, body: nil, options: TransportOptions(),
                redirects: .follow(), maximumBodySize: 1 << 20, totalTimeout: nil, logger: .courierSilent),
            uniqueIdentifier: "x")
    }

    @Test func coalescingKeysIgnoreTheOrderAndCaseOfHeaderFields() throws {
        let accept = HTTPField(name: .accept, value: "application/json")
        let custom = HTTPField(name: try #require(HTTPField.Name("X-Trace")), value: "1")
        let lower = HTTPField(name: try #require(HTTPField.Name("x-trace")), value: "1")
        #expect(key([accept, custom]) == key([lower, accept]))
        #expect(key([accept, custom]).hashValue == key([lower, accept]).hashValue)
        #expect(key([accept, custom]) != key([accept, HTTPField(name: custom.name, value: "2")]), "another value")
        #expect(key([accept, custom]) != key([accept]), "a field fewer")
        #expect(key([accept, custom, custom]) != key([accept, accept, custom]), "the same names, other multiplicities")
    }

    @Test func identicalKeysCoalesceInTheQueue() throws {
        var machine = QueueStateMachine(maximumConcurrent: 4)
        let a = key([HTTPField(name: .accept, value: "a"), HTTPField(name: .acceptLanguage, value: "b")])
        let b = key([HTTPField(name: .acceptLanguage, value: "b"), HTTPField(name: .accept, value: "a")])
        let first = OperationID(rawValue: 7_000_001), second = OperationID(rawValue: 7_000_002)
        #expect(machine.enqueue(first, priority: .normal, key: a).start.map(\.subscribers) == [[first]])
        #expect(machine.enqueue(second, priority: .normal, key: b).joinedRunning == [second])
    }

    /// A URL judged normalised already is exactly what the long form makes of it.
    @Test(arguments: [
        "http://example.com/a?b=c", "https://example.com:8443/x", "http://127.0.0.1:18089/small?n=1",
        "HTTP://example.com/", "http://Example.com/", "http://example.com:80/", "https://example.com:443/p",
        "http://example.com", "http://example.com?q", "http://example.com/#frag", "http://example.com/a#",
        "ftp://example.com/", "example.com/path", "http:/example.com/", "", "http://", "http://h:80",
        "https://h:4430/", "http://h:8080/", "http://user@host/p", "http://[::1]:80/", "http://[::1]:8080/x",
        "https://\u{C4}.example/x", "https://\u{212A}.example/x", "https://\u{130}.example/", "h\u{C4}tp://x/",
    ])
    func normalisedURLsNeedNoRebuilding(_ url: String) {
        if NetworkOperation.isNormalized(url) {
            #expect(NetworkOperation.rebuiltURL(url) == url)
        }
        #expect(NetworkOperation.normalizedURL(url) == NetworkOperation.rebuiltURL(url))
    }

    /// Review finding: a host spelled with non-ASCII capitals is the same host in lowercase (Foundation
    /// sends both as one IDNA name), so both spellings are one request.
    @Test func nonASCIICapitalsInTheHostShareTheIdentity() {
        let engine = NetworkEngine.fake(FakeTransport())
        for (upper, lower) in [("https://\u{C4}.example/x", "https://\u{E4}.example/x"), ("https://\u{212A}.example/x", "https://k.example/x")] {
            #expect(!NetworkOperation.isNormalized(upper))
            #expect(engine.operation(url: upper).uniqueIdentifier == engine.operation(url: lower).uniqueIdentifier)
        }
    }

    @Test func commonURLsTakeTheCheapPath() {
        #expect(NetworkOperation.isNormalized("http://127.0.0.1:18089/small?n=1"))
        #expect(NetworkOperation.isNormalized("https://api.example.com/v1/users"))
        #expect(!NetworkOperation.isNormalized("http://example.com:80/"))
        #expect(!NetworkOperation.isNormalized("HTTPS://example.com/"))
    }
}
