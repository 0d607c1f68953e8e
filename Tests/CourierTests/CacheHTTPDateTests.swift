import Foundation
import Testing
@testable import Courier

@Suite("Cache: HTTP-date (RFC 9110 §5.6.7)")
struct CacheHTTPDateTests {
    struct ParseCase: Sendable, CustomTestStringConvertible {
        var description: String
        var input: String
        /// Seconds since the epoch, or nil for "invalid".
        var expected: Double?
        /// Reference for RFC 850 two-digit years, in seconds since the epoch.
        var reference: Double?
        var testDescription: String { description }
    }

    static let parseCases: [ParseCase] = [
        .init(description: "§5.6.7 IMF-fixdate", input: "Sun, 06 Nov 1994 08:49:37 GMT", expected: 784_111_777),
        .init(description: "§5.6.7 obsolete RFC 850 format", input: "Sunday, 06-Nov-94 08:49:37 GMT", expected: 784_111_777),
        .init(description: "§5.6.7 asctime format with a space-padded day", input: "Sun Nov  6 08:49:37 1994", expected: 784_111_777),
        .init(description: "§5.6.7 asctime format with a two-digit day", input: "Wed Nov 16 08:49:37 1994", expected: 784_975_777),
        .init(description: "RFC 9111 §4.2 dates match case-insensitively (IMF-fixdate)", input: "sun, 06 NOV 1994 08:49:37 gmt", expected: 784_111_777),
        .init(description: "RFC 9111 §4.2 dates match case-insensitively (RFC 850)", input: "SUNDAY, 06-nov-94 08:49:37 Gmt", expected: 784_111_777),
        .init(description: "§5.6.7 surrounding whitespace is ignored", input: "  Sun, 06 Nov 1994 08:49:37 GMT\t", expected: 784_111_777),
        .init(description: "§5.6.7 the epoch", input: "Thu, 01 Jan 1970 00:00:00 GMT", expected: 0),
        .init(description: "§5.6.7 a date before the epoch", input: "Sat, 01 Jan 1966 00:00:00 GMT", expected: -126_230_400),
        .init(description: "§5.6.7 29 February of a leap year", input: "Thu, 29 Feb 2024 00:00:00 GMT", expected: 1_709_164_800),
        .init(description: "§5.6.7 a leap second rolls into the next minute", input: "Sun, 06 Nov 1994 08:49:60 GMT", expected: 784_111_800),
        .init(description: "§5.6.7 RFC 850 year read against a reference: 80 in 2090 is 2080",
              input: "Monday, 01-Jan-80 00:00:00 GMT", expected: 3_471_292_800, reference: 3_471_292_800 + 10 * 31_557_600),
        .init(description: "§5.6.7 RFC 850 year more than 50 years ahead is in the past: 99 in 2026 is 1999",
              input: "Friday, 01-Jan-99 00:00:00 GMT", expected: 915_148_800, reference: 1_767_225_600),
        .init(description: "§5.6.7 RFC 850 year without a reference: 80 is 1980", input: "Tuesday, 01-Jan-80 00:00:00 GMT", expected: 315_532_800),
        .init(description: "§5.6.7 RFC 850 year without a reference: 30 is 2030", input: "Tuesday, 01-Jan-30 00:00:00 GMT", expected: 1_893_456_000),
        .init(description: "RFC 9111 §5.3 \"0\" is not a date", input: "0", expected: nil),
        .init(description: "§5.6.7 the empty string is not a date", input: "", expected: nil),
        .init(description: "RFC 9111 §4.2 zones other than GMT are invalid", input: "Sun, 06 Nov 1994 08:49:37 UTC", expected: nil),
        .init(description: "§5.6.7 numeric offsets are invalid", input: "Sun, 06 Nov 1994 08:49:37 +0000", expected: nil),
        .init(description: "§5.6.7 hour 25 is invalid", input: "Sun, 06 Nov 1994 25:49:37 GMT", expected: nil),
        .init(description: "§5.6.7 31 April is invalid", input: "Sun, 31 Apr 1994 08:49:37 GMT", expected: nil),
        .init(description: "§5.6.7 29 February of a common year is invalid", input: "Wed, 29 Feb 2023 00:00:00 GMT", expected: nil),
        .init(description: "§5.6.7 IMF-fixdate needs a two-digit day", input: "Sun, 6 Nov 1994 08:49:37 GMT", expected: nil),
        .init(description: "§5.6.7 unknown day names are invalid", input: "Xyz, 06 Nov 1994 08:49:37 GMT", expected: nil),
        .init(description: "§5.6.7 unknown month names are invalid", input: "Sun, 06 Nox 1994 08:49:37 GMT", expected: nil),
        .init(description: "§5.6.7 trailing garbage is invalid", input: "Sun, 06 Nov 1994 08:49:37 GMT x", expected: nil),
        .init(description: "§5.6.7 non-ASCII look-alikes are invalid", input: "Sun, 06 Növ 1994 08:49:37 GMT", expected: nil),
        .init(description: "§5.6.7 ISO 8601 is not an HTTP-date", input: "1994-11-06T08:49:37Z", expected: nil),
        .init(description: "§5.6.7 a lone comma is not a date", input: ",", expected: nil),
    ]

    @Test(arguments: parseCases)
    func parses(_ testCase: ParseCase) {
        let parsed = HTTPDate.parse(testCase.input,
                                    twoDigitYearReference: testCase.reference.map(Date.init(timeIntervalSince1970:)))
        #expect(parsed?.timeIntervalSince1970 == testCase.expected)
    }

    struct FormatCase: Sendable, CustomTestStringConvertible {
        var description: String
        var seconds: Double
        var expected: String
        var testDescription: String { description }
    }

    static let formatCases: [FormatCase] = [
        .init(description: "§5.6.7 formats IMF-fixdate", seconds: 784_111_777, expected: "Sun, 06 Nov 1994 08:49:37 GMT"),
        .init(description: "§5.6.7 fractions of a second are dropped", seconds: 784_111_777.9, expected: "Sun, 06 Nov 1994 08:49:37 GMT"),
        .init(description: "§5.6.7 formats the epoch", seconds: 0, expected: "Thu, 01 Jan 1970 00:00:00 GMT"),
        .init(description: "§5.6.7 formats the second before the epoch", seconds: -1, expected: "Wed, 31 Dec 1969 23:59:59 GMT"),
        .init(description: "§5.6.7 formats a leap day", seconds: 1_709_164_800, expected: "Thu, 29 Feb 2024 00:00:00 GMT"),
        .init(description: "§5.6.7 far-future dates are clamped to year 9999", seconds: .infinity, expected: "Fri, 31 Dec 9999 23:59:59 GMT"),
    ]

    @Test(arguments: formatCases)
    func formats(_ testCase: FormatCase) {
        #expect(HTTPDate.format(Date(timeIntervalSince1970: testCase.seconds)) == testCase.expected)
    }

    @Test("§5.6.7 formatting then parsing is the identity on whole seconds")
    func roundTrips() {
        for seconds in stride(from: -4_000_000_000.0, through: 8_000_000_000, by: 86_399 * 37 + 0.5) {
            let date = Date(timeIntervalSince1970: seconds.rounded(.down))
            #expect(HTTPDate.parse(HTTPDate.format(date)) == date)
        }
    }
}
