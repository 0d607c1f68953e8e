package import HTTPTypes

/// The request fields that carry credentials. They never reach the disk: not through the cache's `Vary`
/// selections, not in the outbox (the engine's credential provider adds them back on replay).
package enum CredentialFields {
    /// Canonical (lowercase) names.
    static let names: Set<String> = ["authorization", "cookie", "proxy-authorization"]

    /// The fields without any credential, in order.
    package static func removed(from headers: HTTPFields) -> HTTPFields {
        var fields = HTTPFields()
        for field in headers where !names.contains(field.name.canonicalName) { fields.append(field) }
        return fields
    }
}
