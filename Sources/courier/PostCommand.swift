import ArgumentParser
import Courier
import Foundation

/// `courier post URL -d key=value ... | --json '{...}'`.
struct PostCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "post",
        abstract: "Send a POST request with a form (-d) or JSON (--json) body and print the response.")

    @OptionGroup var options: RequestOptions

    @Option(name: .customShort("d"), help: ArgumentHelp("A form field, key=value. Repeatable.", valueName: "field"))
    var fields: [String] = []

    @Option(help: ArgumentHelp("A JSON document to send as the body.", valueName: "json"))
    var json: String?

    @Flag(help: "If the host cannot be reached, freeze the request in the outbox (print 'frozen <id>', exit 0); 'courier outbox flush' sends it later.")
    var freezable = false

    @OptionGroup var dataDirectory: OutboxCommand.DataDirectoryOption

    func run() async throws {
        try await runPost()
    }

    nonisolated func runPost() async throws {
        if json != nil && !fields.isEmpty {
            throw CLIFailure.usage("use either -d fields or --json, not both")
        }
        let body: RequestBody
        if let json {
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
        let engine = try options.makeEngine {
            $0.dataDirectory = dataDirectory.url
            $0.replaysOutbox = false
        }
        let operation = engine.operation(url: options.url, method: .post, body: body)
        operation.isFreezable = freezable
        try await options.run(operation, on: engine)
    }
}
