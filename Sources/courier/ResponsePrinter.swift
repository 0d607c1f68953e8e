import Courier
import Foundation

/// Writes a response to standard output, httpie style.
enum ResponsePrinter {
    static func print(_ response: NetworkResponse, includeHead: Bool) {
        var output = Data()
        if includeHead {
            var head = "HTTP/1.1 \(response.statusCode) \(response.status.reasonPhrase)\n"
            for field in response.headers { head += "\(field.name): \(field.value)\n" }
            output.append(Data((head + "\n").utf8))
        }
        output.append(body(of: response))
        FileHandle.standardOutput.write(output)
    }

    /// JSON pretty-printed with sorted keys; anything else as received.
    static func body(of response: NetworkResponse) -> Data {
        let isJSON = response.mediaType.map { $0 == "application/json" || $0.hasSuffix("+json") } ?? false
        if isJSON, let object = try? response.json(),
            var pretty = try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes, .fragmentsAllowed])
        {
            pretty.append(0x0A)
            return pretty
        }
        var body = response.body
        if let last = body.last, last != 0x0A, response.string != nil { body.append(0x0A) }
        return body
    }
}
