import Foundation
import Testing
@testable import Courier

/// Fixtures shared by the cache suites. Every time is an offset in seconds from `CacheFixture.base`
/// (Sun, 06 Nov 1994 08:49:37 GMT); no test reads a clock.
enum CacheFixture {
    /// The reference instant, 784111777 seconds after the epoch.
    static let base = Date(timeIntervalSince1970: 784_111_777)
    /// The default target URI.
    static let url = "https://example.com/r"

    /// `base` moved by `offset` seconds.
    static func time(_ offset: Double) -> Date { base.addingTimeInterval(offset) }

    /// The IMF-fixdate of `time(offset)`.
    static func httpDate(_ offset: Double) -> String { HTTPDate.format(time(offset)) }

    /// Header fields from name/value pairs, in order; a pair with an invalid name is a test bug.
    static func fields(_ pairs: [(String, String)]) -> HTTPFields {
        var fields = HTTPFields()
        for (name, value) in pairs {
            guard let fieldName = HTTPField.Name(name) else {
                Issue.record("invalid field name in fixture: \(name)")
                continue
            }
            fields.append(HTTPField(name: fieldName, value: value))
        }
        return fields
    }

    /// Header fields as comparable, order-insensitive pairs with lowercased names.
    static func normalizedPairs(_ fields: HTTPFields) -> [String] {
        fields.map { "\($0.name.canonicalName): \($0.value)" }.sorted()
    }

    /// A URL from a fixture string; an unparsable one is a test bug and yields a placeholder.
    static func makeURL(_ string: String) -> URL {
        guard let url = URL(string: string) else {
            Issue.record("invalid URL in fixture: \(string)")
            return URL(fileURLWithPath: "/invalid")
        }
        return url
    }
}

/// A stored response, described as data.
struct CacheStoredSpec: Sendable {
    /// Identifies the entry in expectations (stored as its body).
    var body = "a"
    var status = 200
    /// Response header fields. A `Date` equal to the response time is added unless one is given or
    /// `withDate` is false.
    var headers: [(String, String)] = []
    /// The request fields that produced it (for Vary selection).
    var requestHeaders: [(String, String)] = []
    var url = CacheFixture.url
    /// When the response arrived, as an offset from the base time.
    var responseOffset: Double = 0
    /// How long before the response the request was sent.
    var requestDelay: Double = 0
    var withDate = true
    var partition: String?

    /// The entry, built the way the cache builds it (`CachedResponseEntry.storing`).
    func entry() -> CachedResponseEntry {
        var pairs = headers
        if withDate, !pairs.contains(where: { $0.0.lowercased() == "date" }) {
            pairs.append(("Date", CacheFixture.httpDate(responseOffset)))
        }
        return CachedResponseEntry.storing(
            url: CacheFixture.makeURL(url),
            requestHeaders: CacheFixture.fields(requestHeaders),
            status: HTTPResponse.Status(code: status),
            responseHeaders: CacheFixture.fields(pairs),
            body: Data(body.utf8),
            requestTime: CacheFixture.time(responseOffset - requestDelay),
            responseTime: CacheFixture.time(responseOffset),
            credentialPartition: partition
        )
    }
}

/// A lookup decision reduced to what the tables compare: entries are named by their body.
enum CacheLookupOutcome: Sendable, Equatable, CustomStringConvertible {
    case fresh(body: String = "a", age: Int, omitBody: Bool = false)
    case stale(body: String = "a", age: Int, background: Bool, omitBody: Bool = false)
    case revalidate(body: String = "a", conditional: [String] = [])
    case miss
    case unsatisfiable

    init(_ decision: CacheLookupDecision) {
        let name = { (entry: CachedResponseEntry) in String(decoding: entry.body, as: UTF8.self) }
        switch decision {
        case .fresh(let entry, let age, let omitBody):
            self = .fresh(body: name(entry), age: age, omitBody: omitBody)
        case .stale(let entry, let age, let background, let omitBody):
            self = .stale(body: name(entry), age: age, background: background, omitBody: omitBody)
        case .revalidate(let entry, let conditional):
            self = .revalidate(body: name(entry), conditional: CacheFixture.normalizedPairs(conditional))
        case .miss:
            self = .miss
        case .unsatisfiable:
            self = .unsatisfiable
        }
    }

    var description: String {
        switch self {
        case .fresh(let body, let age, let omit): "fresh(\(body), age \(age)\(omit ? ", no body" : ""))"
        case .stale(let body, let age, let bg, let omit):
            "stale(\(body), age \(age)\(bg ? ", background" : "")\(omit ? ", no body" : ""))"
        case .revalidate(let body, let conditional): "revalidate(\(body), \(conditional))"
        case .miss: "miss"
        case .unsatisfiable: "unsatisfiable"
        }
    }
}
