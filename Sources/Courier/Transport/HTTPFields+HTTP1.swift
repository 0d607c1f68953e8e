import HTTPTypes

extension HTTPFields {
    /// The fields as HTTP/1.1 sends them: in order, except that all `Cookie` fields (which
    /// swift-http-types keeps one per cookie, as HTTP/2 does) are joined with `"; "` into one field at the
    /// place of the first, since RFC 6265 allows only one `Cookie` header in HTTP/1.1.
    var http1Fields: [(name: String, value: String)] {
        let cookies = self[values: .cookie]
        var fields: [(name: String, value: String)] = []
        fields.reserveCapacity(count)
        var cookieWritten = false
        for field in self {
            if field.name == .cookie {
                if !cookieWritten { fields.append((field.name.rawName, cookies.joined(separator: "; "))) }
                cookieWritten = true
            } else {
                fields.append((field.name.rawName, field.value))
            }
        }
        return fields
    }
}
