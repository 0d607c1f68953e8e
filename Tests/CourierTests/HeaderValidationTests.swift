import Testing
@testable import Courier

@Suite("HeaderValidation")
struct HeaderValidationTests {
    @Test(arguments: ["Content-Type", "X-Request-ID", "a", "!#$%&'*+-.^_`|~", "0123", "ETag"])
    func validNames(name: String) {
        #expect(HeaderValidation.validateName(name))
    }

    @Test(arguments: ["", " ", "Content Type", "X:Y", "a\r\nb", "(x)", "a,b", "a/b", "a\"b", "é", "a\u{0}", "a\t", "[x]", "{", "a=b", "@", "?", ";", "\\", "x\u{7F}"])
    func invalidNames(name: String) {
        #expect(!HeaderValidation.validateName(name))
    }

    @Test(arguments: ["", "text/html; charset=utf-8", " padded ", "tab\tinside", "ünïcødé", "\"quoted\" (comment)", "\u{A0}nbsp"])
    func validValues(value: String) {
        #expect(HeaderValidation.validateValue(value))
    }

    @Test(arguments: ["a\rb", "a\nb", "a\r\nX-Injected: 1", "nul\u{0}", "\u{1}", "\u{1B}[0m", "del\u{7F}", "c1\u{85}", "\u{9F}", "\u{1F}"])
    func invalidValues(value: String) {
        #expect(!HeaderValidation.validateValue(value))
    }
}
