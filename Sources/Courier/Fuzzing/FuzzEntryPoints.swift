import Foundation
import HTTPTypes

/// The header parsers as seen by the fuzz harness (`Sources/CourierFuzz`, run by `scripts/fuzz`): each
/// entry point feeds arbitrary bytes to one parser and checks what must hold for every input. A
/// violated property traps, which libFuzzer reports as a crash with the input that caused it.
///
/// `package` access: the harness and the tests reach the internal parsers through this enum without
/// `@testable import` (which a release-like fuzz build does not allow); library users never see it.
package enum FuzzEntryPoints {
    /// One fuzz target: a parser, or a family of parsers of one field.
    package enum Parser: String, CaseIterable, Sendable {
        /// `Cache-Control` (and request `Pragma`), one field line per input line.
        case cacheControl = "cache-control"
        /// HTTP-date, all three formats; a parsed date survives formatting and parsing again.
        case httpDate = "http-date"
        /// `Vary` (first line), the request's fields (`name: value` lines) and preference lists; a
        /// request always matches the selection taken from itself.
        case vary
        /// `Content-Range` (the cache's and the resumable download's readings) and `Range`.
        case contentRange = "content-range"
        /// `Retry-After`: delay-seconds or an HTTP-date; never a negative wait.
        case retryAfter = "retry-after"
        /// `Set-Cookie`, one field value.
        case setCookie = "set-cookie"
        /// A cookie's `Expires` date (RFC 6265 §5.1.1).
        case cookieDate = "cookie-date"
        /// `WWW-Authenticate` challenges (one field line per input line) and `Authentication-Info`;
        /// the challenges read again from their descriptions are the same.
        case wwwAuthenticate = "www-authenticate"
        /// The parameters of a `Digest` challenge, then the `Authorization` value answering it.
        case digestChallenge = "digest-challenge"
        /// `Link` (RFC 8288).
        case link
        /// The `courier` command line's option values (seconds, rates, counts, pixel boxes, the file name
        /// `download` takes from a URL), one value per input line: never out of their ranges.
        case optionValues = "option-values"
    }

    /// Runs `parser` on `bytes` (any bytes: invalid UTF-8 is repaired, as it would be when a field
    /// value becomes a `String`) and traps when a property does not hold.
    package static func run(_ parser: Parser, _ bytes: UnsafeRawBufferPointer) {
        let text = String(decoding: bytes, as: UTF8.self)
        switch parser {
        case .cacheControl: cacheControl(text)
        case .httpDate: httpDate(text)
        case .vary: vary(text)
        case .contentRange: contentRange(text)
        case .retryAfter: retryAfter(text)
        case .setCookie: setCookie(text)
        case .cookieDate: _ = CookieDate.parse(text)
        case .wwwAuthenticate: wwwAuthenticate(text)
        case .digestChallenge: digestChallenge(text)
        case .link: link(text)
        case .optionValues: optionValues(text)
        }
    }

    /// Runs `parser` on `bytes`.
    package static func run(_ parser: Parser, _ bytes: [UInt8]) {
        bytes.withUnsafeBytes { run(parser, $0) }
    }

    // MARK: - Targets

    /// A fixed "now" and RFC 850 reference, so that runs are reproducible.
    private static let now = Date(timeIntervalSince1970: 1_750_000_000)

    private static func lines(_ text: String) -> [String] {
        text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }

    private static func cacheControl(_ text: String) {
        let fieldLines = lines(text)
        let control = CacheControl(fieldLines: fieldLines)
        for directive in control.directives {
            precondition(CacheHeaderSyntax.isToken(Substring(directive.name)), "directive name is not a token")
            precondition(directive.name == CacheHeaderSyntax.asciiLowercased(directive.name), "directive name not lowercased")
        }
        for delta in [control.maxAge, control.sMaxAge, control.minFresh, control.staleWhileRevalidate, control.staleIfError] {
            if let seconds = delta.seconds { precondition((0...CacheHeaderSyntax.deltaSecondsCap).contains(seconds)) }
        }
        var request = HTTPFields()
        for line in fieldLines {
            request.append(HTTPField(name: .cacheControl, value: line))
            request.append(HTTPField(name: CacheHeaderSyntax.pragma, value: line))
        }
        _ = CacheControl(requestHeaders: request)
    }

    private static func httpDate(_ text: String) {
        _ = HTTPDate.parse(text)
        guard let date = HTTPDate.parse(text, twoDigitYearReference: now) else { return }
        // Formatting clamps to years 0001-9999; inside them, a parsed date reads back the same.
        let seconds = date.timeIntervalSince1970
        let lowest = Double(HTTPDate.daysFromCivil(year: 1, month: 1, day: 1) * 86_400)
        let highest = Double(HTTPDate.daysFromCivil(year: 9999, month: 12, day: 31) * 86_400 + 86_399)
        guard seconds >= lowest, seconds <= highest else { return }
        let formatted = HTTPDate.format(date)
        precondition(HTTPDate.parse(formatted) == date, "HTTP-date does not survive format and parse")
    }

    private static func vary(_ text: String) {
        let fieldLines = lines(text)
        var response = HTTPFields()
        if let first = fieldLines.first { response.append(HTTPField(name: .vary, value: first)) }
        var request = HTTPFields()
        for line in fieldLines.dropFirst() {
            guard let colon = line.firstIndex(of: ":"), let name = HTTPField.Name(String(line[..<colon])) else { continue }
            request.append(HTTPField(name: name, value: String(line[line.index(after: colon)...])))
        }
        let selection = CacheVary.selectedHeaders(vary: response, request: request)
        if case .names = CacheVary.fieldNames(response) {
            precondition(
                CacheVary.matches(storedResponseHeaders: response, storedSelection: selection, requestHeaders: request),
                "a request does not match the Vary selection taken from itself")
        }
        _ = CacheVary.normalizedPreferences(fieldLines)
    }

    private static func contentRange(_ text: String) {
        if let span = CachePartialContent.span(contentRange: text) {
            precondition(span.first >= 0 && span.first <= span.last && span.last < span.completeLength, "impossible span")
            precondition(span.count > 0)
            precondition(CachePartialContent.span(contentRange: span.contentRange) == span, "span does not survive formatting")
        }
        _ = DownloadResumeStateMachine.unsatisfiedLength(text)
        var headers = HTTPFields()
        headers.append(HTTPField(name: .range, value: text))
        if let requested = CachePartialContent.requestedRange(headers) {
            for completeLength in [0, 1, 100, Int.max] {
                guard let range = requested.resolved(completeLength: completeLength) else { continue }
                precondition(range.lowerBound >= 0 && range.upperBound < completeLength, "resolved range outside the representation")
            }
        }
    }

    private static func retryAfter(_ text: String) {
        guard let delay = RetryAfter.delay(text, now: now) else { return }
        precondition(delay >= .zero, "negative Retry-After")
    }

    private static func setCookie(_ text: String) {
        guard let cookie = SetCookie(text) else { return }
        precondition(!cookie.name.isEmpty, "cookie without a name")
        precondition(cookie.name.utf8.count + cookie.value.utf8.count <= SetCookie.maximumNameAndValueSize, "cookie too large")
        // Byte-wise, as RFC 6265 §5.2.4 reads it: `String.hasPrefix` compares characters, and `/` followed by
        // a combining mark (U+07F2 in the input that taught this) is one character that is not "/".
        if let path = cookie.path { precondition(path.utf8.first == UInt8(ascii: "/"), "path does not start with /") }
    }

    private static func wwwAuthenticate(_ text: String) {
        let fieldLines = lines(text)
        let challenges = AuthenticationChallenge.parse(fieldLines)
        // Every challenge written as it could be sent reads back the same.
        let again = AuthenticationChallenge.parse(challenges.map(\.description).joined(separator: ", "))
        precondition(again == challenges, "challenges do not survive their descriptions")
        _ = AuthenticationChallenge.parameters(ofInfo: text)
        for challenge in challenges { answer(challenge) }
    }

    private static func digestChallenge(_ text: String) {
        for challenge in AuthenticationChallenge.parse("Digest " + text) { answer(challenge) }
    }

    /// The `Authorization` value for a Digest challenge Courier accepts.
    private static func answer(_ challenge: AuthenticationChallenge) {
        guard let digest = try? DigestChallenge(challenge) else { return }
        let value = digest.authorization(
            credentials: PasswordCredentials(user: "Mufasa", password: "Circle of Life"), method: "GET",
            requestTarget: "/dir/index.html", nonceCount: 1, clientNonce: "f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ")
        precondition(value.hasPrefix("Digest "), "not a Digest authorization")
    }

    private static func link(_ text: String) {
        for link in LinkHeader.parse(text) {
            precondition(!link.relations.isEmpty, "link without relations")
        }
    }
}
