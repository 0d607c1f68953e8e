import CourierTestServer
import Foundation
import Testing
@testable import Courier

/// One request of a conformance case.
struct CacheStep: Sendable {
    var advance: TimeInterval = 0
    var request: [String: String] = [:]
    /// Response header lines; `{date}` is the injected clock's now, `{date-N}` / `{date+N}` N seconds off.
    var response: [String] = ["Cache-Control: max-age=60", "Date: {date}"]
    var status = 200
    var method: HTTPRequest.Method = .get
    var policy: CachePolicy?
    /// The expected `cacheOutcome`; `nil` expects an error (as `.cacheOnly` with nothing stored gives).
    var outcome: CacheOutcome?
    /// Whether the server must (true) or must not (false) have been asked; `nil` when a background
    /// revalidation makes it racy.
    var network: Bool?
    var age: String?
    var absentHeader: String?
}

struct CacheCase: Sendable, CustomTestStringConvertible {
    var name: String
    var steps: [CacheStep]
    var testDescription: String { name }
}

/// Shorthands for the table.
private func store(_ response: [String] = ["Cache-Control: max-age=60", "Date: {date}"], status: Int = 200, request: [String: String] = [:]) -> CacheStep {
    CacheStep(request: request, response: response, status: status, outcome: .miss, network: true)
}
private func step(
    _ outcome: CacheOutcome?, network: Bool?, after advance: TimeInterval = 0, request: [String: String] = [:],
    method: HTTPRequest.Method = .get, response: [String] = ["Cache-Control: max-age=60", "Date: {date}"], status: Int = 200,
    policy: CachePolicy? = nil, age: String? = nil, absent: String? = nil
) -> CacheStep {
    CacheStep(advance: advance, request: request, response: response, status: status, method: method, policy: policy,
              outcome: outcome, network: network, age: age, absentHeader: absent)
}

let etag60 = ["Cache-Control: max-age=60", "Date: {date}", "ETag: \"e1\""]

let cacheConformanceCases: [CacheCase] = {
    var cases: [CacheCase] = [
        // §4.2.1 Calculating freshness lifetime
        CacheCase(name: "§4.2.1 max-age: fresh at 0 s is served from cache", steps: [store(), step(.hit, network: false)]),
        CacheCase(name: "§4.2.1 max-age: fresh at 59 s", steps: [store(), step(.hit, network: false, after: 59)]),
        CacheCase(name: "§4.2.1 max-age: stale at 61 s without validator is fetched again", steps: [store(), step(.miss, network: true, after: 61)]),
        CacheCase(name: "§4.2.1 max-age: stale at 61 s with ETag is revalidated", steps: [store(etag60), step(.revalidated, network: true, after: 61, response: etag60)]),
        CacheCase(name: "§4.2.1 Expires in the future gives freshness", steps: [store(["Date: {date}", "Expires: {date+60}"]), step(.hit, network: false, after: 30)]),
        CacheCase(name: "§4.2.1 Expires in the past is stale", steps: [store(["Date: {date}", "Expires: {date-60}"]), step(.miss, network: true)]),
        CacheCase(name: "§5.3 an invalid Expires (0) means already expired", steps: [store(["Date: {date}", "Expires: 0"]), step(.miss, network: true)]),
        CacheCase(name: "§4.2.1 max-age wins over Expires", steps: [store(["Cache-Control: max-age=10", "Date: {date}", "Expires: {date+3600}"]), step(.miss, network: true, after: 20)]),
        CacheCase(name: "§5.2.2.10 s-maxage is ignored by a private cache", steps: [store(["Cache-Control: s-maxage=3600", "Date: {date}"]), step(.miss, network: true, after: 1)]),
        // §4.2.3 Calculating age
        CacheCase(name: "§4.2.3 Age from upstream counts toward the current age", steps: [store(["Cache-Control: max-age=60", "Date: {date}", "Age: 50"]), step(.miss, network: true, after: 11)]),
        CacheCase(name: "§4.2.3 Age from upstream: still fresh within the rest", steps: [store(["Cache-Control: max-age=60", "Date: {date}", "Age: 50"]), step(.hit, network: false, after: 5)]),
        CacheCase(name: "§4.2.3 an old Date makes an apparent age", steps: [store(["Cache-Control: max-age=60", "Date: {date-30}"]), step(.miss, network: true, after: 31)]),
        CacheCase(name: "§5.1 Age on a served response is its current age", steps: [store(), step(.hit, network: false, after: 42, age: "42")]),
        CacheCase(name: "§5.1 Age includes upstream Age", steps: [store(["Cache-Control: max-age=60", "Date: {date}", "Age: 10"]), step(.hit, network: false, after: 5, age: "15")]),
        // §4.2.2 Heuristic freshness
        CacheCase(name: "§4.2.2 heuristic: 10% of the time since Last-Modified", steps: [store(["Date: {date}", "Last-Modified: {date-1000}"]), step(.hit, network: false, after: 50)]),
        CacheCase(name: "§4.2.2 heuristic: stale after 10% of the time since Last-Modified", steps: [store(["Date: {date}", "Last-Modified: {date-1000}"]), step(.revalidated, network: true, after: 150, response: ["Date: {date}", "Last-Modified: {date-1150}"])]),
        CacheCase(name: "§4.2.2 heuristic: capped at a day", steps: [store(["Date: {date}", "Last-Modified: {date-8640000}"]), step(.hit, network: false, after: 86000)]),
        CacheCase(name: "§4.2.2 no explicit or heuristic freshness: every request goes out", steps: [store(["Date: {date}"]), step(.miss, network: true)]),
        // §5.2.2 Response directives
        CacheCase(name: "§5.2.2.5 no-store is never stored", steps: [store(["Cache-Control: no-store, max-age=60", "Date: {date}"]), step(.miss, network: true)]),
        CacheCase(name: "§5.2.2.4 no-cache is revalidated even when fresh", steps: [store(["Cache-Control: no-cache, max-age=60", "Date: {date}", "ETag: \"n\""]), step(.revalidated, network: true, response: ["Cache-Control: no-cache, max-age=60", "Date: {date}", "ETag: \"n\""])]),
        CacheCase(name: "§5.2.2.4 no-cache without a validator is fetched again", steps: [store(["Cache-Control: no-cache, max-age=60", "Date: {date}"]), step(.miss, network: true)]),
        CacheCase(name: "§5.2.2.7 private is stored by a private cache", steps: [store(["Cache-Control: private, max-age=60", "Date: {date}"]), step(.hit, network: false, after: 10)]),
        CacheCase(name: "§5.2.2.9 public is stored", steps: [store(["Cache-Control: public, max-age=60", "Date: {date}"]), step(.hit, network: false, after: 10)]),
        CacheCase(name: "§5.2.2.2 must-revalidate forbids serving stale under max-stale", steps: [store(["Cache-Control: max-age=10, must-revalidate", "Date: {date}"]), step(.miss, network: true, after: 20, request: ["Cache-Control": "max-stale=60"])]),
        CacheCase(name: "RFC 8246 immutable is served while fresh", steps: [store(["Cache-Control: max-age=60, immutable", "Date: {date}"]), step(.hit, network: false, after: 30)]),
        CacheCase(name: "RFC 5861 §3 stale-while-revalidate serves stale at once", steps: [store(["Cache-Control: max-age=10, stale-while-revalidate=30", "Date: {date}"]), step(.stale, network: nil, after: 20)]),
        CacheCase(name: "RFC 5861 §3 past the stale-while-revalidate window the request waits", steps: [store(["Cache-Control: max-age=10, stale-while-revalidate=30", "Date: {date}"]), step(.miss, network: true, after: 50)]),
        CacheCase(name: "RFC 5861 §4 stale-if-error answers a 500", steps: [store(["Cache-Control: max-age=10, stale-if-error=60", "Date: {date}"]), step(.stale, network: true, after: 20, status: 500)]),
        CacheCase(name: "RFC 5861 §4 stale-if-error window passed: the 500 is the answer", steps: [store(["Cache-Control: max-age=10, stale-if-error=60", "Date: {date}"]), step(.miss, network: true, after: 100, status: 500)]),
        // §5.2.1 Request directives
        CacheCase(name: "§5.2.1.1 request max-age=0 revalidates a fresh response", steps: [store(etag60), step(.revalidated, network: true, after: 1, request: ["Cache-Control": "max-age=0"], response: etag60)]),
        CacheCase(name: "§5.2.1.1 request max-age older than the response: fetched", steps: [store(), step(.miss, network: true, after: 40, request: ["Cache-Control": "max-age=30"])]),
        CacheCase(name: "§5.2.1.1 request max-age younger than the response: served", steps: [store(), step(.hit, network: false, after: 20, request: ["Cache-Control": "max-age=30"])]),
        CacheCase(name: "§5.2.1.2 max-stale without a value accepts any staleness", steps: [store(), step(.stale, network: false, after: 500, request: ["Cache-Control": "max-stale"])]),
        CacheCase(name: "§5.2.1.2 max-stale within its value", steps: [store(), step(.stale, network: false, after: 70, request: ["Cache-Control": "max-stale=20"])]),
        CacheCase(name: "§5.2.1.2 max-stale exceeded", steps: [store(), step(.miss, network: true, after: 90, request: ["Cache-Control": "max-stale=20"])]),
        CacheCase(name: "§5.2.1.3 min-fresh not met", steps: [store(), step(.miss, network: true, after: 40, request: ["Cache-Control": "min-fresh=30"])]),
        CacheCase(name: "§5.2.1.3 min-fresh met", steps: [store(), step(.hit, network: false, after: 10, request: ["Cache-Control": "min-fresh=30"])]),
        CacheCase(name: "§5.2.1.4 request no-cache validates first", steps: [store(etag60), step(.revalidated, network: true, request: ["Cache-Control": "no-cache"], response: etag60)]),
        CacheCase(name: "§5.4 Pragma: no-cache validates first", steps: [store(etag60), step(.revalidated, network: true, request: ["Pragma": "no-cache"], response: etag60)]),
        CacheCase(name: "§5.4 Pragma is ignored when Cache-Control is present", steps: [store(), step(.hit, network: false, request: ["Pragma": "no-cache", "Cache-Control": "max-age=3600"])]),
        CacheCase(name: "§5.2.1.7 only-if-cached with a fresh response", steps: [store(), step(.hit, network: false, request: ["Cache-Control": "only-if-cached"])]),
        CacheCase(name: "§5.2.1.7 only-if-cached with nothing stored is a 504", steps: [step(.unsatisfiable, network: false, request: ["Cache-Control": "only-if-cached"])]),
        CacheCase(name: "§5.2.1.7 only-if-cached with only a stale response is a 504", steps: [store(), step(.unsatisfiable, network: false, after: 100, request: ["Cache-Control": "only-if-cached"])]),
        CacheCase(name: "§5.2.1.5 request no-store: the response is not stored", steps: [store(request: ["Cache-Control": "no-store"]), step(.miss, network: true)]),
        // §3 Storing responses
        CacheCase(name: "§3 a response to POST is not stored", steps: [step(.miss, network: true, method: .post), step(.miss, network: true)]),
        CacheCase(name: "§3 206 is not stored", steps: [store(status: 206), step(.miss, network: true)]),
        CacheCase(name: "§3 201 with explicit freshness is stored", steps: [store(status: 201), step(.hit, network: false)]),
        CacheCase(name: "§4.2.2 404 is heuristically cacheable; with max-age it is stored", steps: [store(status: 404), step(.hit, network: false)]),
        CacheCase(name: "§3 a status that is not heuristically cacheable is not stored without freshness", steps: [store(["Date: {date}", "Last-Modified: {date-1000}"], status: 418), step(.miss, network: true, status: 418)]),
        CacheCase(name: "§3.5 binds shared caches only: a private cache stores an authorized response for the same credentials", steps: [store(request: ["Authorization": "Bearer a"]), step(.hit, network: false, request: ["Authorization": "Bearer a"])]),
        CacheCase(name: "§3.5 public allows storing an authorized response", steps: [store(["Cache-Control: public, max-age=60", "Date: {date}"], request: ["Authorization": "Bearer a"]), step(.hit, network: false, request: ["Authorization": "Bearer a"])]),
        CacheCase(name: "§3.5 must-revalidate allows storing an authorized response", steps: [store(["Cache-Control: must-revalidate, max-age=60", "Date: {date}"], request: ["Authorization": "Bearer a"]), step(.hit, network: false, request: ["Authorization": "Bearer a"])]),
        CacheCase(name: "§3.5 s-maxage allows storing an authorized response", steps: [store(["Cache-Control: s-maxage=60, max-age=60", "Date: {date}"], request: ["Authorization": "Bearer a"]), step(.hit, network: false, request: ["Authorization": "Bearer a"])]),
        CacheCase(name: "§3.5 another credential never gets it", steps: [store(["Cache-Control: public, max-age=60", "Date: {date}"], request: ["Authorization": "Bearer a"]), step(.miss, network: true, request: ["Authorization": "Bearer b"], response: ["Cache-Control: public, max-age=60", "Date: {date}"])]),
        CacheCase(name: "§3.1 headers listed in Connection are not stored", steps: [store(["Cache-Control: max-age=60", "Date: {date}", "Connection: X-Hop", "X-Hop: 1"]), step(.hit, network: false, absent: "X-Hop")]),
        CacheCase(name: "§3.1 Keep-Alive is not stored", steps: [store(["Cache-Control: max-age=60", "Date: {date}", "Keep-Alive: timeout=5"]), step(.hit, network: false, absent: "Keep-Alive")]),
        // §4.1 Vary
        CacheCase(name: "§4.1 Vary: same value matches", steps: [store(["Cache-Control: max-age=60", "Date: {date}", "Vary: Accept-Language"], request: ["Accept-Language": "fr"]), step(.hit, network: false, request: ["Accept-Language": "fr"])]),
        CacheCase(name: "§4.1 Vary: another value does not", steps: [store(["Cache-Control: max-age=60", "Date: {date}", "Vary: Accept-Language"], request: ["Accept-Language": "fr"]), step(.miss, network: true, request: ["Accept-Language": "de"], response: ["Cache-Control: max-age=60", "Date: {date}", "Vary: Accept-Language"])]),
        CacheCase(name: "§4.1 Vary: values match after whitespace normalisation", steps: [store(["Cache-Control: max-age=60", "Date: {date}", "Vary: X-Thing"], request: ["X-Thing": "a,  b"]), step(.hit, network: false, request: ["X-Thing": "a, b"])]),
        CacheCase(name: "§4.1 Vary: absent in both matches", steps: [store(["Cache-Control: max-age=60", "Date: {date}", "Vary: X-Absent"]), step(.hit, network: false)]),
        CacheCase(name: "§4.1 Vary: absent in one does not match", steps: [store(["Cache-Control: max-age=60", "Date: {date}", "Vary: X-Thing"]), step(.miss, network: true, request: ["X-Thing": "1"], response: ["Cache-Control: max-age=60", "Date: {date}", "Vary: X-Thing"])]),
        CacheCase(name: "§4.1 Vary: * never matches", steps: [store(["Cache-Control: max-age=60", "Date: {date}", "Vary: *"]), step(.miss, network: true, response: ["Cache-Control: max-age=60", "Date: {date}", "Vary: *"])]),
        CacheCase(name: "§4.1 several variants are kept side by side", steps: [
            store(["Cache-Control: max-age=60", "Date: {date}", "Vary: X-Variant"], request: ["X-Variant": "a"]),
            step(.miss, network: true, request: ["X-Variant": "b"], response: ["Cache-Control: max-age=60", "Date: {date}", "Vary: X-Variant"]),
            step(.hit, network: false, request: ["X-Variant": "a"]), step(.hit, network: false, request: ["X-Variant": "b"]),
        ]),
        // §4.3 Validation
        CacheCase(name: "§4.3.1 Last-Modified alone validates with If-Modified-Since", steps: [
            store(["Cache-Control: max-age=10", "Date: {date}", "Last-Modified: Mon, 01 Jan 2024 00:00:00 GMT"]),
            step(.revalidated, network: true, after: 20, response: ["Cache-Control: max-age=10", "Date: {date}", "Last-Modified: Mon, 01 Jan 2024 00:00:00 GMT"]),
        ]),
        CacheCase(name: "§4.3.4 a 304 refreshes freshness", steps: [
            store(["Cache-Control: max-age=10", "Date: {date}", "ETag: \"r\""]),
            step(.revalidated, network: true, after: 20, response: ["Cache-Control: max-age=100", "Date: {date}", "ETag: \"r\""]),
            step(.hit, network: false, after: 90),
        ]),
        CacheCase(name: "§4.3.3 a new representation on validation replaces the stored one", steps: [
            store(["Cache-Control: max-age=10", "Date: {date}", "ETag: \"old\""]),
            step(.miss, network: true, after: 20, response: ["Cache-Control: max-age=60", "Date: {date}", "ETag: \"new\""]),
            step(.hit, network: false, after: 10),
        ]),
        // §4.3.5 HEAD
        CacheCase(name: "§4.3.5 HEAD is answered from a stored GET", steps: [store(), step(.hit, network: false, method: .head)]),
        // §4.4 Invalidation
        CacheCase(name: "§4.4 a successful POST invalidates the URL", steps: [store(), step(.miss, network: true, method: .post, response: ["Date: {date}"]), step(.miss, network: true)]),
        CacheCase(name: "§4.4 a successful PUT invalidates the URL", steps: [store(), step(.miss, network: true, method: .put, response: ["Date: {date}"]), step(.miss, network: true)]),
        CacheCase(name: "§4.4 a successful DELETE invalidates the URL", steps: [store(), step(.miss, network: true, method: .delete, response: ["Date: {date}"]), step(.miss, network: true)]),
        CacheCase(name: "§4.4 an unknown method invalidates the URL", steps: [store(), step(.miss, network: true, method: HTTPRequest.Method("PURGE")!, response: ["Date: {date}"]), step(.miss, network: true)]),
        CacheCase(name: "§4.4 a failed POST invalidates nothing", steps: [store(), step(.miss, network: true, method: .post, response: ["Date: {date}"], status: 500), step(.hit, network: false)]),
        CacheCase(name: "§4.4 OPTIONS is safe and invalidates nothing", steps: [store(), step(.miss, network: true, method: .options, response: ["Date: {date}"]), step(.hit, network: false)]),
        // Policies (ASIHTTPRequest, issue 4 §2)
        CacheCase(name: "policy returnCacheElseLoad serves stale without the network", steps: [store(), step(.stale, network: false, after: 600, policy: .returnCacheElseLoad)]),
        CacheCase(name: "policy returnCacheElseLoad loads when nothing is stored", steps: [step(.miss, network: true, policy: .returnCacheElseLoad)]),
        CacheCase(name: "policy cacheOnly with nothing stored fails", steps: [step(nil, network: false, policy: .cacheOnly)]),
        CacheCase(name: "policy cacheOnly serves stale", steps: [store(), step(.stale, network: false, after: 600, policy: .cacheOnly)]),
        CacheCase(name: "policy reloadIgnoringCache always asks the server", steps: [store(), step(.miss, network: true, policy: .reloadIgnoringCache)]),
        CacheCase(name: "policy reloadRevalidating validates a fresh response", steps: [store(etag60), step(.revalidated, network: true, response: etag60, policy: .reloadRevalidating)]),
    ]
    // §4.2.1 boundaries for several lifetimes: fresh one second before, revalidated one second after.
    for lifetime in [1, 30, 600, 86_400] {
        let headers = ["Cache-Control: max-age=\(lifetime)", "Date: {date}", "ETag: \"b\(lifetime)\""]
        cases.append(CacheCase(name: "§4.2 max-age=\(lifetime): fresh at \(lifetime - 1) s", steps: [store(headers), step(.hit, network: false, after: TimeInterval(lifetime - 1))]))
        cases.append(CacheCase(name: "§4.2 max-age=\(lifetime): revalidated at \(lifetime + 1) s", steps: [store(headers), step(.revalidated, network: true, after: TimeInterval(lifetime + 1), response: headers)]))
    }
    // §5.6.7 of RFC 9110: the three HTTP-date formats all work in Expires.
    for (format, expires) in [("IMF-fixdate", "{date+60}"), ("RFC 850", "{rfc850+60}"), ("asctime", "{asctime+60}")] {
        cases.append(CacheCase(name: "§5.3 Expires in \(format) format", steps: [store(["Date: {date}", "Expires: \(expires)"]), step(.hit, network: false, after: 30)]))
    }
    return cases
}()

/// Tier 3: the cache's rules, case by case, through the engine, the queue and async-http-client, against
/// the in-process server, with the cache's clock moved by hand (no sleeps).
@Suite("Cache conformance against the in-process server")
struct CacheConformanceTests {
    @Test func theTableIsLargeEnough() {
        #expect(cacheConformanceCases.count >= 80)
    }

    @Test(arguments: cacheConformanceCases)
    func conformance(_ testCase: CacheCase) async throws {
        let clock = TestClock()
        let cache = ResponseCache(directory: nil, clock: { clock.now })
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let engine = NetworkEngine(
            host: "127.0.0.1", port: server.port, isSecure: false,
            configuration: .init {
                $0.cache = cache
                $0.acceptableStatusCodes = Set(100..<600)
                $0.redirects = .disabled
            }, queue: NetworkQueue())
        let path = "/respond/case"
        for (index, step) in testCase.steps.enumerated() {
            clock.advance(step.advance)
            let op = engine.operation(path: path, method: step.method)
            for (name, value) in step.request { op.setHeader(value, forName: name) }
            op.setHeader(String(step.status), forName: "X-Respond-Status")
            let lines = step.response.map { Self.expand($0, now: clock.now) }.joined(separator: "\n")
            op.setHeader(Data(lines.utf8).base64EncodedString(), forName: "X-Respond-Headers")
            if let policy = step.policy { op.cachePolicy = policy }
            let before = server.requestCount(path: path)
            let outcome: CacheOutcome?
            var response: NetworkResponse?
            do {
                response = try await engine.send(op)
                outcome = response?.cacheOutcome
            } catch {
                outcome = error.response?.cacheOutcome
            }
            let asked = server.requestCount(path: path) > before
            #expect(outcome == step.outcome, "step \(index + 1)")
            if let network = step.network { #expect(asked == network, "step \(index + 1): server asked: \(asked)") }
            if let age = step.age { #expect(response?.headers[.age] == age, "step \(index + 1)") }
            if let absent = step.absentHeader, let name = HTTPField.Name(absent) {
                #expect(response?.headers[name] == nil, "step \(index + 1): \(absent) was served")
            }
        }
    }

    /// `{date}`, `{date±N}`, `{rfc850+N}`, `{asctime+N}` in a header line.
    static func expand(_ line: String, now: Date) -> String {
        guard let open = line.firstIndex(of: "{"), let close = line.firstIndex(of: "}") else { return line }
        let token = line[line.index(after: open)..<close]
        let kind = token.prefix { $0.isLetter || $0 == "8" || $0 == "5" || $0 == "0" }
        let offset = TimeInterval(token.dropFirst(kind.count)) ?? 0
        let date = now.addingTimeInterval(offset)
        let text: String
        switch kind {
        case "rfc850":
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = "EEEE, dd-MMM-yy HH:mm:ss 'GMT'"
            text = formatter.string(from: date)
        case "asctime":
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = "EEE MMM d HH:mm:ss yyyy"
            text = formatter.string(from: date).replacingOccurrences(of: #" (\d) "#, with: "  $1 ", options: .regularExpression)
        default:
            text = HTTPDate.format(date)
        }
        return line.replacingCharacters(in: open...close, with: text)
    }
}
