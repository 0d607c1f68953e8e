public import HTTPTypes

/// One challenge of a `WWW-Authenticate` or `Proxy-Authenticate` field (RFC 9110 §11.6.1): an
/// authentication scheme with either a token68 or a list of auth-params.
///
/// A field value may hold several challenges, and a response several field lines;
/// ``parse(_:)-(String)`` and ``challenges(in:proxy:)`` return them all, in order. The parser is lenient and
/// total: it returns what it could read (possibly nothing) and never fails or traps, whatever the
/// input, in time linear in its length.
///
/// ```swift
/// let challenges = AuthenticationChallenge.parse(#"Digest realm="api", nonce="abc", qop="auth", Basic realm="api""#)
/// challenges.map(\.scheme)              // ["digest", "basic"]
/// challenges[0].parameter("QOP")        // "auth"
/// ```
public struct AuthenticationChallenge: Sendable, Hashable, CustomStringConvertible {
    /// One auth-param: a lower-cased name and its value, unquoted and unescaped.
    public struct Parameter: Sendable, Hashable {
        /// The parameter's name, lower-cased (names are case-insensitive).
        public var name: String
        /// The parameter's value: a token as sent, or a quoted-string without its quotes and escapes.
        public var value: String

        /// Creates a parameter.
        /// - Parameters:
        ///   - name: The name; it is lower-cased.
        ///   - value: The unquoted value.
        public init(name: String, value: String) {
            self.name = name.lowercased()
            self.value = value
        }
    }

    /// The authentication scheme, lower-cased (schemes are case-insensitive): `"basic"`, `"digest"`,
    /// `"bearer"`, ...
    public var scheme: String
    /// The auth-params in the order received (empty when the challenge has none or a token68).
    public var parameters: [Parameter]
    /// The token68 that follows the scheme instead of auth-params, if any (`Negotiate` uses it).
    public var token68: String?

    /// Creates a challenge.
    /// - Parameters:
    ///   - scheme: The scheme; it is lower-cased.
    ///   - parameters: The auth-params, in order.
    ///   - token68: A token68 in place of auth-params.
    public init(scheme: String, parameters: [Parameter] = [], token68: String? = nil) {
        self.scheme = scheme.lowercased()
        self.parameters = parameters
        self.token68 = token68
    }

    /// The value of the first parameter named `name`, compared case-insensitively.
    /// - Parameter name: The parameter's name, in any case.
    /// - Returns: Its unquoted value, or `nil` when the challenge has no such parameter.
    public func parameter(_ name: String) -> String? {
        let name = name.lowercased()
        return parameters.first { $0.name == name }?.value
    }

    /// The `realm` parameter, when present.
    public var realm: String? { parameter("realm") }

    /// The challenges in one field value, in order; what cannot be parsed is skipped.
    ///
    /// ```swift
    /// let value = #"Newauth realm="apps", type=1, title="Login to \"apps\"", Basic realm="simple""#
    /// let challenges = AuthenticationChallenge.parse(value)
    /// challenges.map(\.scheme)               // ["newauth", "basic"]
    /// challenges[0].parameter("title")       // #"Login to "apps""#
    /// ```
    /// - Parameter fieldValue: A `WWW-Authenticate` or `Proxy-Authenticate` field value.
    /// - Returns: The challenges read, possibly none.
    public static func parse(_ fieldValue: String) -> [AuthenticationChallenge] {
        var parser = AuthenticationChallengeParser(Array(fieldValue.utf8))
        return parser.challenges()
    }

    /// The challenges of several field lines, in order (as if they were one comma-joined value).
    /// - Parameter fieldValues: The field lines' values.
    /// - Returns: The challenges read, possibly none.
    public static func parse(_ fieldValues: some Sequence<String>) -> [AuthenticationChallenge] {
        fieldValues.flatMap { parse($0) }
    }

    /// The challenges of a response's `WWW-Authenticate` fields, or of its `Proxy-Authenticate`
    /// fields when `proxy` is true.
    /// - Parameters:
    ///   - fields: The response's header fields.
    ///   - proxy: Whether to read `Proxy-Authenticate` (a 407) instead of `WWW-Authenticate` (a 401).
    /// - Returns: The challenges, in field order.
    public static func challenges(in fields: HTTPFields, proxy: Bool = false) -> [AuthenticationChallenge] {
        parse(fields[values: proxy ? .proxyAuthenticate : .wwwAuthenticate])
    }

    /// The auth-params of an `Authentication-Info` or `Proxy-Authentication-Info` field (RFC 9110
    /// §11.6.3), which has no scheme.
    /// - Parameter fieldValue: The field value.
    /// - Returns: The parameters read, in order.
    static func parameters(ofInfo fieldValue: String) -> [Parameter] {
        var parser = AuthenticationChallengeParser(Array(fieldValue.utf8))
        return parser.parameterList()
    }

    /// The challenge as it could be sent (scheme, then token68 or parameters, values quoted).
    public var description: String {
        if let token68 { return "\(scheme) \(token68)" }
        guard !parameters.isEmpty else { return scheme }
        return "\(scheme) " + parameters.map { "\($0.name)=\(Self.quoted($0.value))" }.joined(separator: ", ")
    }

    /// `value` as a quoted-string: in double quotes, with `"` and `\` escaped.
    ///
    /// Scalar by scalar, not character by character: a quote followed by a combining mark is one
    /// `Character` that is not `"`, and left unescaped it would end the quoted-string early (found by
    /// `scripts/fuzz`, www-authenticate, 2026-11-28).
    /// - Parameter value: The text to quote.
    /// - Returns: The quoted-string.
    static func quoted(_ value: String) -> String {
        var result = String.UnicodeScalarView()
        result.append("\"")
        for scalar in value.unicodeScalars {
            if scalar == "\"" || scalar == "\\" { result.append("\\") }
            result.append(scalar)
        }
        result.append("\"")
        return String(result)
    }
}
