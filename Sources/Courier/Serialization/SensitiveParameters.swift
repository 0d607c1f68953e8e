import Foundation

/// Query items and body fields that carry secrets (`password`, `api_key`, `token`, ...), by name,
/// case-insensitively (`Access_Token` is `access_token`, as header names are): masked in
/// ``NetworkOperation/curlCommand``, in logs (``LoggingEventMonitor``) and in
/// ``NetworkError/description`` (``NetworkEngine/Configuration/sensitiveParameterNames``). The one place
/// where a URL, a form or a JSON body is masked.
enum SensitiveParameters {
    /// The default list.
    static let defaultNames: Set<String> = [
        "password", "passwd", "pwd", "secret", "client_secret", "token", "access_token", "refresh_token",
        "id_token", "api_key", "apikey", "api-key", "key", "auth", "signature", "sig", "session", "sessionid",
    ]

    /// The URL with the values of sensitive query items and a password in its user info replaced by
    /// `***`; unchanged when it has neither (or does not parse).
    /// - Parameters:
    ///   - url: The URL, as text.
    ///   - names: The sensitive names, in any case (the defaults when not given).
    static func masked(url: String, names: Set<String> = defaultNames) -> String {
        guard var components = URLComponents(string: url) else { return url }
        var didMask = false
        if components.percentEncodedPassword != nil {
            components.percentEncodedPassword = "***"
            didMask = true
        }
        let names = lowercased(names)
        if let items = components.percentEncodedQueryItems, items.contains(where: { names.contains(decoded($0.name).lowercased()) }) {
            components.percentEncodedQueryItems = items.map { item in
                names.contains(decoded(item.name).lowercased()) ? URLQueryItem(name: item.name, value: "***") : item
            }
            didMask = true
        }
        return didMask ? components.string ?? url : url
    }

    /// A form-encoded body (`a=1&password=x`) with sensitive values replaced by `***`.
    static func masked(form: String, names: Set<String>) -> String {
        let names = lowercased(names)
        return form.split(separator: "&", omittingEmptySubsequences: false).map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = decoded(String(parts[0]))
            // `user[password]` counts as `password`.
            let leaf = name.split(whereSeparator: { $0 == "[" || $0 == "]" }).last.map(String.init) ?? name
            return names.contains(leaf.lowercased()) && parts.count == 2 ? "\(parts[0])=***" : String(pair)
        }.joined(separator: "&")
    }

    /// A JSON body with the values of sensitive keys (at any depth, arrays and objects whole) replaced by
    /// `"***"`; `nil` when
    /// the text is not JSON or nothing was masked.
    static func masked(json: String, names: Set<String>) -> String? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(json.utf8), options: [.fragmentsAllowed]) else { return nil }
        let names = lowercased(names)
        var didMask = false
        func mask(_ value: Any) -> Any {
            if let dictionary = value as? [String: Any] {
                var result: [String: Any] = [:]
                for (key, inner) in dictionary {
                    if names.contains(key.lowercased()) {
                        // The whole value, whatever its shape: `{"token": ["abc"]}` shows nothing either.
                        result[key] = "***"
                        didMask = true
                    } else {
                        result[key] = mask(inner)
                    }
                }
                return result
            }
            if let array = value as? [Any] { return array.map(mask) }
            return value
        }
        let masked = mask(object)
        guard didMask, let data = try? JSONSerialization.data(withJSONObject: masked, options: [.sortedKeys, .fragmentsAllowed])
        else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    /// The names lowercased (the defaults already are; a caller may add `Access_Token`).
    private static func lowercased(_ names: Set<String>) -> Set<String> {
        names.allSatisfy { $0 == $0.lowercased() } ? names : Set(names.map { $0.lowercased() })
    }

    private static func decoded(_ text: String) -> String {
        text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? text
    }
}
