import HTTPTypes
import NIOHTTP1

extension HTTPFields {
    /// The fields as HTTP/1.1 sends them: in order, except that all `Cookie` fields (which
    /// swift-http-types keeps one per cookie, as HTTP/2 does) are joined with `"; "` into one field at the
    /// place of the first, since RFC 6265 allows only one `Cookie` header in HTTP/1.1.
    var http1Fields: [(name: String, value: String)] {
        var fields: [(name: String, value: String)] = []
        fields.reserveCapacity(count)
        forEachHTTP1Field { fields.append(($0, $1)) }
        return fields
    }

    /// Calls `body` with each field as HTTP/1.1 sends it (``http1Fields``), building no list: the
    /// transport writes a request's fields this way for every request.
    func forEachHTTP1Field(_ body: (_ name: String, _ value: String) -> Void) {
        var cookieWritten = false
        for field in self {
            if field.name == .cookie {
                if !cookieWritten { body(field.name.rawName, self[values: .cookie].joined(separator: "; ")) }
                cookieWritten = true
            } else {
                body(field.name.rawName, field.value)
            }
        }
    }
}

extension HTTPHeaders {
    /// `fields` as NIO's headers, in order.
    init(http1 fields: HTTPFields) {
        self.init()
        // One more than the fields: the transport may add `Accept-Encoding` without growing the storage.
        reserveCapacity(fields.count + 1)
        fields.forEachHTTP1Field { add(name: $0, value: $1) }
    }
}
