import Testing
@testable import Courier

/// Issue 23 item 1, tier 1: the command line's value parsers (``OptionValue``), one per kind of value,
/// against what a careless or hostile user types. Nothing traps; out of range is an error.
@Suite("Option values")
struct OptionValueTests {
    /// Texts no numeric option accepts: not plain decimals, negative, NaN, infinite, huge, overflowing.
    static let hostile = [
        "", " ", " 5", "5 ", "-1", "-0.5", "+1", "nan", "NaN", "inf", "-inf", "infinity", "1e30", "1e300", "1e-300",
        "1.8e308", "0x1p1023", "0x10", "99999999999999999999999", "9223372036854775808", "9223372036854775807",
        "-9223372036854775808", "18446744073709551616", "1..2", ".", "1,5", "٣", "１", "1\u{0}", String(repeating: "9", count: 400),
        "0." + String(repeating: "0", count: 400) + "1",
    ]

    @Test func secondsAreDecimalsFromAMillisecondToThirtyDays() throws {
        #expect(try OptionValue.seconds("30") == .seconds(30))
        #expect(try OptionValue.seconds("2.5") == .milliseconds(2500))
        #expect(try OptionValue.seconds(".5") == .milliseconds(500))
        #expect(try OptionValue.seconds("0.001") == .milliseconds(1))
        #expect(try OptionValue.seconds("2592000") == .seconds(2_592_000))
        for text in Self.hostile + ["0", "0.0", "0.0004", "2592000.5", "1e3"] {
            #expect(throws: OptionValue.Invalid.self, "\(text)") { try OptionValue.seconds(text) }
        }
    }

    @Test func ratesTakeBinarySuffixesAndNeverOverflow() throws {
        #expect(try OptionValue.bytesPerSecond("500") == 500)
        #expect(try OptionValue.bytesPerSecond("64k") == 65_536)
        #expect(try OptionValue.bytesPerSecond("1.5K") == 1536)
        #expect(try OptionValue.bytesPerSecond("2M") == 2 << 20)
        #expect(try OptionValue.bytesPerSecond("10G") == 10 << 30)
        #expect(try OptionValue.bytesPerSecond("1024g") == 1 << 40)
        #expect(try OptionValue.bytesPerSecond("1.9") == 1, "a fraction of a byte rounds down")
        let overflowing = ["1025G", "10000000000000000G", "9007199254740993k", "99999999999999999999M", "1e30", "1e30k", "1099511627777"]
        for text in Self.hostile + overflowing + ["0", "0.5", "0.0001k", "k", "G", "1T", "1kk", "1 k", "-1k", "nank", "infG"] {
            #expect(throws: OptionValue.Invalid.self, "\(text)") { try OptionValue.bytesPerSecond(text) }
        }
    }

    @Test func integersAreWholeNumbersInTheirRange() throws {
        #expect(try OptionValue.integer("0", in: 0...100) == 0)
        #expect(try OptionValue.integer("100", in: 0...100) == 100)
        #expect(try OptionValue.integer("65535", in: 1...65_535) == 65_535)
        for text in Self.hostile + ["101", "1.5", "1e2", "0x1"] {
            #expect(throws: OptionValue.Invalid.self, "\(text)") { try OptionValue.integer(text, in: 0...100) }
        }
        #expect(throws: OptionValue.Invalid.self) { try OptionValue.integer("0", in: 1...65_535) }
    }

    @Test func pixelBoxesAreTwoSidesInRange() throws {
        #expect(try OptionValue.pixelBox("320x200") == OptionValue.PixelBox(width: 320, height: 200))
        #expect(try OptionValue.pixelBox("1X65535") == OptionValue.PixelBox(width: 1, height: 65_535))
        let boxes = ["0x0", "0x1", "65536x1", "9223372036854775807x1", "99999999999999999999x1", "1x", "x1", "x", "1x1x1",
                     "-1x1", "+1x1", "1e3x1", "1.5x2", " 1x1", "1 x 1", "nanxnan"]
        for text in Self.hostile + boxes {
            #expect(throws: OptionValue.Invalid.self, "\(text)") { try OptionValue.pixelBox(text) }
        }
    }

    /// Issue 23 item 3: the file `download` names after the URL is one entry of the current folder.
    @Test func downloadFileNamesAreOneEntryOfTheCurrentFolder() throws {
        #expect(try OptionValue.downloadFileName(percentEncodedPath: "/files/report.pdf") == "report.pdf")
        #expect(try OptionValue.downloadFileName(percentEncodedPath: "/files/my%20file.pdf") == "my file.pdf")
        #expect(try OptionValue.downloadFileName(percentEncodedPath: "/caf%C3%A9.txt") == "café.txt")
        #expect(try OptionValue.downloadFileName(percentEncodedPath: "/a/..b") == "..b")
        for folder in ["", "/", "/a/", "/a//"] {
            #expect(try OptionValue.downloadFileName(percentEncodedPath: folder) == "index.html", "\(folder)")
        }
        let refused = ["/x/..%2F..%2Fescaped.bin", "/x/%2Fetc%2Fpasswd", "/a/%2E%2E", "/a/%2e", "/a/.", "/a/..", "/a/%00", "/a/x%0Ay",
                       "/a/x%1B%5B2J", "/a/x%7F", "/a/x%C2%9B1m", "/a/%FF", "/a/%", "/a/%2", "/" + String(repeating: "n", count: 201)]
        for path in refused {
            #expect(throws: OptionValue.Invalid.self, "\(path)") { try OptionValue.downloadFileName(percentEncodedPath: path) }
        }
        #expect(try OptionValue.downloadFileName(percentEncodedPath: "/" + String(repeating: "n", count: 200)).utf8.count == 200)
    }
}
