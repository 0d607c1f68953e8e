import Foundation

/// The date of a cookie's `Expires` attribute, read with RFC 6265 §5.1.1's algorithm.
///
/// That algorithm is deliberately more lenient than an HTTP-date (``HTTPDate``): servers send
/// `Wed, 09 Jun 2021 10:18:14 GMT`, `Wednesday, 09-Jun-21 10:18:14 GMT`, `Wed Jun  9 10:18:14 2021`,
/// `09 Jun 2021 10:18:14`, and worse. The string is cut into tokens at delimiters; the first token that
/// looks like a time, a day of month, a month name and a year (in that order of preference) fills each
/// field; anything else is ignored. Always UTC. Linear in the input's length; never reads a clock.
enum CookieDate {
    /// Parses the value of an `Expires` attribute; `nil` when a field is missing or out of range
    /// (day 1–31 and valid for its month, year ≥ 1601, 00:00:00–23:59:59).
    /// - Parameter text: The attribute's value.
    /// - Returns: The date, UTC.
    static func parse(_ text: some StringProtocol) -> Date? {
        var time: (hour: Int, minute: Int, second: Int)?
        var day: Int?
        var month: Int?
        var year: Int?
        for token in tokens(Array(text.utf8)) {
            if time == nil, let found = parseTime(token) {
                time = found
            } else if day == nil, let found = leadingDigits(token, minimum: 1, maximum: 2) {
                day = found
            } else if month == nil, let found = parseMonth(token) {
                month = found
            } else if year == nil, let found = leadingDigits(token, minimum: 2, maximum: 4) {
                year = found
            }
        }
        guard var year, let month, let day, let time else { return nil }
        if (70...99).contains(year) { year += 1900 } else if (0...69).contains(year) { year += 2000 }
        guard day >= 1, day <= 31, year >= 1601, time.hour <= 23, time.minute <= 59, time.second <= 59,
            day <= daysInMonth(month, year: year)
        else { return nil }
        let days = HTTPDate.daysFromCivil(year: year, month: month, day: day)
        return Date(timeIntervalSince1970: Double(days * 86_400 + time.hour * 3600 + time.minute * 60 + time.second))
    }

    /// `delimiter = %x09 / %x20-2F / %x3B-40 / %x5B-60 / %x7B-7E`.
    private static func isDelimiter(_ byte: UInt8) -> Bool {
        byte == 0x09 || (0x20...0x2F).contains(byte) || (0x3B...0x40).contains(byte)
            || (0x5B...0x60).contains(byte) || (0x7B...0x7E).contains(byte)
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    /// The runs of non-delimiters.
    private static func tokens(_ bytes: [UInt8]) -> [ArraySlice<UInt8>] {
        bytes.split(whereSeparator: isDelimiter)
    }

    /// `minimum…maximum` digits, then nothing or a non-digit followed by anything.
    private static func leadingDigits(_ token: ArraySlice<UInt8>, minimum: Int, maximum: Int) -> Int? {
        let run = token.prefix(while: isDigit)
        guard run.count >= minimum, run.count <= maximum else { return nil }
        return run.reduce(0) { $0 * 10 + Int($1 - 0x30) }
    }

    /// `hms-time ( non-digit *OCTET )` with `hms-time = time-field ":" time-field ":" time-field` and
    /// `time-field = 1*2DIGIT`.
    private static func parseTime(_ token: ArraySlice<UInt8>) -> (Int, Int, Int)? {
        var rest = token[...]
        var fields: [Int] = []
        for index in 0..<3 {
            let run = rest.prefix(while: isDigit)
            guard (1...2).contains(run.count) else { return nil }
            fields.append(run.reduce(0) { $0 * 10 + Int($1 - 0x30) })
            rest = rest.dropFirst(run.count)
            if index < 2 {
                guard rest.first == UInt8(ascii: ":") else { return nil }
                rest = rest.dropFirst()
            }
        }
        if let next = rest.first, isDigit(next) { return nil }
        return (fields[0], fields[1], fields[2])
    }

    private static let months: [[UInt8]] = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
        .map { Array($0.utf8) }

    /// A token starting with a month's three-letter name (case-insensitive).
    private static func parseMonth(_ token: ArraySlice<UInt8>) -> Int? {
        guard token.count >= 3 else { return nil }
        let prefix = token.prefix(3).map { $0 >= 0x41 && $0 <= 0x5A ? $0 + 0x20 : $0 }
        return months.firstIndex(of: prefix).map { $0 + 1 }
    }

    private static func daysInMonth(_ month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }
}
