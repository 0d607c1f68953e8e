import Testing
@testable import Courier

@Suite("FormEncoder")
struct FormEncoderTests {
    @Test func flatParametersAreSortedAndJoined() {
        #expect(FormEncoder.encode(["b": "2", "a": "1", "c": 3]) == "a=1&b=2&c=3")
    }

    @Test func emptyParametersEncodeToEmptyString() {
        #expect(FormEncoder.encode([:]) == "")
    }

    @Test func nestedDictionariesUseBracketPaths() {
        #expect(FormEncoder.encode(["a": ["b": ["c": "v"]]]) == "a%5Bb%5D%5Bc%5D=v")
        #expect(FormEncoder.encode(["user": ["name": "x", "age": 5]]) == "user%5Bage%5D=5&user%5Bname%5D=x")
    }

    @Test func arraysUseEmptyBrackets() {
        #expect(FormEncoder.encode(["a": [1, 2, "x"]]) == "a%5B%5D=1&a%5B%5D=2&a%5B%5D=x")
    }

    @Test func arrayOfDictionaries() {
        let params: [String: ParameterValue] = ["a": [["k": "1", "j": "0"], ["k": "2"]]]
        #expect(FormEncoder.encode(params) == "a%5B%5D%5Bj%5D=0&a%5B%5D%5Bk%5D=1&a%5B%5D%5Bk%5D=2")
    }

    @Test func nestedArrays() {
        #expect(FormEncoder.encode(["m": [[1]]]) == "m%5B%5D%5B%5D=1")
    }

    @Test func scalarFormatting() {
        #expect(FormEncoder.encode(["t": true, "f": false]) == "f=0&t=1")
        #expect(FormEncoder.encode(["i": -12]) == "i=-12")
        #expect(FormEncoder.encode(["d": 1.5]) == "d=1.5")
        #expect(FormEncoder.encode(["d": 2.0]) == "d=2")
        #expect(FormEncoder.encode(["d": -3.0]) == "d=-3")
        #expect(FormEncoder.encode(["d": 0.1]) == "d=0.1")
    }

    @Test func doubleFormatting() {
        #expect(FormEncoder.format(2) == "2")
        #expect(FormEncoder.format(-0.0) == "0")
        #expect(FormEncoder.format(999_999_999_999_999) == "999999999999999")
        #expect(FormEncoder.format(1e15) == "1000000000000000.0")
        #expect(FormEncoder.format(1e16) == "1e+16")
        #expect(FormEncoder.format(2.5e15) == "2500000000000000.0")
        #expect(FormEncoder.format(1e-5) == "1e-05")
        #expect(FormEncoder.format(.nan) == "nan")
        #expect(FormEncoder.format(.infinity) == "inf")
        #expect(FormEncoder.encode(["x": .double(1e20)]) == "x=1e%2B20")
    }

    @Test func nullEncodesEmptyValue() {
        #expect(FormEncoder.encode(["a": nil, "b": "1"]) == "a=&b=1")
        #expect(FormEncoder.encode(["a": [nil]]) == "a%5B%5D=")
    }

    @Test func emptyCollectionsEmitNothing() {
        #expect(FormEncoder.encode(["a": [], "b": [:], "c": "1"]) == "c=1")
        #expect(FormEncoder.encode(["a": ["x": []]]) == "")
    }

    @Test func valuesAndKeysAreEscaped() {
        #expect(FormEncoder.encode(["q": "a b&c"]) == "q=a%20b%26c")
        #expect(FormEncoder.encode(["k y": "="]) == "k%20y=%3D")
        #expect(FormEncoder.encode(["p": "/path?x"]) == "p=/path?x")
    }

    @Test func escapeFollowsRFC3986() {
        #expect(FormEncoder.escape("AZaz09-._~") == "AZaz09-._~")
        #expect(FormEncoder.escape(":#[]@!$&'()*+,;=") == "%3A%23%5B%5D%40%21%24%26%27%28%29%2A%2B%2C%3B%3D")
        #expect(FormEncoder.escape("?/") == "?/")
        #expect(FormEncoder.escape(" ") == "%20")
        #expect(FormEncoder.escape("%") == "%25")
        #expect(FormEncoder.escape("\"<>\\^`{|}") == "%22%3C%3E%5C%5E%60%7B%7C%7D")
        #expect(FormEncoder.escape("é") == "%C3%A9")
        #expect(FormEncoder.escape("😀") == "%F0%9F%98%80")
        #expect(FormEncoder.escape("\n\u{0}") == "%0A%00")
        #expect(FormEncoder.escape("") == "")
    }

    @Test func keysSortByPlainStringOrder() {
        #expect(FormEncoder.encode(["b": 1, "B": 2, "a": 3, "_": 4]) == "B=2&_=4&a=3&b=1")
    }

    @Test func appendQueryChoosesSeparator() {
        #expect(FormEncoder.appendQuery("a=1", to: "https://h/p") == "https://h/p?a=1")
        #expect(FormEncoder.appendQuery("a=1", to: "https://h/p?x=2") == "https://h/p?x=2&a=1")
        #expect(FormEncoder.appendQuery("a=1", to: "https://h/p?") == "https://h/p?a=1")
        #expect(FormEncoder.appendQuery("a=1", to: "https://h/p?x=2&") == "https://h/p?x=2&a=1")
    }

    @Test func appendQueryKeepsFragmentAtEnd() {
        #expect(FormEncoder.appendQuery("a=1", to: "https://h/p#frag") == "https://h/p?a=1#frag")
        #expect(FormEncoder.appendQuery("a=1", to: "https://h/p?x#frag?y") == "https://h/p?x&a=1#frag?y")
        #expect(FormEncoder.appendQuery("a=1", to: "https://h/p#") == "https://h/p?a=1#")
    }

    @Test func appendQueryWithEmptyQueryIsIdentity() {
        #expect(FormEncoder.appendQuery("", to: "https://h/p#f") == "https://h/p#f")
        #expect(FormEncoder.appendQuery("a=1", to: "") == "?a=1")
    }

    @Test func appendQueryDoesNotTreatAmpersandInPathAsQuery() {
        #expect(FormEncoder.appendQuery("a=1", to: "https://h/x&") == "https://h/x&?a=1")
    }

    @Test func appendQueryFindsDelimiterBeforeCombiningMark() {
        // "?" + U+0301 is a single Character but still starts the query.
        #expect(FormEncoder.appendQuery("a=1", to: "https://h/p?\u{301}") == "https://h/p?\u{301}&a=1")
    }
}
