/// Reads challenges (RFC 9110 §11.6.1) from the bytes of one field value:
///
/// ```
/// challenge  = auth-scheme [ 1*SP ( token68 / #auth-param ) ]
/// auth-param = token BWS "=" BWS ( token / quoted-string )
/// token68    = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
/// ```
///
/// Commas separate both challenges and the parameters of one challenge; an element that reads as
/// `token BWS "="` continues the current challenge, anything else starts a new one. Every step moves
/// forward (lookahead is at most one token, scanned again once), so the work is linear in the input;
/// malformed parts are skipped up to the next comma outside a quoted-string.
struct AuthenticationChallengeParser {
    private let bytes: [UInt8]
    private var position = 0

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    // MARK: Grammar

    /// Every challenge of the value.
    mutating func challenges() -> [AuthenticationChallenge] {
        var result: [AuthenticationChallenge] = []
        while true {
            skipSeparators()
            guard position < bytes.count else { return result }
            guard let scheme = token() else {
                skipElement()
                continue
            }
            var challenge = AuthenticationChallenge(scheme: scheme)
            let spaces = skipWhitespace()
            if position < bytes.count, bytes[position] != UInt8(ascii: ","), spaces > 0 {
                if let token68 = token68() {
                    challenge.token68 = token68
                } else {
                    challenge.parameters = parameters()
                }
            } else if position < bytes.count, bytes[position] != UInt8(ascii: ",") {
                // A scheme glued to something that is not a space: not a challenge.
                skipElement()
                continue
            }
            result.append(challenge)
        }
    }

    /// The auth-params of a value with no scheme (`Authentication-Info`).
    mutating func parameterList() -> [AuthenticationChallenge.Parameter] {
        skipSeparators()
        return parameters(stoppingAtChallenge: false)
    }

    /// Auth-params from the current position, up to the start of the next challenge or the end.
    private mutating func parameters(stoppingAtChallenge: Bool = true) -> [AuthenticationChallenge.Parameter] {
        var result: [AuthenticationChallenge.Parameter] = []
        while position < bytes.count {
            let start = position
            if let name = token() {
                skipWhitespace()
                if position < bytes.count, bytes[position] == UInt8(ascii: "=") {
                    position += 1
                    skipWhitespace()
                    if let value = parameterValue() {
                        result.append(AuthenticationChallenge.Parameter(name: name, value: value))
                        skipWhitespace()
                        if position < bytes.count, bytes[position] != UInt8(ascii: ",") { skipElement() }
                    } else {
                        skipElement()
                    }
                } else if stoppingAtChallenge {
                    // `token` not followed by `=`: the scheme of the next challenge.
                    position = start
                    return result
                } else {
                    skipElement()
                }
            } else {
                skipElement()
            }
            skipSeparators()
        }
        return result
    }

    /// A token68 that is the whole rest of this element (followed by the end or a comma), or `nil`
    /// with the position unchanged.
    private mutating func token68() -> String? {
        let start = position
        while position < bytes.count, Self.isToken68(bytes[position]) { position += 1 }
        guard position > start else { return nil }
        while position < bytes.count, bytes[position] == UInt8(ascii: "=") { position += 1 }
        let end = position
        skipWhitespace()
        if position == bytes.count || bytes[position] == UInt8(ascii: ",") {
            return String(decoding: bytes[start..<end], as: UTF8.self)
        }
        position = start
        return nil
    }

    /// A token or a quoted-string (unescaped), or `nil` when neither starts here.
    private mutating func parameterValue() -> String? {
        guard position < bytes.count else { return nil }
        if bytes[position] == UInt8(ascii: "\"") { return quotedString() }
        return token()
    }

    /// A quoted-string without its quotes, quoted-pairs unescaped; `nil` when it is not terminated.
    private mutating func quotedString() -> String? {
        position += 1  // the opening quote
        var value: [UInt8] = []
        while position < bytes.count {
            let byte = bytes[position]
            position += 1
            switch byte {
            case UInt8(ascii: "\""):
                return String(decoding: value, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard position < bytes.count else { return nil }
                value.append(bytes[position])
                position += 1
            default:
                value.append(byte)
            }
        }
        return nil
    }

    /// A token (1*tchar), or `nil` with the position unchanged.
    private mutating func token() -> String? {
        let start = position
        while position < bytes.count, Self.isTokenCharacter(bytes[position]) { position += 1 }
        guard position > start else { return nil }
        return String(decoding: bytes[start..<position], as: UTF8.self)
    }

    // MARK: Skipping

    /// Skips spaces and tabs; returns how many.
    @discardableResult
    private mutating func skipWhitespace() -> Int {
        let start = position
        while position < bytes.count, bytes[position] == UInt8(ascii: " ") || bytes[position] == UInt8(ascii: "\t") {
            position += 1
        }
        return position - start
    }

    /// Skips whitespace and commas (empty list elements are allowed, RFC 9110 §5.6.1).
    private mutating func skipSeparators() {
        while position < bytes.count {
            let byte = bytes[position]
            guard byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: ",") else { return }
            position += 1
        }
    }

    /// Skips the rest of a malformed element: up to (not including) the next comma outside a
    /// quoted-string, or the end.
    private mutating func skipElement() {
        var inQuotes = false
        while position < bytes.count {
            let byte = bytes[position]
            if inQuotes {
                if byte == UInt8(ascii: "\\") {
                    position += 1
                } else if byte == UInt8(ascii: "\"") {
                    inQuotes = false
                }
            } else if byte == UInt8(ascii: "\"") {
                inQuotes = true
            } else if byte == UInt8(ascii: ",") {
                return
            }
            position += 1
        }
        position = min(position, bytes.count)
    }

    // MARK: Character classes

    /// tchar (RFC 9110 §5.6.2).
    static func isTokenCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"),
            UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
            UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// The characters of token68 before its trailing `=` (RFC 9110 §11.2).
    static func isToken68(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "+"), UInt8(ascii: "/"):
            return true
        default:
            return false
        }
    }
}
