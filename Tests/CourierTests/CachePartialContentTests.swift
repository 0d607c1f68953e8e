import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import Testing
@testable import Courier

/// Partial content in the cache (RFC 9111 §3.3, §3.4): tier 1 rules, then tier 2 through the engine.
@Suite("Cache: partial content (RFC 9111 §3.3, §3.4)")
struct CachePartialContentTests {
    typealias Partial = CachePartialContent

    @Test(arguments: [
        ("bytes=0-4", Partial.RequestedRange.from(0, through: 4)), ("bytes=5-", .from(5, through: nil)),
        ("bytes=-3", .suffix(3)), ("BYTES = 1-2", nil), ("bytes=1-2,4-5", nil), ("bytes=5-1", nil), ("items=0-1", nil),
        ("bytes=-", nil), ("bytes=a-b", nil),
    ] as [(String, Partial.RequestedRange?)])
    func parsesRange(_ value: String, _ expected: Partial.RequestedRange?) {
        #expect(Partial.requestedRange([.range: value]) == expected, "\(value)")
    }

    @Test func resolvesRangesAgainstALength() {
        #expect(Partial.RequestedRange.from(2, through: 100).resolved(completeLength: 10) == 2...9, "last clipped (RFC 9110 §14.1.2)")
        #expect(Partial.RequestedRange.suffix(3).resolved(completeLength: 10) == 7...9)
        #expect(Partial.RequestedRange.suffix(30).resolved(completeLength: 10) == 0...9)
        #expect(Partial.RequestedRange.from(10, through: nil).resolved(completeLength: 10) == nil, "unsatisfiable")
        #expect(Partial.RequestedRange.suffix(0).resolved(completeLength: 10) == nil)
    }

    @Test func parsesContentRange() {
        #expect(Partial.span(contentRange: "bytes 0-4/10") == .init(first: 0, last: 4, completeLength: 10))
        #expect(Partial.span(contentRange: "bytes 0-4/*") == nil, "unknown length is not stored")
        #expect(Partial.span(contentRange: "bytes */10") == nil)
        #expect(Partial.span(contentRange: "bytes 5-4/10") == nil)
        #expect(Partial.span(contentRange: "bytes 0-10/10") == nil)
    }

    static func part(_ range: String?, body: String, etag: String = "\"e\"") -> CachedResponseEntry {
        var pairs: [(String, String)] = [("ETag", etag), ("Cache-Control", "max-age=60")]
        if let range { pairs.append(("Content-Range", range)) }
        var spec = CacheStoredSpec(body: body, status: range == nil ? 200 : 206, headers: pairs)
        spec.withDate = true
        return spec.entry()
    }

    @Test func combinesTouchingRangesWithTheSameStrongValidator() throws {
        let head = Self.part("bytes 0-4/10", body: "abcde"), tail = Self.part("bytes 5-9/10", body: "fghij")
        let whole = try #require(Partial.combine(head, with: tail))
        #expect(whole.status == .ok && whole.span == nil && String(decoding: whole.body, as: UTF8.self) == "abcdefghij")
        #expect(whole.headers[.contentRange] == nil && whole.headers[.contentLength] == "10")
        let overlap = try #require(Partial.combine(Self.part("bytes 0-5/10", body: "abcdef"), with: Self.part("bytes 4-7/10", body: "efgh")))
        #expect(overlap.span == .init(first: 0, last: 7, completeLength: 10) && String(decoding: overlap.body, as: UTF8.self) == "abcdefgh")
        #expect(Partial.combine(head, with: Self.part("bytes 7-9/10", body: "hij")) == nil, "a gap")
        #expect(Partial.combine(head, with: Self.part("bytes 5-9/10", body: "fghij", etag: "\"other\"")) == nil, "§3.4 other validator")
        #expect(Partial.combine(head, with: Self.part("bytes 5-9/10", body: "fghij", etag: "W/\"e\"")) == nil, "§3.4 weak validators never combine")
    }

    @Test func slicesCompleteAndPartialEntries() throws {
        let whole = Self.part(nil, body: "abcdefghij")
        let suffix = try #require(Partial.slice(whole, range: .suffix(3)))
        #expect(String(decoding: suffix.body, as: UTF8.self) == "hij" && suffix.headers[.contentRange] == "bytes 7-9/10")
        #expect(suffix.headers[.contentLength] == "3")
        let partial = Self.part("bytes 2-6/10", body: "cdefg")
        #expect(try #require(Partial.slice(partial, range: .from(3, through: 4))).body == Data("de".utf8))
        #expect(Partial.slice(partial, range: .from(5, through: 8)) == nil, "not covered")
    }

    @Test func asksOnlyForWhatIsMissing() {
        #expect(Partial.completionRequest(for: Self.part("bytes 0-4/10", body: "abcde")) == [.range: "bytes=5-", .ifRange: "\"e\""])
        #expect(Partial.completionRequest(for: Self.part("bytes 5-9/10", body: "fghij")) == [.range: "bytes=0-4", .ifRange: "\"e\""])
        #expect(Partial.completionRequest(for: Self.part("bytes 3-4/10", body: "de")) == nil, "a middle part needs two ranges")
        #expect(Partial.completionRequest(for: Self.part("bytes 0-4/10", body: "abcde", etag: "W/\"e\"")) == nil, "If-Range needs a strong validator")
    }

    // MARK: Tier 2

    /// An origin serving "abcdefghij" with ETag `"e"` (an upper-case version under any other tag),
    /// honouring single ranges and, unless `ignoresIfRange`, If-Range (RFC 9110 §13.1.5, §14).
    static func origin(etag: NIOLockedValueBox<String>, ignoresIfRange: Bool = false) -> FakeTransport {
        FakeTransport { request in
            let tag = etag.withLockedValue { $0 }
            let content = Data((tag == "\"e\"" ? "abcdefghij" : "ABCDEFGHIJ").utf8)
            var headers: HTTPFields = [.cacheControl: "max-age=600", .eTag: tag, .contentType: "text/plain"]
            let ifRange = request.headers[.ifRange]
            if let requested = Partial.requestedRange(request.headers), requested.resolved(completeLength: content.count) == nil {
                headers[.contentRange] = "bytes */\(content.count)"
                return FakeTransport.reply(status: 416, headers: headers, data: Data())
            }
            if let range = Partial.requestedRange(request.headers), ignoresIfRange || ifRange == nil || ifRange == tag,
                let bytes = range.resolved(completeLength: content.count)
            {
                headers[.contentRange] = "bytes \(bytes.lowerBound)-\(bytes.upperBound)/\(content.count)"
                return FakeTransport.reply(status: 206, headers: headers, data: content.subdata(in: bytes.lowerBound..<(bytes.upperBound + 1)))
            }
            return FakeTransport.reply(status: 200, headers: headers, data: content)
        }
    }

    func engine(_ transport: FakeTransport) -> NetworkEngine {
        NetworkEngine.fake(transport) { $0.cache = ResponseCache(directory: nil) }
    }

    func ranged(_ engine: NetworkEngine, _ value: String) -> NetworkOperation {
        engine.operation(path: "file").setHeader(value, forName: "Range")
    }

    @Test func rangeRequestsAreServedFromStoredPartsAndWholes() async throws {
        let transport = Self.origin(etag: NIOLockedValueBox("\"e\""))
        let engine = engine(transport)
        let first = try await engine.send(ranged(engine, "bytes=0-4"))
        #expect(first.statusCode == 206 && first.string == "abcde" && first.cacheOutcome == .miss)
        let again = try await engine.send(ranged(engine, "bytes=1-3"))
        #expect(again.statusCode == 206 && again.string == "bcd" && again.cacheOutcome == .hit)
        #expect(again.headers[.contentRange] == "bytes 1-3/10")
        #expect(transport.requestCount == 1)
        // A plain GET asks only for the rest, and gets the whole.
        let whole = try await engine.send(engine.operation(path: "file"))
        #expect(whole.statusCode == 200 && whole.string == "abcdefghij" && whole.headers[.contentRange] == nil)
        #expect(transport.requests.last?.headers[.range] == "bytes=5-" && transport.requests.last?.headers[.ifRange] == "\"e\"")
        #expect(try await engine.send(engine.operation(path: "file")).cacheOutcome == .hit)
        let suffix = try await engine.send(ranged(engine, "bytes=-3"))
        #expect(suffix.statusCode == 206 && suffix.string == "hij" && suffix.headers[.contentRange] == "bytes 7-9/10")
        let open = try await engine.send(ranged(engine, "bytes=8-"))
        #expect(open.string == "ij" && open.cacheOutcome == .hit)
        #expect(transport.requestCount == 2)
    }

    @Test func twoStoredRangesCombineIntoTheCompleteResponse() async throws {
        let transport = Self.origin(etag: NIOLockedValueBox("\"e\""))
        let engine = engine(transport)
        _ = try await engine.send(ranged(engine, "bytes=0-4"))
        _ = try await engine.send(ranged(engine, "bytes=5-9"))
        let whole = try await engine.send(engine.operation(path: "file"))
        #expect(whole.cacheOutcome == .hit && whole.statusCode == 200 && whole.string == "abcdefghij")
        #expect(transport.requestCount == 2)
    }

    @Test(arguments: [false, true])
    func aChangedRepresentationComesBackWholeNeverSpliced(originIgnoresIfRange: Bool) async throws {
        let etag = NIOLockedValueBox("\"e\"")
        let transport = Self.origin(etag: etag, ignoresIfRange: originIgnoresIfRange)
        let engine = engine(transport)
        _ = try await engine.send(ranged(engine, "bytes=0-4"))
        etag.withLockedValue { $0 = "\"f\"" }
        let whole = try await engine.send(engine.operation(path: "file"))
        #expect(whole.statusCode == 200 && whole.string == "ABCDEFGHIJ" && whole.headers[.eTag] == "\"f\"")
        #expect(transport.requests.dropFirst().first?.headers[.ifRange] == "\"e\"", "asked conditionally first")
        if originIgnoresIfRange {
            #expect(transport.requestCount == 3, "a 206 of the new representation is dropped and everything asked for")
            #expect(transport.requests.last?.headers[.range] == nil)
        }
        #expect(try await engine.send(engine.operation(path: "file")).string == "ABCDEFGHIJ")
    }

    @Test func a416ToTheCachesOwnRangeAsksForEverything() async throws {
        // The stored part claims a length the origin no longer has: bytes=10- is unsatisfiable now.
        let transport = FakeTransport { request in
            if request.headers[.range] == "bytes=10-" {
                return FakeTransport.reply(status: 416, headers: [.contentRange: "bytes */10", .eTag: "\"e\""], data: Data())
            }
            if request.headers[.range] == "bytes=0-9" {
                return FakeTransport.reply(status: 206, headers: [
                    .cacheControl: "max-age=600", .eTag: "\"e\"", .contentRange: "bytes 0-9/20",
                ], data: Data("0123456789".utf8))
            }
            return FakeTransport.reply(status: 200, headers: [.cacheControl: "max-age=600", .eTag: "\"e\""], data: Data("0123456789".utf8))
        }
        let engine = engine(transport)
        _ = try await engine.send(ranged(engine, "bytes=0-9"))
        let whole = try await engine.send(engine.operation(path: "file"))
        #expect(whole.statusCode == 200 && whole.string == "0123456789")
        #expect(transport.requestCount == 3 && transport.requests.last?.headers[.range] == nil)
    }

    @Test func a206WhoseBodyDoesNotMatchItsContentRangeIsNotStored() async throws {
        let transport = FakeTransport { _ in
            FakeTransport.reply(status: 206, headers: [.cacheControl: "max-age=600", .contentRange: "bytes 0-4/10"], data: Data("ab".utf8))
        }
        let engine = engine(transport)
        _ = try await engine.send(ranged(engine, "bytes=0-4"))
        let again = try await engine.send(ranged(engine, "bytes=0-4"))
        #expect(again.cacheOutcome == .miss && transport.requestCount == 2, "nothing usable was stored (and nothing crashed)")
        #expect(try await engine.send(engine.operation(path: "file")).cacheOutcome == .miss)
    }

    @Test func theCallersIfRangeDecidesBetweenAPartAndTheWhole() async throws {
        let transport = Self.origin(etag: NIOLockedValueBox("\"e\""))
        let engine = engine(transport)
        _ = try await engine.send(engine.operation(path: "file"))
        let current = try await engine.send(ranged(engine, "bytes=0-4").setHeader("\"e\"", forName: "If-Range"))
        #expect(current.statusCode == 206 && current.string == "abcde")
        let outdated = try await engine.send(ranged(engine, "bytes=0-4").setHeader("\"old\"", forName: "If-Range"))
        #expect(outdated.statusCode == 200 && outdated.string == "abcdefghij", "RFC 9110 §13.1.5: the whole representation")
        let weak = try await engine.send(ranged(engine, "bytes=0-4").setHeader("W/\"e\"", forName: "If-Range"))
        #expect(weak.statusCode == 200, "If-Range compares strongly")
        #expect(transport.requestCount == 1)
    }
}
