import Foundation
import Testing
@testable import Courier

/// Basic authentication (RFC 7617) and the credentials type: tier 1, pure.
@Suite("BasicAuthentication")
struct BasicAuthenticationTests {
    @Test func theRFCExample() throws {
        // RFC 7617 §2.
        let value = try BasicAuthentication.authorization(for: PasswordCredentials(user: "Aladdin", password: "open sesame"))
        #expect(value == "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==")
    }

    @Test func utf8AsInRFC7617Section2_1() throws {
        // RFC 7617 §2.1: "test" / "123£" with charset UTF-8.
        let value = try BasicAuthentication.authorization(for: PasswordCredentials(user: "test", password: "123\u{00A3}"))
        #expect(value == "Basic dGVzdDoxMjPCow==")
    }

    @Test func aPasswordMayContainAColon() throws {
        let value = try BasicAuthentication.authorization(for: PasswordCredentials(user: "u", password: "a:b:c"))
        #expect(value == "Basic " + Data("u:a:b:c".utf8).base64EncodedString())
    }

    @Test func aUserWithAColonIsATypedError() {
        #expect {
            try BasicAuthentication.authorization(for: PasswordCredentials(user: "a:b", password: "p"))
        } throws: { error in
            (error as? NetworkError)?.code == .invalidCredentials
        }
    }

    @Test func controlCharactersAreATypedError() {
        for credentials in [PasswordCredentials(user: "a\nb", password: "p"), PasswordCredentials(user: "a", password: "p\u{7F}"),
                            PasswordCredentials(user: "a", password: "p\r\nX-Injected: 1")] {
            #expect(throws: NetworkError.self) { try BasicAuthentication.authorization(for: credentials) }
        }
    }

    @Test func credentialsFromAURLAreDecoded() throws {
        let url = try #require(URL(string: "https://Aladdin:open%20sesame@example.com/path"))
        let credentials = try #require(PasswordCredentials(userInfoOf: url))
        #expect(credentials == PasswordCredentials(user: "Aladdin", password: "open sesame"))
        #expect(try BasicAuthentication.authorization(for: credentials) == "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==")
    }

    @Test func urlUserInfoEdgeCases() throws {
        // Percent-encoded UTF-8 and an encoded colon in the password.
        let utf8 = try #require(URL(string: "http://J%C3%A4s%C3%B8n:p%3Aw%40d@example.com/"))
        #expect(PasswordCredentials(userInfoOf: utf8) == PasswordCredentials(user: "J\u{00E4}s\u{00F8}n", password: "p:w@d"))
        // No password: empty.
        let userOnly = try #require(URL(string: "http://alice@example.com/"))
        #expect(PasswordCredentials(userInfoOf: userOnly) == PasswordCredentials(user: "alice", password: ""))
        // No userinfo at all.
        #expect(PasswordCredentials(userInfoOf: try #require(URL(string: "http://example.com/"))) == nil)
        // An encoded colon in the user decodes to a user Basic refuses.
        let colonUser = try #require(URL(string: "http://a%3Ab:p@example.com/"))
        let credentials = try #require(PasswordCredentials(userInfoOf: colonUser))
        #expect(credentials.user == "a:b")
        #expect(throws: NetworkError.self) { try BasicAuthentication.authorization(for: credentials) }
    }

    @Test func theDescriptionMasksThePassword() {
        let text = "\(PasswordCredentials(user: "alice", password: "hunter2"))"
        #expect(text.contains("alice"))
        #expect(!text.contains("hunter2"))
    }
}
