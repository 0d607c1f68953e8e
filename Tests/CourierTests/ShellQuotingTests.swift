import Testing
@testable import Courier

@Suite("ShellQuoting")
struct ShellQuotingTests {
    @Test(arguments: ["abc", "A-Z_0.9", "/usr/bin", "https://h:8/p", "a=b", "user@host", "50%", "+1", "-X"])
    func safeStringsStayBare(word: String) {
        #expect(ShellQuoting.quote(word) == word)
    }

    @Test func emptyStringIsQuoted() {
        #expect(ShellQuoting.quote("") == "''")
    }

    @Test func unsafeStringsAreSingleQuoted() {
        #expect(ShellQuoting.quote("a b") == "'a b'")
        #expect(ShellQuoting.quote("$HOME") == "'$HOME'")
        #expect(ShellQuoting.quote("a&b;c|d") == "'a&b;c|d'")
        #expect(ShellQuoting.quote("`x` \"y\" \\z") == "'`x` \"y\" \\z'")
        #expect(ShellQuoting.quote("~") == "'~'")
        #expect(ShellQuoting.quote("*") == "'*'")
        #expect(ShellQuoting.quote("line1\nline2") == "'line1\nline2'")
        #expect(ShellQuoting.quote("é") == "'é'")
    }

    @Test func singleQuotesAreEscaped() {
        #expect(ShellQuoting.quote("it's") == #"'it'\''s'"#)
        #expect(ShellQuoting.quote("'") == #"''\'''"#)
        #expect(ShellQuoting.quote("''") == #"''\'''\'''"#)
    }

    @Test func quoteWithCombiningMarkIsStillEscaped() {
        // "'" + U+0301 forms one Character; the apostrophe must still be escaped.
        #expect(ShellQuoting.quote("a'\u{301}b") == "'a'\\''\u{301}b'")
    }
}
