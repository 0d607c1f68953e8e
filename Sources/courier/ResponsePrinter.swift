import Courier
import Foundation

/// Writes a response to standard output, httpie style: formatted for a person at a terminal, the bytes
/// as received for a pipe or a file.
enum ResponsePrinter {
    /// What the command line asked for (`--pretty`, `--raw`, or neither).
    enum Format: Sendable, Equatable {
        /// Formatted at a terminal, the bytes as received otherwise.
        case automatic
        /// Formatted wherever the output goes (`--pretty`).
        case pretty
        /// The bytes as received wherever the output goes (`--raw`).
        case raw
    }

    /// How a body is written.
    enum Rendering: Sendable, Equatable {
        /// The bytes as received, nothing added.
        case raw
        /// JSON pretty-printed with sorted keys; other text as received, ending with a newline.
        case formatted
        /// One line saying what the body is, in place of bytes that would garble a terminal.
        case binaryNotice
    }

    /// Chooses how to write a body. Binary never goes to a terminal, whatever was asked.
    /// - Parameters:
    ///   - format: What the command line asked for.
    ///   - toTerminal: Whether standard output is a terminal.
    ///   - isText: Whether the body is text (see ``isText(_:mediaType:decodes:)``).
    static func rendering(format: Format, toTerminal: Bool, isText: Bool) -> Rendering {
        if toTerminal && !isText { return .binaryNotice }
        switch format {
        case .raw: return .raw
        case .pretty: return .formatted
        case .automatic: return toTerminal ? .formatted : .raw
        }
    }

    /// Whether a body is text: no NUL byte, decodable in its charset, and a text-like media type (or none).
    /// - Parameters:
    ///   - body: The bytes.
    ///   - mediaType: The lowercased media type of `Content-Type`, without parameters, if any.
    ///   - decodes: Whether the charset of `Content-Type` (UTF-8 when none is named) decodes the bytes.
    static func isText(_ body: Data, mediaType: String?, decodes: Bool) -> Bool {
        if body.isEmpty { return true }
        if body.contains(0) || !decodes { return false }
        return mediaType.map(isTextLike) ?? true
    }

    /// `text/*`, JSON, XML, JavaScript, forms, YAML and the like.
    static func isTextLike(_ mediaType: String) -> Bool {
        let textual: Set<String> = [
            "application/json", "application/xml", "application/javascript", "application/ecmascript",
            "application/x-www-form-urlencoded", "application/x-ndjson", "application/ld+json", "application/yaml",
            "application/x-yaml", "application/toml", "application/graphql", "application/sql", "message/http",
        ]
        return mediaType.hasPrefix("text/") || mediaType.hasSuffix("+json") || mediaType.hasSuffix("+xml")
            || textual.contains(mediaType)
    }

    /// Writes the head (if asked) and the body to standard output.
    /// - Parameters:
    ///   - response: The response.
    ///   - includeHead: Whether to write the status line and the header fields first.
    ///   - format: What the command line asked for.
    ///   - bodyFile: Where to write the body instead (`-o FILE`), as received; nothing to write when the
    ///     response was already streamed there (its ``NetworkResponse/fileURLs``, or `isBodyWritten`).
    ///   - isBodyWritten: Whether the body was already written to `bodyFile` as it arrived.
    static func print(
        _ response: NetworkResponse, includeHead: Bool, format: Format, bodyFile: URL? = nil, isBodyWritten: Bool = false
    ) throws(CLIFailure) {
        let output = StandardStream.standardOutput
        if includeHead { output.write(output.isTerminal ? TerminalText.sanitized(head(of: response)) : head(of: response)) }
        if let bodyFile {
            guard response.fileURLs.isEmpty, !isBodyWritten else { return }
            do {
                try response.body.write(to: bodyFile)
            } catch {
                throw CLIFailure(exitCode: 1, message: "cannot write \(bodyFile.path): \(error.localizedDescription)")
            }
            return
        }
        let isText = isText(response.body, mediaType: response.mediaType, decodes: response.string != nil)
        switch rendering(format: format, toTerminal: output.isTerminal, isText: isText) {
        case .raw: output.write(response.body)
        case .formatted where output.isTerminal:
            // A server's control characters are shown at a terminal, never obeyed.
            let text = formatted(response)
            output.write(String(data: text, encoding: .utf8).map { Data(TerminalText.sanitized($0).utf8) } ?? text)
        case .formatted: output.write(formatted(response))
        case .binaryNotice: output.line(binaryNotice(byteCount: response.body.count, mediaType: response.mediaType))
        }
    }

    /// The status line and header fields, then a blank line.
    static func head(of response: NetworkResponse) -> String {
        head(status: response.status, headers: response.headers, version: response.version)
    }

    /// The status line and header fields, then a blank line (HTTP/1.1 when the version is not known).
    static func head(status: HTTPResponse.Status, headers: HTTPFields, version: NetworkResponse.ProtocolVersion?) -> String {
        var head = "\(version ?? .http1_1) \(status.code) \(status.reasonPhrase)\n"
        for field in headers { head += "\(field.name): \(field.value)\n" }
        return head + "\n"
    }

    /// JSON pretty-printed with sorted keys; anything else as received, ending with a newline if it is text.
    static func formatted(_ response: NetworkResponse) -> Data {
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

    /// `[binary body: 12,345 bytes, image/png — use -o FILE or pipe it]`.
    static func binaryNotice(byteCount: Int, mediaType: String?) -> String {
        var digits = String(byteCount)
        var grouped = ""
        while digits.count > 3 {
            grouped = "," + digits.suffix(3) + grouped
            digits.removeLast(3)
        }
        let type = mediaType.map { ", \($0)" } ?? ""
        return "[binary body: \(digits + grouped) bytes\(type) — use -o FILE or pipe it]"
    }
}
