import Foundation
import Testing
@testable import Courier

@Suite("URLComposer")
struct URLComposerTests {
    /// The composed URL string, or the error reason prefixed with "error: ".
    private func compose(
        scheme: String = "https", host: String = "api.example.com", port: Int? = nil, apiPath: String? = nil, path: String
    ) -> String {
        switch URLComposer(scheme: scheme, host: host, port: port, apiPath: apiPath).url(path: path) {
        case .success(let url): url
        case .failure(let error): "error: " + error.reason
        }
    }

    private func isError(_ result: String) -> Bool { result.hasPrefix("error: ") }

    // MARK: Slashes

    @Test(arguments: ["v1", "/v1", "v1/", "/v1/", "//v1//"])
    func apiPathSlashVariantsAreEquivalent(apiPath: String) {
        #expect(compose(apiPath: apiPath, path: "users") == "https://api.example.com/v1/users")
        #expect(compose(apiPath: apiPath, path: "/users") == "https://api.example.com/v1/users")
    }

    @Test(arguments: ["users", "/users", "//users"])
    func pathLeadingSlashesCollapse(path: String) {
        #expect(compose(path: path) == "https://api.example.com/users")
    }

    @Test func multiSegmentAPIPath() {
        #expect(compose(apiPath: "api/v2", path: "items/3") == "https://api.example.com/api/v2/items/3")
        #expect(compose(apiPath: "/api//v2/", path: "/items") == "https://api.example.com/api/v2/items")
    }

    @Test func trailingSlashOfPathIsKept() {
        #expect(compose(apiPath: "v1", path: "users/") == "https://api.example.com/v1/users/")
    }

    @Test func internalDoubleSlashInPathIsKept() {
        #expect(compose(path: "a//b") == "https://api.example.com/a//b")
    }

    @Test(arguments: ["", "/"])
    func emptyPathAddressesAPIRoot(path: String) {
        #expect(compose(apiPath: "v1", path: path) == "https://api.example.com/v1/")
        #expect(compose(path: path) == "https://api.example.com/")
    }

    @Test(arguments: [nil, "", "/", "//"] as [String?])
    func emptyAPIPathMeansNone(apiPath: String?) {
        let composer = URLComposer(scheme: "https", host: "h", port: nil, apiPath: apiPath)
        #expect(composer.apiPath == nil)
        #expect(composer.baseURLString == "https://h")
    }

    // MARK: Query and fragment

    @Test func queryInPathIsKept() {
        #expect(compose(apiPath: "v1", path: "/search?q=1&x=a/b") == "https://api.example.com/v1/search?q=1&x=a/b")
    }

    @Test func queryOnlyPathTargetsRoot() {
        #expect(compose(apiPath: "v1", path: "?q=1") == "https://api.example.com/v1/?q=1")
    }

    @Test func fragmentIsKept() {
        #expect(compose(path: "/doc?x=1#sec-2") == "https://api.example.com/doc?x=1#sec-2")
        #expect(compose(path: "/doc#a?b") == "https://api.example.com/doc#a?b")
    }

    @Test func queryAndFragmentAreEncoded() {
        #expect(compose(path: "/s?q=a b&tag=[x]#f g") == "https://api.example.com/s?q=a%20b&tag=%5Bx%5D#f%20g")
        #expect(compose(path: "/s#a#b") == "https://api.example.com/s#a%23b")
    }

    // MARK: Encoding

    @Test func disallowedPathCharactersArePercentEncoded() {
        #expect(compose(path: "/a b") == "https://api.example.com/a%20b")
        #expect(compose(path: "/\"<>\\^`{|}") == "https://api.example.com/%22%3C%3E%5C%5E%60%7B%7C%7D")
        #expect(compose(path: "/[x]") == "https://api.example.com/%5Bx%5D")
    }

    @Test func nonASCIIIsEncodedAsUTF8() {
        #expect(compose(path: "/café/😀") == "https://api.example.com/caf%C3%A9/%F0%9F%98%80")
    }

    @Test func existingEscapesAreKeptAndStrayPercentIsEncoded() {
        #expect(compose(path: "/a%20b") == "https://api.example.com/a%20b")
        #expect(compose(path: "/a%2fb") == "https://api.example.com/a%2fb")
        #expect(compose(path: "/100%") == "https://api.example.com/100%25")
        #expect(compose(path: "/%zz%4") == "https://api.example.com/%25zz%254")
        #expect(compose(path: "/?p=50%&q=%41") == "https://api.example.com/?p=50%25&q=%41")
    }

    @Test func subDelimitersAndColonsStayInPath() {
        #expect(compose(path: "/v1/things:batchGet;x=1,2@me!$&'()*+") == "https://api.example.com/v1/things:batchGet;x=1,2@me!$&'()*+")
    }

    @Test func questionMarkInAPIPathIsEncoded() {
        let composer = URLComposer(scheme: "https", host: "h", port: nil, apiPath: "a b/c?d")
        #expect(composer.baseURLString == "https://h/a%20b/c%3Fd")
    }

    @Test func controlCharactersAreEncoded() {
        #expect(compose(path: "/a\r\nb\u{0}") == "https://api.example.com/a%0D%0Ab%00")
    }

    @Test func combiningMarkAfterDelimiterDoesNotHideIt() {
        #expect(compose(path: "/a?\u{301}=1") == "https://api.example.com/a?%CC%81=1")
    }

    // MARK: Absolute URLs

    @Test(arguments: ["http://evil.com/x", "https://api.example.com/v1", "HTTP://x", "ftp://x/y", "https:relative", "http:"])
    func absoluteURLPathIsAnError(path: String) {
        #expect(isError(compose(path: path)))
    }

    @Test func colonLaterInPathIsNotAScheme() {
        #expect(compose(path: "users:search") == "https://api.example.com/users:search")
        #expect(compose(path: "/a/http://b") == "https://api.example.com/a/http://b")
    }

    // MARK: Hosts

    @Test func schemeAndHostAreLowercased() {
        #expect(compose(scheme: "HTTPS", host: "API.Example.COM", path: "/X") == "https://api.example.com/X")
    }

    @Test func ipv4AndUnderscoreHosts() {
        #expect(compose(scheme: "http", host: "127.0.0.1", port: 8080, path: "/") == "http://127.0.0.1:8080/")
        #expect(compose(host: "my_service.local", path: "a") == "https://my_service.local/a")
        #expect(compose(host: "example.com.", path: "a") == "https://example.com./a")
    }

    @Test func bracketedIPv6Host() {
        #expect(compose(scheme: "http", host: "[::1]", port: 8080, path: "/x") == "http://[::1]:8080/x")
    }

    @Test func unbracketedIPv6HostIsBracketed() {
        #expect(compose(host: "2001:DB8::1", path: "x") == "https://[2001:db8::1]/x")
        #expect(compose(host: "::ffff:192.0.2.1", path: "") == "https://[::ffff:192.0.2.1]/")
        #expect(compose(host: "1:2:3:4:5:6:7:8", path: "") == "https://[1:2:3:4:5:6:7:8]/")
    }

    @Test(arguments: [
        "", " ", "a b", "host/x", "user@host", "host?x", "host#x", "ho\u{7}st", "tab\t", "café.com",
        "a..b", ".a", "host:8080", "[::1", "::1]", "[]", "[:::]", "[1::2::3]", "[12345::]", "[g::1]",
        "[1:2:3:4:5:6:7:8:9]", "[1:2:3:4:5:6:7]", "[::1.2.3.256]", "[fe80::1%en0]",
        String(repeating: "a", count: 64) + ".com",
    ])
    func invalidHostsAreErrors(host: String) {
        #expect(isError(compose(host: host, path: "/")))
    }

    @Test func longestValidLabelIsAccepted() {
        let label = String(repeating: "a", count: 63)
        #expect(compose(host: label + ".com", path: "") == "https://\(label).com/")
    }

    // MARK: Ports and schemes

    @Test func defaultPortsAreElided() {
        #expect(compose(scheme: "https", port: 443, path: "/") == "https://api.example.com/")
        #expect(compose(scheme: "http", port: 80, path: "/") == "http://api.example.com/")
        #expect(URLComposer(scheme: "HTTP", host: "h", port: 80, apiPath: nil).port == nil)
    }

    @Test func nonDefaultPortsAreKept() {
        #expect(compose(scheme: "http", port: 443, path: "/") == "http://api.example.com:443/")
        #expect(compose(scheme: "https", port: 80, path: "/") == "https://api.example.com:80/")
        #expect(compose(port: 1, path: "/") == "https://api.example.com:1/")
        #expect(compose(port: 65535, path: "/") == "https://api.example.com:65535/")
    }

    @Test(arguments: [0, -1, 65536, Int.max, Int.min])
    func invalidPortsAreErrors(port: Int) {
        #expect(compose(port: port, path: "/") == "error: port \(port) is outside 1...65535")
    }

    @Test(arguments: ["ftp", "", "ws", "http:"])
    func unsupportedSchemesAreErrors(scheme: String) {
        #expect(isError(compose(scheme: scheme, path: "/")))
    }

    @Test func baseURLString() {
        let composer = URLComposer(scheme: "https", host: "H.example", port: 8443, apiPath: "/api/v2/")
        #expect(composer.baseURLString == "https://h.example:8443/api/v2")
    }

    @Test func equivalentInputsAreEqual() {
        #expect(URLComposer(scheme: "HTTPS", host: "H", port: 443, apiPath: "/v1/")
            == URLComposer(scheme: "https", host: "h", port: nil, apiPath: "v1"))
    }

    @Test func composedURLsParseWithFoundation() throws {
        let raw = compose(host: "::1", port: 9000, apiPath: "ä pi", path: "/x y?ü=1#ß")
        #expect(raw == "https://[::1]:9000/%C3%A4%20pi/x%20y?%C3%BC=1#%C3%9F")
        let url = try #require(URL(string: raw))
        #expect(url.port == 9000)
        #expect(url.path == "/ä pi/x y")
    }

    // MARK: init?(baseURL:)

    @Test func parsesBaseURL() throws {
        let composer = try #require(URLComposer(baseURL: "https://api.example.com:8443/v1/"))
        #expect(composer.scheme == "https")
        #expect(composer.host == "api.example.com")
        #expect(composer.port == 8443)
        #expect(composer.apiPath == "v1")
        #expect(composer.url(path: "users") == .success("https://api.example.com:8443/v1/users"))
    }

    @Test func parsesBaseURLVariants() throws {
        let bare = try #require(URLComposer(baseURL: "HTTP://Example.com"))
        #expect(bare == URLComposer(scheme: "http", host: "example.com", port: nil, apiPath: nil))
        let ipv6 = try #require(URLComposer(baseURL: "http://[::1]:8080/api/v2"))
        #expect(ipv6.baseURLString == "http://[::1]:8080/api/v2")
        let defaultPort = try #require(URLComposer(baseURL: "https://h:443/"))
        #expect(defaultPort.baseURLString == "https://h")
        let ipv6NoPort = try #require(URLComposer(baseURL: "https://[2001:db8::1]/"))
        #expect(ipv6NoPort.host == "[2001:db8::1]")
    }

    @Test(arguments: [
        "", "api.example.com", "ftp://h/", "https://", "https:///v1", "https://user@h/", "https://u:p@h/",
        "https://h/?q=1", "https://h/#f", "https://h:0/", "https://h:65536/", "https://h:/", "https://h:8o/",
        "https://h:1:2/", "https://[::1/", "https://[::1]x/", "https://a b/", "mailto:x@y", "https://h:-1/",
        "https://h:+80/", "https://[::1]:99999/",
    ])
    func rejectsInvalidBaseURLs(baseURL: String) {
        #expect(URLComposer(baseURL: baseURL) == nil)
    }

    @Test func errorDescriptionMentionsReason() {
        let error = URLCompositionError(reason: "host is empty")
        #expect(error.description == "URL composition failed: host is empty")
        #expect(compose(host: "", path: "/") == "error: host is empty")
    }
}
