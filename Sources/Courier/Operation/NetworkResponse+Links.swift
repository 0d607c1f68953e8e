public import Foundation
import HTTPTypes

extension NetworkResponse {
    /// The response's `Link` header fields (RFC 8288) by relation type, each target resolved against
    /// the response's URL: the pagination every REST engine follows.
    ///
    /// ```swift
    /// var page: NetworkOperation? = engine.operation(path: "issues")
    /// while let op = page {
    ///     let response = try await engine.send(op)
    ///     show(try response.decode([Issue].self))
    ///     page = response.links["next"].map { engine.operation(url: $0) }
    /// }
    /// ```
    /// A link with several relation types (`rel="next last"`) is listed under each; the first link of a
    /// relation wins. Malformed links are skipped.
    public var links: [String: URL] {
        var links: [String: URL] = [:]
        for value in headers[values: HTTPField.Name("Link")!] {
            for link in LinkHeader.parse(value) {
                guard let url = URL(string: link.target, relativeTo: url)?.absoluteURL else { continue }
                for relation in link.relations where links[relation] == nil { links[relation] = url }
            }
        }
        return links
    }
}

/// The `Link` field's syntax (RFC 8288 §3): `<target>; param=value; rel="a b", <target>; …`.
enum LinkHeader {
    struct Link: Equatable {
        var target: String
        var relations: [String]
    }

    /// Read scalar by scalar, as a byte-wise parser would: `"`, `,` or `;` followed by a combining mark is
    /// one `Character` that is none of them.
    static func parse(_ value: String) -> [Link] {
        var links: [Link] = []
        var rest = value.unicodeScalars[...]
        while let open = rest.firstIndex(of: "<") {
            guard let close = rest[open...].firstIndex(of: ">") else { break }
            let target = String(Substring(rest[rest.index(after: open)..<close]))
            rest = rest[rest.index(after: close)...]
            // Parameters run to the next comma outside quotes.
            var inQuotes = false
            var end = rest.endIndex
            for index in rest.indices {
                let scalar = rest[index]
                if scalar == "\"" { inQuotes.toggle() }
                if scalar == ",", !inQuotes { end = index; break }
            }
            let parameters = rest[..<end]
            rest = end == rest.endIndex ? rest[end...] : rest[rest.index(after: end)...]
            var relations: [String] = []
            for parameter in parameters.split(separator: ";") {
                let pair = parameter.split(separator: "=", maxSplits: 1)
                guard pair.count == 2, Substring(pair[0]).trimmingCharacters(in: .whitespaces).lowercased() == "rel" else { continue }
                let raw = Substring(pair[1]).trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                relations = raw.unicodeScalars.split(separator: " ").map { String(Substring($0)).lowercased() }
                break
            }
            if !relations.isEmpty { links.append(Link(target: target, relations: relations)) }
        }
        return links
    }
}
