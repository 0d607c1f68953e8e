import Foundation

/// Query items and body fields that carry secrets (`password`, `api_key`, `token`, ...), by lowercase
/// name: masked in ``NetworkOperation/curlCommand`` as sensitive headers are
/// (``NetworkEngine/Configuration/sensitiveParameterNames``).
enum SensitiveParameters {
    /// The default list.
    static let defaultNames: Set<String> = [
        "password", "passwd", "pwd", "secret", "client_secret", "token", "access_token", "refresh_token",
        "id_token", "api_key", "apikey", "api-key", "key", "auth", "signature", "sig", "session", "sessionid",
    ]

    /// The URL with the values of sensitive query items replaced by `***`; unchanged when none is.
    static func masked(url: String, names: Set<String>) -> String {
        guard var components = URLComponents(string: url), let items = components.percentEncodedQueryItems,
            items.contains(where: { names.contains(decoded($0.name).lowercased()) })
        else { return url }
        components.percentEncodedQueryItems = items.map { item in
            names.contains(decoded(item.name).lowercased()) ? URLQueryItem(name: item.name, value: "***") : item
        }
        return components.string ?? url
    }

    /// A form-encoded body (`a=1&password=x`) with sensitive values replaced by `***`.
    static func masked(form: String, names: Set<String>) -> String {
        form.split(separator: "&", omittingEmptySubsequences: false).map { pair in
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

    private static func decoded(_ text: String) -> String {
        text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? text
    }
}
