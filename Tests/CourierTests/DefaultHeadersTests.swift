import Foundation
import Testing
@testable import Courier

@Suite("DefaultHeaders")
struct DefaultHeadersTests {
    @Test func userAgentFormat() {
        #expect(DefaultHeaders.userAgent(version: "1.2.0", system: "macOS 15.1") == "Courier/1.2.0 (macOS 15.1)")
        #expect(DefaultHeaders.userAgent(version: "2.0.0-beta.1", system: "iOS 18.0") == "Courier/2.0.0-beta.1 (iOS 18.0)")
    }

    @Test func userAgentSanitizesInput() {
        #expect(DefaultHeaders.userAgent(version: "1.0\r\nX-Evil: 1", system: "Linux;\r\n Debian (bookworm)\t\u{7F}é")
            == "Courier/1.0X-Evil1 (Linux; Debian bookworm)")
        #expect(DefaultHeaders.userAgent(version: " ", system: "") == "Courier/unknown")
    }

    @Test func currentUserAgentIsSingleLinePrintableASCII() {
        let agent = DefaultHeaders.userAgent(version: "1.0.0")
        #expect(agent.hasPrefix("Courier/1.0.0 ("))
        #expect(agent.hasSuffix(")"))
        #expect(agent.utf8.allSatisfy { (0x20...0x7E).contains($0) })
        #expect(HeaderValidation.validateValue(agent))
        #if os(Linux)
        #expect(agent.hasPrefix("Courier/1.0.0 (Linux; "))
        #elseif os(macOS)
        #expect(agent.hasPrefix("Courier/1.0.0 (macOS "))
        #endif
    }

    @Test func acceptLanguageUsesDecreasingQualities() {
        #expect(DefaultHeaders.acceptLanguage(preferredLanguages: ["en-US", "fr", "de"]) == "en-US, fr;q=0.9, de;q=0.8")
        #expect(DefaultHeaders.acceptLanguage(preferredLanguages: ["ja"]) == "ja")
    }

    @Test func acceptLanguageKeepsAtMostSix() {
        let languages = ["en", "fr", "de", "es", "it", "pt", "nl", "sv"]
        #expect(DefaultHeaders.acceptLanguage(preferredLanguages: languages)
            == "en, fr;q=0.9, de;q=0.8, es;q=0.7, it;q=0.6, pt;q=0.5")
    }

    @Test func acceptLanguageDefaultsToEnglish() {
        #expect(DefaultHeaders.acceptLanguage(preferredLanguages: []) == "en")
        #expect(DefaultHeaders.acceptLanguage(preferredLanguages: ["", "!!", "a b"]) == "en")
    }

    @Test func acceptLanguageNormalizesTags() {
        #expect(DefaultHeaders.acceptLanguage(preferredLanguages: ["en_US.UTF-8", "de_DE@euro", "zh-Hant-TW"])
            == "en-US, de-DE;q=0.9, zh-Hant-TW;q=0.8")
        #expect(DefaultHeaders.acceptLanguage(preferredLanguages: ["C"]) == "en")
        #expect(DefaultHeaders.acceptLanguage(preferredLanguages: ["POSIX", "fr"]) == "en, fr;q=0.9")
        #expect(DefaultHeaders.acceptLanguage(preferredLanguages: ["C.UTF-8"]) == "en")
    }

    @Test func acceptLanguageDropsDuplicatesAndInvalidTags() {
        #expect(DefaultHeaders.acceptLanguage(preferredLanguages: ["C", "en", "EN", "fr\r\n", "de"]) == "en, de;q=0.9")
    }

    @Test func normalizedLanguageTag() {
        #expect(DefaultHeaders.normalizedLanguageTag("pt_BR") == "pt-BR")
        #expect(DefaultHeaders.normalizedLanguageTag("sr_RS@latin") == "sr-RS")
        #expect(DefaultHeaders.normalizedLanguageTag("en-001") == "en-001")
        #expect(DefaultHeaders.normalizedLanguageTag("en--US") == nil)
        #expect(DefaultHeaders.normalizedLanguageTag("日本語") == nil)
        #expect(DefaultHeaders.normalizedLanguageTag("verylonglanguage") == nil)
    }

    @Test func currentAcceptLanguageIsWellFormed() {
        let value = DefaultHeaders.acceptLanguage
        #expect(!value.isEmpty)
        #expect(HeaderValidation.validateValue(value))
        #expect(value.utf8.allSatisfy { (0x20...0x7E).contains($0) })
    }
}
