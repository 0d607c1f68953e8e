import HTTPTypes

/// Header fields that carry credentials, by lowercase name: the standard ones (``CredentialFields``)
/// and the ones an engine adds (``NetworkEngine/Configuration/sensitiveHeaderNames``). They partition the
/// cache, are dropped on cross-origin redirects, never reach the outbox and are masked in `curlCommand`.
enum SensitiveHeaders {
    /// The default list: the standard credential fields and the common API-key headers.
    static let defaultNames: Set<String> = CredentialFields.names.union(["x-api-key", "x-auth-token", "x-access-token"])

    /// The fields without any of `names` (lowercase), in order.
    static func removed(_ names: Set<String>, from headers: HTTPFields) -> HTTPFields {
        var fields = HTTPFields()
        for field in headers where !names.contains(field.name.canonicalName) { fields.append(field) }
        return fields
    }

    /// The fields among `names` (lowercase), in order.
    static func kept(_ names: Set<String>, from headers: HTTPFields) -> HTTPFields {
        var fields = HTTPFields()
        for field in headers where names.contains(field.name.canonicalName) { fields.append(field) }
        return fields
    }
}

extension HTTPFields {
    /// These fields with every name in `other` replaced by `other`'s fields of that name (several of one
    /// name, such as cookies, are kept).
    func replacing(with other: HTTPFields) -> HTTPFields {
        guard !other.isEmpty else { return self }
        var fields = self
        for name in Set(other.map(\.name)) { fields[name] = nil }
        fields.append(contentsOf: other)
        return fields
    }
}
