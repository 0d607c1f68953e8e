import ArgumentParser
import Courier
import Foundation

/// `courier post URL -d key=value ... | --json '{...}'`.
struct PostCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "post",
        abstract: "Send a POST request with a form (-d), multipart (-F, files streamed) or JSON (--json) body and print the response.")

    @OptionGroup var options: RequestOptions

    @Option(name: .customShort("d"), help: ArgumentHelp("A form field, key=value. Repeatable.", valueName: "field"))
    var fields: [String] = []

    @Option(help: ArgumentHelp("A JSON document to send as the body.", valueName: "json"))
    var json: String?

    @Option(name: .customShort("F"), help: ArgumentHelp("A multipart/form-data part: name=value, or name=@path to send a file (streamed). Repeatable.", valueName: "part"))
    var parts: [String] = []

    @Flag(help: "If the host cannot be reached, freeze the request in the outbox (print 'frozen <id>', exit 0); 'courier outbox flush' sends it later.")
    var freezable = false

    @OptionGroup var dataDirectory: OutboxCommand.DataDirectoryOption

    func run() async throws {
        try await runPost()
    }

    nonisolated func runPost() async throws {
        if [json != nil, !fields.isEmpty, !parts.isEmpty].filter({ $0 }).count > 1 {
            throw CLIFailure.usage("use one of -d fields, -F parts or --json")
        }
        let body: RequestBody
        if !parts.isEmpty {
            body = .multipart(try Self.form(parts))
        } else if let json {
            let data = Data(json.utf8)
            guard (try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])) != nil else {
                throw CLIFailure.usage("--json is not valid JSON")
            }
            body = .data(data, contentType: "application/json")
        } else {
            var form: [String: ParameterValue] = [:]
            for field in fields {
                guard let equals = field.firstIndex(of: "="), equals != field.startIndex else {
                    throw CLIFailure.usage("field '\(field)' is not key=value")
                }
                form[String(field[..<equals])] = .string(String(field[field.index(after: equals)...]))
            }
            body = .form(form)
        }
        let outboxLocation = try await dataDirectory.location()
        let engine = try options.makeEngine {
            $0.outbox = outboxLocation
            $0.replaysOutbox = false
            // One pipeline for the tool: `courier outbox flush` (whose -H, --bearer and --retry may differ)
            // replays what any `courier post --freezable` froze.
            $0.outboxName = OutboxCommand.pipelineName
        }
        let operation = engine.operation(url: PipelineOptions.withoutUserInfo(options.url), method: .post, body: body)
        operation.isFreezable = freezable
        try await options.run(operation, on: engine)
    }

    /// `-F name=value` and `-F name=@path` as a multipart form; a malformed part or a missing file is a
    /// usage error.
    static func form(_ parts: [String]) throws(CLIFailure) -> MultipartForm {
        var form = MultipartForm()
        for part in parts {
            guard let equals = part.firstIndex(of: "="), equals != part.startIndex else {
                throw CLIFailure.usage("part '\(part)' is not name=value or name=@file")
            }
            let name = String(part[..<equals])
            let value = part[part.index(after: equals)...]
            if value.hasPrefix("@") {
                let path = String(value.dropFirst())
                guard FileManager.default.isReadableFile(atPath: path) else { throw CLIFailure.usage("cannot read '\(path)' for part '\(name)'") }
                form.addFile(URL(fileURLWithPath: path), name: name)
            } else {
                form.addField(String(value), name: name)
            }
        }
        return form
    }
}
