import Foundation

/// HTTP-date parsing and formatting (RFC 9110 §5.6.7), by hand: no `DateFormatter`, no locale, no
/// time zone, no clock.
///
/// All three formats are accepted: IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the obsolete
/// RFC 850 format (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime (`Sun Nov  6 08:49:37 1994`).
/// Names are matched case-insensitively, as RFC 9111 §4.2 asks of cache recipients; the zone must
/// be `GMT` (RFC 9111 §4.2: other zones are invalid). Leading and trailing whitespace is ignored.
/// The weekday name must be a valid one but is not checked against the date.
enum HTTPDate {
    /// Parses an HTTP-date; `nil` when `text` is not one of the three formats or names an
    /// impossible date (31 Apr, 29 Feb 2023, 24:00:00).
    ///
    /// - Parameters:
    ///   - text: The field value.
    ///   - twoDigitYearReference: For RFC 850 dates: RFC 9110 §5.6.7 reads a two-digit year that
    ///     would be more than 50 years after this date as the most recent such year in the past.
    ///     Pass the time the message was received. When `nil`, 00–69 mean 2000–2069 and 70–99 mean
    ///     1970–1999 (the reference is a parameter so parsing never reads a clock).
    static func parse(_ text: some StringProtocol, twoDigitYearReference: Date? = nil) -> Date? {
        var bytes = Array(text.utf8)
        while let last = bytes.last, last == 0x20 || last == 0x09 { bytes.removeLast() }
        let leading = bytes.prefix { $0 == 0x20 || $0 == 0x09 }.count
        bytes.removeFirst(leading)
        let lower = bytes.map { $0 >= 0x41 && $0 <= 0x5A ? $0 + 0x20 : $0 }
        guard let comma = lower.firstIndex(of: UInt8(ascii: ",")) else { return parseAsctime(lower) }
        if comma == 3 { return parseIMFFixdate(lower) }
        return parseRFC850(lower, comma: comma, reference: twoDigitYearReference)
    }

    /// Formats `date` as an IMF-fixdate (RFC 9110 §5.6.7), the only format senders may generate.
    /// Fractions of a second are dropped (rounded down); dates outside years 0001–9999 are clamped.
    static func format(_ date: Date) -> String {
        let raw = date.timeIntervalSince1970
        let lowest = Double(daysFromCivil(year: 1, month: 1, day: 1) * 86_400)
        let highest = Double(daysFromCivil(year: 9999, month: 12, day: 31) * 86_400 + 86_399)
        let clamped = raw.isNaN ? 0 : min(max(raw.rounded(.down), lowest), highest)
        let seconds = Int(clamped)
        let days = seconds.floorDivided(by: 86_400)
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = civilFromDays(days)
        let weekday = (days + 4).floorModulo(7)  // 1970-01-01 was a Thursday.
        return "\(dayNames[weekday]), \(pad(day, 2)) \(monthNames[month - 1]) \(pad(year, 4)) "
            + "\(pad(secondOfDay / 3600, 2)):\(pad(secondOfDay / 60 % 60, 2)):\(pad(secondOfDay % 60, 2)) GMT"
    }

    // MARK: - The three formats

    private static let dayNames = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let longDayNames = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"]
    private static let monthNames = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    private static let shortDays = Set(dayNames.map { Array($0.lowercased().utf8) })
    private static let longDays = Set(longDayNames.map { Array($0.utf8) })
    private static let gmt = Array("gmt".utf8)

    /// `day-name "," SP date1 SP time-of-day SP GMT`, e.g. `Sun, 06 Nov 1994 08:49:37 GMT`.
    private static func parseIMFFixdate(_ b: [UInt8]) -> Date? {
        guard b.count == 29, shortDays.contains(Array(b[0..<3])),
            b[4] == 0x20, b[7] == 0x20, b[11] == 0x20, b[16] == 0x20, b[25] == 0x20,
            Array(b[26..<29]) == gmt,
            let day = digits(b, 5, 2), let month = month(b, 8), let year = digits(b, 12, 4)
        else { return nil }
        return makeDate(year: year, month: month, day: day, time: b, at: 17)
    }

    /// `day-name-l "," SP day "-" month "-" 2DIGIT SP time-of-day SP GMT`.
    private static func parseRFC850(_ b: [UInt8], comma: Int, reference: Date?) -> Date? {
        guard b.count == comma + 24, longDays.contains(Array(b[0..<comma])),
            b[comma + 1] == 0x20, b[comma + 4] == UInt8(ascii: "-"), b[comma + 8] == UInt8(ascii: "-"),
            b[comma + 11] == 0x20, b[comma + 20] == 0x20, Array(b[(comma + 21)...]) == gmt,
            let day = digits(b, comma + 2, 2), let month = month(b, comma + 5),
            let twoDigitYear = digits(b, comma + 9, 2)
        else { return nil }
        let year = fullYear(twoDigitYear, reference: reference)
        return makeDate(year: year, month: month, day: day, time: b, at: comma + 12)
    }

    /// `day-name SP month SP ( 2DIGIT / ( SP DIGIT ) ) SP time-of-day SP year`.
    private static func parseAsctime(_ b: [UInt8]) -> Date? {
        guard b.count == 24, shortDays.contains(Array(b[0..<3])),
            b[3] == 0x20, b[7] == 0x20, b[10] == 0x20, b[19] == 0x20,
            let month = month(b, 4), let year = digits(b, 20, 4)
        else { return nil }
        let day: Int?
        if b[8] == 0x20 { day = digits(b, 9, 1) } else { day = digits(b, 8, 2) }
        guard let day else { return nil }
        return makeDate(year: year, month: month, day: day, time: b, at: 11)
    }

    /// Reads `hh:mm:ss` at `offset` and assembles the date, validating every field. A second of
    /// 60 (a leap second, RFC 9110 §5.6.7) is accepted and lands on the next minute.
    private static func makeDate(year: Int, month: Int, day: Int, time b: [UInt8], at offset: Int) -> Date? {
        guard b[offset + 2] == UInt8(ascii: ":"), b[offset + 5] == UInt8(ascii: ":"),
            let hour = digits(b, offset, 2), let minute = digits(b, offset + 3, 2),
            let second = digits(b, offset + 6, 2),
            hour < 24, minute < 60, second <= 60,
            day >= 1, day <= daysInMonth(month, year: year)
        else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        return Date(timeIntervalSince1970: Double(days * 86_400 + hour * 3600 + minute * 60 + second))
    }

    // MARK: - Pieces

    /// `count` ASCII digits at `offset` as a number, or `nil`.
    private static func digits(_ b: [UInt8], _ offset: Int, _ count: Int) -> Int? {
        guard offset >= 0, offset + count <= b.count else { return nil }
        var value = 0
        for byte in b[offset..<(offset + count)] {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return value
    }

    /// The month (1–12) whose three-letter name is at `offset`, or `nil`.
    private static func month(_ b: [UInt8], _ offset: Int) -> Int? {
        guard offset + 3 <= b.count else { return nil }
        let name = Array(b[offset..<(offset + 3)])
        guard let index = monthNames.firstIndex(where: { Array($0.lowercased().utf8) == name }) else { return nil }
        return index + 1
    }

    /// RFC 9110 §5.6.7's reading of an RFC 850 two-digit year.
    private static func fullYear(_ twoDigits: Int, reference: Date?) -> Int {
        guard let reference, reference.timeIntervalSince1970.isFinite else {
            return twoDigits < 70 ? 2000 + twoDigits : 1900 + twoDigits
        }
        let referenceSeconds = min(max(reference.timeIntervalSince1970, -1e14), 1e14)
        let referenceYear = civilFromDays(Int(referenceSeconds.rounded(.down)).floorDivided(by: 86_400)).year
        var year = referenceYear - referenceYear.floorModulo(100) + twoDigits
        if year > referenceYear + 50 { year -= 100 }
        return year
    }

    private static func isLeap(_ year: Int) -> Bool {
        year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
    }

    private static func daysInMonth(_ month: Int, year: Int) -> Int {
        switch month {
        case 2: isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's `days_from_civil`).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = y.floorDivided(by: 400)
        let yearOfEra = y - era * 400
        let shiftedMonth = (month + 9) % 12
        let dayOfYear = (153 * shiftedMonth + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The proleptic Gregorian date `days` after 1970-01-01 (H. Hinnant's `civil_from_days`).
    static func civilFromDays(_ days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = z.floorDivided(by: 146_097)
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    private static func pad(_ value: Int, _ width: Int) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}

extension Int {
    /// Division rounding towards negative infinity (calendar arithmetic before 1970).
    fileprivate func floorDivided(by divisor: Int) -> Int {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }

    /// The remainder of `floorDivided(by:)`, always in `0..<divisor` for a positive divisor.
    fileprivate func floorModulo(_ divisor: Int) -> Int {
        self - floorDivided(by: divisor) * divisor
    }
}
