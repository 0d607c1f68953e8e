import Foundation

/// Builds the httpbin-style JSON descriptions served by `/get`, `/anything` and `/headers`.
enum Inspector {
    /// The JSON description of `request`:
    /// `{"method","path","url","args","headers","body","form","json"}`.
    ///
    /// - `args`: query parameters (last value wins).
    /// - `headers`: lower-cased header names (last value wins).
    /// - `body`: the body as UTF-8 text, or `""` when it is not valid UTF-8.
    /// - `form`: decoded fields when the body is `application/x-www-form-urlencoded`, else `{}`.
    /// - `json`: the parsed JSON body, or `null`.
    static func describe(_ request: IncomingRequest) -> [UInt8] {
        let bodyText = String(validating: request.body, as: UTF8.self) ?? ""
        let contentType = request.header("Content-Type")?.lowercased() ?? ""
        let form: [String: String] =
            contentType.hasPrefix("application/x-www-form-urlencoded") ? IncomingRequest.decodeForm(bodyText) : [:]
        var object: [String: Any] = [
            "method": request.method,
            "path": request.path,
            "url": request.head.uri,
            "args": request.queryParameters,
            "headers": headerObject(request),
            "body": bodyText,
            "form": form,
            "json": parsedJSON(request.body),
        ]
        if let trailers = request.trailers, !trailers.isEmpty {
            // The trailer fields that followed a chunked body (lower-cased names, the last value wins).
            object["trailers"] = Dictionary(trailers.map { ($0.name.lowercased(), $0.value) }) { $1 }
        }
        if !JSONSerialization.isValidJSONObject(object) {
            object["json"] = NSNull()
        }
        return encode(object)
    }

    /// Headers as a dictionary with lower-cased names; the last value of a repeated header wins.
    static func headerObject(_ request: IncomingRequest) -> [String: String] {
        var headers: [String: String] = [:]
        for (name, value) in request.headerList {
            headers[name.lowercased()] = value
        }
        return headers
    }

    /// Serialises `object` with sorted keys and unescaped slashes; `{}` if it is not valid JSON.
    static func encode(_ object: Any) -> [UInt8] {
        guard JSONSerialization.isValidJSONObject(object),
            let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        else {
            return Array("{}".utf8)
        }
        return [UInt8](data)
    }

    /// The body parsed as JSON (fragments allowed), or `NSNull` when empty or invalid.
    private static func parsedJSON(_ body: [UInt8]) -> Any {
        guard !body.isEmpty,
            let value = try? JSONSerialization.jsonObject(with: Data(body), options: [.fragmentsAllowed])
        else {
            return NSNull()
        }
        return value
    }
}
