import Foundation

/// The values the `courier` command line takes, parsed and range-checked in one place: seconds, a
/// bandwidth in bytes per second, a whole number in a range, a pixel box, the file name `download` takes
/// from a URL. Every command's options go
/// through these (`Sources/courier`), and so does the fuzz harness (`FuzzEntryPoints.Parser.optionValues`).
///
/// Nothing here traps, whatever the text: a value that is not a plain decimal number, is negative, NaN,
/// infinite, huge, or overflows once its unit is applied is an ``Invalid`` error whose description says
/// what is accepted (the CLI turns it into a usage error, exit status 2). `Int(x)` on a `Double` traps when
/// `x` is out of `Int`'s range: every conversion here happens after the range check.
///
/// `package` access: the CLI and the fuzz harness reach it; library users never see it.
package enum OptionValue {
    /// A value the command line cannot take; `description` says what it accepts.
    package struct Invalid: Error, CustomStringConvertible, Equatable {
        package let description: String

        package init(_ description: String) {
            self.description = description
        }
    }

    /// A width and a height in pixels (`--size 320x200`).
    package struct PixelBox: Sendable, Hashable {
        package let width: Int
        package let height: Int
    }

    /// Seconds accepted for a timeout: 1 ms to 30 days.
    package static let secondsRange: ClosedRange<Double> = 0.001...2_592_000
    /// Bytes per second accepted for a bandwidth limit: 1 B/s to 1 TiB/s.
    package static let bytesPerSecondRange: ClosedRange<Int> = 1...(1 << 40)
    /// The side of a thumbnail box, in pixels (JPEG's largest side).
    package static let pixelSideRange: ClosedRange<Int> = 1...65_535
    /// The longest text read as a number: enough for any accepted value written out in full.
    private static let maximumLength = 64

    /// A number of seconds, `30` or `2.5`, as a duration rounded to the millisecond.
    /// - Parameter text: The option's value: digits with an optional fraction (no sign, exponent, `nan`
    ///   or `inf`).
    /// - Returns: The duration, within ``secondsRange``.
    /// - Throws: ``Invalid`` for anything else.
    package static func seconds(_ text: String) throws(Invalid) -> Duration {
        let invalid = Invalid("must be a number of seconds from 0.001 to \(Int(secondsRange.upperBound)) (30 days), like 30 or 2.5")
        guard let value = decimal(text), secondsRange.contains(value) else { throw invalid }
        return .milliseconds(Int64((value * 1000).rounded()))
    }

    /// A bandwidth, `500`, `64k`, `2.5M`, `1G`: bytes per second, the suffix counting 1024, 1024², 1024³.
    /// - Parameter text: The option's value: a plain decimal number, then `k`, `m` or `g` in either case.
    /// - Returns: Whole bytes per second (a fraction rounds down), within ``bytesPerSecondRange``.
    /// - Throws: ``Invalid`` for anything else, including a rate that rounds down to 0 or overflows once
    ///   multiplied by its unit.
    package static func bytesPerSecond(_ text: String) throws(Invalid) -> Int {
        let invalid = Invalid("must be bytes per second from 1 to 1T (k, M, G suffixes allowed), like 500k or 2M")
        var digits = Substring(text)
        var multiplier = 1.0
        switch digits.last {
        case "k", "K": multiplier = 1024
        case "m", "M": multiplier = 1024 * 1024
        case "g", "G": multiplier = 1024 * 1024 * 1024
        default: break
        }
        if multiplier != 1 { digits = digits.dropLast() }
        guard let value = decimal(digits) else { throw invalid }
        let bytes = (value * multiplier).rounded(.down)
        guard bytes >= Double(bytesPerSecondRange.lowerBound), bytes <= Double(bytesPerSecondRange.upperBound) else { throw invalid }
        return Int(bytes)
    }

    /// A whole number in `range`, `3` (a count, a port, a quality, a size).
    /// - Parameters:
    ///   - text: The option's value: ASCII decimal digits, with an optional leading `-`.
    ///   - range: The values the option accepts.
    /// - Returns: The number.
    /// - Throws: ``Invalid``, naming the range, for anything else (an overflowing number included).
    package static func integer(_ text: String, in range: ClosedRange<Int>) throws(Invalid) -> Int {
        let digits = text.utf8.first == UInt8(ascii: "-") ? text.utf8.dropFirst() : text.utf8[...]
        guard text.utf8.count <= maximumLength, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
            let value = Int(text), range.contains(value)
        else {
            throw Invalid("must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    /// A box, `WIDTHxHEIGHT` (`320x200`, `X` accepted), each side within ``pixelSideRange``.
    /// - Parameter text: The option's value.
    /// - Returns: The box.
    /// - Throws: ``Invalid`` for anything else.
    package static func pixelBox(_ text: String) throws(Invalid) -> PixelBox {
        let invalid = Invalid("must be WIDTHxHEIGHT, each from 1 to \(pixelSideRange.upperBound), like 320x200")
        let sides = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "x" || $0 == "X" })
        guard sides.count == 2,
            let width = try? integer(String(sides[0]), in: pixelSideRange),
            let height = try? integer(String(sides[1]), in: pixelSideRange)
        else { throw invalid }
        return PixelBox(width: width, height: height)
    }

    /// The longest file name ``downloadFileName(percentEncodedPath:)`` gives, in UTF-8 bytes: with the
    /// longest name derived from it (`.<name>.courier-partial.json.tmp-` and 12 characters, 39 more) it
    /// stays under the 255 bytes a file name may have.
    package static let maximumFileNameLength = 200

    /// The file `courier download URL` writes in the current folder when no `-o` is given: the last
    /// segment of the URL's path as written (percent-encoded, so `%2F` is part of the name, never a
    /// separator), then its percent escapes decoded (`my%20file.pdf` is `my file.pdf`); `index.html` for
    /// an empty path or one ending with `/`.
    /// - Parameter path: The URL's percent-encoded path (`URLComponents.percentEncodedPath`).
    /// - Returns: A name that is one entry of the current folder: never empty, `.` or `..`, without `/`,
    ///   NUL or another control character (C0, DEL or C1: a terminal may act on them when the name is
    ///   printed), at most ``maximumFileNameLength`` bytes.
    /// - Throws: ``Invalid`` when the decoded name is not such a name (`..%2F..%2Fx` decodes to
    ///   `../../x`), or its escapes are not UTF-8: nothing is written, the user gives `-o`.
    package static func downloadFileName(percentEncodedPath path: String) throws(Invalid) -> String {
        let segment = path.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? ""
        guard !segment.isEmpty else { return "index.html" }
        guard let name = segment.removingPercentEncoding else {
            throw Invalid("the URL's last path segment '\(segment)' has escapes that are not UTF-8")
        }
        let isUnsafe = name.isEmpty || name == "." || name == ".." || name.utf8.count > maximumFileNameLength
            || name.unicodeScalars.contains { $0 == "/" || $0.properties.generalCategory == .control }
        guard !isUnsafe else {
            throw Invalid("the URL's last path segment '\(segment)' does not name a file of the current folder")
        }
        return name
    }

    /// A plain decimal number, `12`, `0.5`, `.5`, `3.`: ASCII digits and at most one point, nothing else.
    /// Finite and not negative by construction.
    private static func decimal(_ text: some StringProtocol) -> Double? {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty, bytes.count <= maximumLength else { return nil }
        var digits = 0, points = 0
        for byte in bytes {
            if byte >= 0x30 && byte <= 0x39 {
                digits += 1
            } else if byte == UInt8(ascii: ".") {
                points += 1
            } else {
                return nil
            }
        }
        guard digits > 0, points <= 1, let value = Double(String(decoding: bytes, as: UTF8.self)), value.isFinite else { return nil }
        return value
    }
}
