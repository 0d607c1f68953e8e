import Foundation
import Testing
@testable import Courier

@Suite("CharsetDetection")
struct CharsetDetectionTests {
    @Test(arguments: [
        ("text/plain; charset=utf-8", String.Encoding.utf8),
        ("text/plain; charset=UTF8", .utf8),
        ("text/plain;charset=us-ascii", .ascii),
        ("text/plain; charset=ASCII", .ascii),
        ("text/html; charset=ISO-8859-1", .isoLatin1),
        ("text/html; charset=latin1", .isoLatin1),
        ("text/html; charset=l1", .isoLatin1),
        ("text/html; charset=iso-8859-2", .isoLatin2),
        ("text/html; charset=windows-1250", .windowsCP1250),
        ("text/html; charset=windows-1251", .windowsCP1251),
        ("text/html; charset=Windows-1252", .windowsCP1252),
        ("text/html; charset=windows-1253", .windowsCP1253),
        ("text/html; charset=windows-1254", .windowsCP1254),
        ("text/plain; charset=utf-16", .utf16),
        ("text/plain; charset=UTF-16LE", .utf16LittleEndian),
        ("text/plain; charset=utf-16be", .utf16BigEndian),
        ("text/plain; charset=utf-32", .utf32),
        ("text/plain; charset=utf-32le", .utf32LittleEndian),
        ("text/plain; charset=utf-32BE", .utf32BigEndian),
        ("text/plain; charset=Shift_JIS", .shiftJIS),
        ("text/plain; charset=euc-jp", .japaneseEUC),
        ("text/plain; charset=ISO-2022-JP", .iso2022JP),
        ("text/plain; charset=macintosh", .macOSRoman),
    ])
    func mapsIANANames(contentType: String, expected: String.Encoding) {
        #expect(CharsetDetection.encoding(forContentType: contentType) == expected)
    }

    @Test func parameterSyntaxIsLenient() {
        #expect(CharsetDetection.encoding(forContentType: "text/html ; Charset = \"ISO-8859-1\" ") == .isoLatin1)
        #expect(CharsetDetection.encoding(forContentType: "text/html;\tCHARSET=\tlatin1") == .isoLatin1)
        #expect(CharsetDetection.encoding(forContentType: "text/html; format=flowed; charset=windows-1251") == .windowsCP1251)
        #expect(CharsetDetection.encoding(forContentType: "text/html; title=\"a;charset=latin1\"; charset=utf-16") == .utf16)
    }

    @Test(arguments: [nil, "", "text/plain", "text/plain; charset=", "text/plain; charset=klingon", "charset=latin1", "text/plain; charset", ";;;", "text/plain; charset=\""] as [String?])
    func unknownOrMissingDefaultsToUTF8(contentType: String?) {
        #expect(CharsetDetection.encoding(forContentType: contentType) == .utf8)
    }

    @Test func parameterExtraction() {
        #expect(CharsetDetection.parameter(named: "boundary", in: "multipart/form-data; boundary=\"a\\\"b\"") == "a\"b")
        #expect(CharsetDetection.parameter(named: "charset", in: "text/plain") == nil)
        // Quotes and separators are read scalar by scalar: `"` or `;` followed by a combining mark is one
        // `Character` that is neither, but a byte-wise reader (the server's) sees the quote.
        // (The expected values are constants: Swift Testing's `#expect` mis-expands a literal holding `"`
        // followed by a combining mark, the very confusion fixed here.)
        let quoteAndMark = "a\"\u{0301}b"
        let markFirst = "\u{0301}b"
        #expect(CharsetDetection.parameter(named: "boundary", in: "multipart/form-data; boundary=\"a\\\"\u{0301}b\"") == quoteAndMark)
        #expect(CharsetDetection.parameter(named: "boundary", in: "multipart/form-data; boundary=\"\u{0301}b\"") == markFirst)
        #expect(CharsetDetection.parameter(named: "charset", in: "text/plain; title=\"x\"\u{0301}; charset=latin1") == "latin1")
    }

    @Test func mediaTypeStripsParametersAndLowercases() {
        #expect(CharsetDetection.mediaType(of: "Text/HTML; charset=utf-8") == "text/html")
        #expect(CharsetDetection.mediaType(of: "  application/vnd.api+json  ") == "application/vnd.api+json")
        #expect(CharsetDetection.mediaType(of: "image/png") == "image/png")
        #expect(CharsetDetection.mediaType(of: "*/*") == "*/*")
    }

    @Test(arguments: [nil, "", "text", "text/", "/html", "text/html/x", "te xt/html", "text/ht(ml", "; charset=utf-8"] as [String?])
    func malformedMediaTypesAreNil(contentType: String?) {
        #expect(CharsetDetection.mediaType(of: contentType) == nil)
    }

    @Test(arguments: ["application/json", "application/problem+json", "application/vnd.api+json", "APPLICATION/JSON", "application/json; charset=utf-8", "text/x+json"])
    func jsonMediaTypes(mediaType: String) {
        #expect(CharsetDetection.isJSON(mediaType: mediaType))
    }

    @Test(arguments: [nil, "", "text/json", "application/jsonp", "application/json-seq", "application/xml", "text/plain", "application/x-json+xml", "+json"] as [String?])
    func nonJSONMediaTypes(mediaType: String?) {
        #expect(!CharsetDetection.isJSON(mediaType: mediaType))
    }
}
