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

    /// The cache key found without parsing is the key `URLComponents` gives, for every URL it applies to.
    @Test(arguments: [
        "http://example.com/a?b=c", "https://example.com:8443/x", "http://127.0.0.1:18089/cache/3600?n=1",
        "http://example.com:443/", "https://example.com:80/", "http://example.com:/", "http://example.com:080/",
        "http://example.com:99999/", "http://user@example.com/", "http://user:pw@example.com/", "http://[::1]:8080/x",
        "http://ex%41mple.com/", "http://example.com./p", "http://example.com/a%20b?c=%2F", "http://example.com/?",
        "http://example.com/a?b#c", "http://example.com/a/../b", "http://example.com/caf%C3%A9", "http://example.com",
        "http://h/a b", "http://h/a|b", "http://\u{E9}.com/", "http://xn--9ca.com/", "http://h/{x}", "http://h/a\\b", "http://-h-/", "http://h_1/", "http://1.2.3.4:1/",
    ])
    func theCacheKeyWithoutParsingIsTheParsedKey(_ string: String) throws {
        guard let url = URL(string: string) else { return }
        if let fast = CacheURLKey.normalKey(url.absoluteString) {
            #expect(fast == CacheURLKey.parsedKey(for: url))
        }
        #expect(CacheURLKey.key(for: url) == CacheURLKey.parsedKey(for: url))
    }

    /// The same over random URLs built from the characters that matter (seeded, so a failure repeats).
    @Test func theCacheKeyWithoutParsingMatchesOnRandomURLs() {
        var generator = SplitMix64(seed: 24)
        let pieces = ["http://", "https://", "HTTP://", "h", "H", "x.y", ":", "80", "443", "0", "8080", "@", "/", "?", "#",
                      "%2F", "%41", "a", "-", ".", "..", "[", "]", "::1", " ", "|", "é", "=", "&"]
        var checked = 0
        for _ in 0..<20_000 {
            let string = (0..<Int.random(in: 2...9, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined()
            guard let url = URL(string: string), url.baseURL == nil else { continue }
            if let fast = CacheURLKey.normalKey(url.absoluteString) {
                checked += 1
                #expect(fast == CacheURLKey.parsedKey(for: url), "\(string)")
            }
        }
        #expect(checked > 50, "the generator reaches URLs of the cheap form")
    }
}

/// Tier 1: what an entry parses once when stored gives the answers the headers give when parsed on
/// every lookup.
@Suite("Cache entry facts")
struct CacheEntryFactsTests {
    @Test(arguments: [
        ["Cache-Control": "max-age=60"], ["Cache-Control": "max-age=abc"], ["Cache-Control": "public"],
        ["Expires": "Thu, 01 Jan 2099 00:00:00 GMT"], ["Expires": "0"], ["Last-Modified": "Mon, 01 Jan 2024 00:00:00 GMT"],
        ["Last-Modified": "Mon, 01 Jan 2024 00:00:00 GMT", "Cache-Control": "public"], ["Age": "30", "Cache-Control": "max-age=100"],
        ["Date": "Sat, 01 Jan 2050 00:00:00 GMT", "Cache-Control": "max-age=10"], ["Date": "garbage", "Age": "5"],
        ["Cache-Control": "no-cache, max-age=5", "Pragma": "no-cache"], [:],
    ])
    func factsAgreeWithTheHeaders(_ fields: [String: String]) throws {
        var headers = HTTPFields()
        for (name, value) in fields.sorted(by: { $0.key < $1.key }) { headers.append(HTTPField(name: try #require(HTTPField.Name(name)), value: value)) }
        let requestTime = Date(timeIntervalSince1970: 1_800_000_000)
        let responseTime = requestTime.addingTimeInterval(2)
        for status in [HTTPResponse.Status.ok, .notFound, .init(code: 299)] {
            var entry = CachedResponseEntry(
                url: URL(string: "https://example.com/x")!, status: status, headers: headers, body: Data(),
                requestTime: requestTime, responseTime: responseTime)
            for (now, cap) in [(responseTime, 86_400), (responseTime.addingTimeInterval(500), 100), (responseTime.addingTimeInterval(1e7), -1)] {
                let evaluation = CacheFreshness.evaluate(entry, now: now, heuristicCap: cap)
                #expect(evaluation.lifetime == CacheFreshness.freshnessLifetime(status: status, headers: headers, responseTime: responseTime, heuristicCap: cap))
                #expect(evaluation.age == CacheFreshness.currentAge(headers: headers, requestTime: requestTime, responseTime: responseTime, now: now))
                #expect(entry.facts.control == CacheControl(responseHeaders: headers))
            }
            // An update (a 304's headers) is parsed again.
            entry.headers[.cacheControl] = "max-age=7"
            #expect(CacheFreshness.evaluate(entry, now: responseTime).lifetime == 7)
        }
    }

    /// Trust, HTTP versions and proxies live in one shared box: options with equal settings are equal
    /// (and hash alike) whichever box holds them, and changing one setting changes only that copy.
    @Test func connectionSettingsCompareByValueAndCopyOnChange() throws {
        let pinned = TrustPolicy(pins: [try CertificatePin(host: "api.example.com", ["sha256/" + Data(repeating: 1, count: 32).base64EncodedString()])])
        let a = TransportOptions(trust: pinned)
        let b = TransportOptions(trust: pinned)
        #expect(a.connection !== b.connection && a == b && a.hashValue == b.hashValue)
        #expect(TransportOptions().connection === ConnectionSettings.standard, "an engine that changed nothing shares the standard box")
        #expect(TransportOptions().connection.isPlain && !a.connection.isPlain)
        var c = a
        c.proxy = .all(.http(host: "proxy.local"))
        #expect(c != a && a.trust == pinned && c.trust == pinned && a.proxy == .none)
        #expect(!TransportOptions(proxy: .all(.socks5(host: "s"))).connection.isPlain)
        c.proxy = .none
        #expect(c == a)
        var d = a
        d.httpVersions = .http1Only
        #expect(d != a && d.hashValue != a.hashValue && a.httpVersions == .automatic)
    }

    /// A prepared request's settings are shared by its copies; setting one on a copy leaves the others.
    @Test func preparedRequestSettingsAreCopiedOnWrite() {
        let original = PreparedRequest(
            method: .get, url: URL(string: "http://h/x")!, headers: [:], body: nil, options: TransportOptions(),
            redirects: .follow(), maximumBodySize: 1 << 20, totalTimeout: nil, logger: .courierSilent, isMonitored: true)
        var copy = original
        copy.sensitiveNames = ["x-key"]
        copy.maximumBodySize = 5
        copy.totalTimeout = .seconds(1)
        #expect(original.sensitiveNames == SensitiveHeaders.defaultNames && original.maximumBodySize == 1 << 20 && original.totalTimeout == nil)
        #expect(copy.sensitiveNames == ["x-key"] && copy.maximumBodySize == 5 && copy.totalTimeout == .seconds(1))
        #expect(copy.isMonitored && original.isMonitored, "the other settings come along")
    }
}
