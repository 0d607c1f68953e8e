public import Foundation
public import HTTPTypes

extension NetworkOperation {
    /// The response, once the operation succeeded.
    public var response: NetworkResponse? {
        if case .success(let response)? = storage.withLockedValue({ $0.machine.outcome }) { return response }
        return nil
    }

    /// The error, once the operation failed or was cancelled.
    public var error: NetworkError? {
        if case .failure(let error)? = storage.withLockedValue({ $0.machine.outcome }) { return error }
        return nil
    }

    /// The server's response, whether the operation succeeded or failed (a 404's body is here), once the
    /// server answered. Read it with ``NetworkResponse``'s members, the one set of names for a response:
    /// `body`, `string`, `headers`, `json()`, `decode(_:)`, `xml`, `statusCode`, `url`.
    public var receivedResponse: NetworkResponse? { response ?? error?.response }

    private var anyResponse: NetworkResponse? { receivedResponse }

    /// The response body.
    @available(*, deprecated, message: "use receivedResponse?.body (NetworkResponse's names)")
    public var responseData: Data? { anyResponse?.body }
    /// The response body as text, in the charset of its `Content-Type` (UTF-8 when none).
    @available(*, deprecated, message: "use receivedResponse?.string (NetworkResponse's names)")
    public var responseString: String? { anyResponse?.string }
    /// The response body as XML, or `nil` when there is none or it is not well-formed.
    @available(*, deprecated, message: "use receivedResponse?.xml (NetworkResponse's names)")
    public var responseXML: XMLDocumentTree? { anyResponse?.xml }
    /// The status code, once the server answered.
    public var statusCode: Int? { anyResponse?.statusCode }
    /// The response header fields, once the server answered.
    @available(*, deprecated, message: "use receivedResponse?.headers (NetworkResponse's names)")
    public var responseHeaders: HTTPFields? { anyResponse?.headers }
    /// The URL first requested (before redirects); `nil` when it could not be composed.
    public var originalURL: URL? { requestURL }
    /// The final URL after redirects, or the requested URL until there is a response.
    public var url: URL? { anyResponse?.url ?? requestURL }
    /// The redirects followed.
    public var redirectChain: [RedirectHop] { anyResponse?.redirectChain ?? [] }

    /// The response body parsed as JSON.
    /// - Returns: The top-level JSON value.
    /// - Throws: ``NetworkError`` (``NetworkError/Code/decodingFailed``) when the body is missing or not JSON.
    @available(*, deprecated, message: "use receivedResponse?.json() (NetworkResponse's names)")
    public func responseJSON() throws(NetworkError) -> Any {
        guard let response = anyResponse else {
            throw NetworkError(.decodingFailed, "the operation has no response", url: urlString)
        }
        return try response.json()
    }

    /// Decodes the response body as JSON.
    /// - Parameters:
    ///   - type: The type to decode.
    ///   - decoder: The decoder; a default `JSONDecoder` when omitted.
    /// - Returns: The decoded value.
    /// - Throws: ``NetworkError`` (``NetworkError/Code/decodingFailed``) when the body is missing or does not decode.
    public func decode<T: Decodable>(_ type: T.Type = T.self, decoder: JSONDecoder = JSONDecoder()) throws(NetworkError) -> T {
        guard let response = anyResponse else {
            throw NetworkError(.decodingFailed, "the operation has no response", url: urlString)
        }
        return try response.decode(type, decoder: decoder)
    }

    /// A `curl` command that sends the same request, for logs and bug reports.
    ///
    /// The credential provider's fields are included (asked now), and every credential is masked:
    /// `Authorization` and `Proxy-Authorization` keep only their scheme, `Cookie` only the cookie names
    /// (a nameless cookie shows only `***`), the other ``NetworkEngine/Configuration/sensitiveHeaderNames``
    /// and provider fields show `***`, and so do the query items and form or JSON body fields named in
    /// ``NetworkEngine/Configuration/sensitiveParameterNames`` (`password`, `api_key`, `token`, ...; in
    /// any case: `Access_Token` too).
    public var curlCommand: String {
        var parts = ["curl"]
        if method == .head {
            parts.append("--head")
        } else if method != .get || body != nil {
            parts += ["-X", ShellQuoting.quote(method.rawValue)]
        }
        let secretParameters = context.configuration.sensitiveParameterNames
        parts.append(ShellQuoting.quote(SensitiveParameters.masked(url: urlString, names: secretParameters)))
        let credentials = currentCredentials()
        let sensitive = context.sensitiveNames(with: credentials)
        for field in headers.replacing(with: credentials).http1Fields {
            parts += ["-H", ShellQuoting.quote("\(field.name): \(Self.masked(name: field.name, value: field.value, sensitive: sensitive))")]
        }
        if let body {
            if var text = String(data: body, encoding: .utf8), !text.contains("\0") {
                let mediaType = headers[.contentType]?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
                if mediaType == "application/x-www-form-urlencoded" {
                    text = SensitiveParameters.masked(form: text, names: secretParameters)
                } else if mediaType == "application/json" || mediaType?.hasSuffix("+json") == true {
                    text = SensitiveParameters.masked(json: text, names: secretParameters) ?? text
                }
                parts += ["--data-binary", ShellQuoting.quote(text)]
            } else {
                parts += ["--data-binary", "@-", "# \(body.count) bytes of binary data"]
            }
        }
        return parts.joined(separator: " ")
    }

    /// A header value fit for logs: credentials masked, everything else as is.
    static func masked(name: String, value: String, sensitive: Set<String> = SensitiveHeaders.defaultNames) -> String {
        switch name.lowercased() {
        case "authorization", "proxy-authorization":
            let scheme = value.split(separator: " ", maxSplits: 1).first.map(String.init)
            return value.contains(" ") ? "\(scheme ?? "") ***" : "***"
        case "cookie", "set-cookie":
            // Each `name=value` keeps its name only; a pair without `=` is a nameless cookie (or, after a
            // Set-Cookie's first pair, a flag such as `Secure`): its text is the value, so none of it shows.
            let isSetCookie = name.lowercased() == "set-cookie"
            return value.split(separator: ";").enumerated().compactMap { index, pair in
                let pair = pair.trimmingCharacters(in: .whitespaces)
                if pair.isEmpty { return nil }
                guard let equals = pair.firstIndex(of: "=") else { return isSetCookie && index > 0 ? pair : "***" }
                return "\(pair[..<equals].trimmingCharacters(in: .whitespaces))=***"
            }.joined(separator: "; ")
        case let other where sensitive.contains(other):
            return "***"
        default:
            return value
        }
    }

    /// SHA-256 (hex) of `METHOD SP normalised-URL LF hex(SHA-256(body))`. The URL is normalised by
    /// lower-casing scheme and host, dropping a default port and the fragment, and using `/` for an
    /// empty path; the query is kept as sent (Courier's own encoders sort parameters).
    static func makeUniqueIdentifier(method: HTTPRequest.Method, url: String, body: Data?) -> String {
        let bodyDigest = body.map { $0.isEmpty ? emptyBodyDigest : Digests.sha256Hex($0) } ?? emptyBodyDigest
        return Digests.sha256Hex(Data("\(method.rawValue) \(normalizedURL(url))\n\(bodyDigest)".utf8))
    }

    private static let emptyBodyDigest = Digests.sha256Hex(Data())

    /// Normalises `scheme://authority/path?query#fragment` as text (no URL parsing on the hot path).
    static func normalizedURL(_ string: String) -> String {
        isNormalized(string) ? string : rebuiltURL(string)
    }

    /// ``normalizedURL(_:)`` the long way, for a URL that is not normalised already.
    static func rebuiltURL(_ string: String) -> String {
        guard let schemeEnd = string.range(of: "://") else { return string }
        let scheme = string[..<schemeEnd.lowerBound].lowercased()
        let rest = string[schemeEnd.upperBound...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        var authority = rest[..<authorityEnd].lowercased()
        if scheme == "http", authority.hasSuffix(":80") { authority.removeLast(3) }
        if scheme == "https", authority.hasSuffix(":443") { authority.removeLast(4) }
        var tail = rest[authorityEnd...]
        if let hash = tail.firstIndex(of: "#") { tail = tail[..<hash] }
        let path = tail.first == "/" ? String(tail) : "/" + tail
        return scheme + "://" + authority + path
    }

    /// Whether ``normalizedURL(_:)`` would return `string` unchanged: a lowercase `scheme://authority`
    /// without its scheme's default port, a path that starts with `/`, no fragment. Most URLs an engine
    /// composes are, and this costs no allocation.
    static func isNormalized(_ string: String) -> Bool {
        let http = string.hasPrefix("http:"), https = string.hasPrefix("https:")
        var copy = string
        return copy.withUTF8 { bytes in
            // Plain integer indices: no generic slices here (they cost runtime metadata lookups per call).
            func isUppercaseOrNonASCII(_ byte: UInt8) -> Bool { (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z")) || byte >= 0x80 }
            // The scheme: no uppercase letter, up to "://".
            var index = 0
            while index < bytes.count, bytes[index] != UInt8(ascii: ":") {
                if isUppercaseOrNonASCII(bytes[index]) { return false }
                index += 1
            }
            let scheme = index == 4 && http ? 1 : index == 5 && https ? 2 : 0
            guard index + 3 <= bytes.count, bytes[index + 1] == UInt8(ascii: "/"), bytes[index + 2] == UInt8(ascii: "/") else { return false }
            index += 3
            // The authority: no uppercase letter or non-ASCII text (`Ä`, the Kelvin sign: lowercased the long
            // way), not ending in the scheme's default port.
            let authorityStart = index
            while index < bytes.count, bytes[index] != UInt8(ascii: "/"), bytes[index] != UInt8(ascii: "?"), bytes[index] != UInt8(ascii: "#") {
                if isUppercaseOrNonASCII(bytes[index]) { return false }
                index += 1
            }
            func authorityEnds(with suffix: StaticString) -> Bool {
                let length = suffix.utf8CodeUnitCount
                guard index - authorityStart >= length else { return false }
                return (0..<length).allSatisfy { bytes[index - length + $0] == suffix.utf8Start[$0] }
            }
            if scheme == 1 && authorityEnds(with: ":80") { return false }
            if scheme == 2 && authorityEnds(with: ":443") { return false }
            // The path must start with "/"; no fragment anywhere after the authority.
            guard index < bytes.count, bytes[index] == UInt8(ascii: "/") else { return false }
            while index < bytes.count {
                if bytes[index] == UInt8(ascii: "#") { return false }
                index += 1
            }
            return true
        }
    }
}
