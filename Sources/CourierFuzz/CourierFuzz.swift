// The libFuzzer harness of Courier's header parsers, the courier command line's value parsers
// (`option-values`, through the same `FuzzEntryPoints`) and CourierImages' decoders (scripts/fuzz builds
// and runs it).
//
// Built by scripts/fuzz with `--sanitize=fuzzer -Xswiftc -sanitize=fuzzer,address -Xswiftc -DCOURIER_FUZZ`
// (one Swift -sanitize= flag: swiftc keeps only the last; see the script): libFuzzer
// supplies `main` and calls `LLVMFuzzerTestOneInput` for every input; the parser is chosen by the
// COURIER_FUZZ_TARGET environment variable (`cache-control`, `http-date`, ...; see
// `FuzzEntryPoints.Parser`), read once.
//
// In an ordinary build (no COURIER_FUZZ) it is a small replay tool instead, with no sanitizer and no
// libFuzzer: `courier-fuzz TARGET FILE...` runs the given inputs (a crash file, a corpus) through one
// parser, which is handy to reproduce a crash under the debugger.
import Courier
import CourierImages
import Foundation

/// A target: one of Courier's parsers (header fields, the command line's values), or one of
/// CourierImages' decoders.
enum FuzzTarget {
    case parser(FuzzEntryPoints.Parser)
    case image(ImageFuzzEntryPoints.Target)

    init?(_ name: String) {
        if let parser = FuzzEntryPoints.Parser(rawValue: name) {
            self = .parser(parser)
        } else if let target = ImageFuzzEntryPoints.Target(rawValue: name) {
            self = .image(target)
        } else {
            return nil
        }
    }

    static var names: [String] { FuzzEntryPoints.Parser.allCases.map(\.rawValue) + ImageFuzzEntryPoints.Target.allCases.map(\.rawValue) }

    func run(_ bytes: UnsafeRawBufferPointer) {
        switch self {
        case .parser(let parser): FuzzEntryPoints.run(parser, bytes)
        case .image(let target): ImageFuzzEntryPoints.run(target, bytes)
        }
    }
}

#if COURIER_FUZZ

/// The parser under test, from COURIER_FUZZ_TARGET.
let fuzzedParser: FuzzTarget = {
    let name = ProcessInfo.processInfo.environment["COURIER_FUZZ_TARGET"] ?? ""
    guard let parser = FuzzTarget(name) else {
        let names = FuzzTarget.names.joined(separator: ", ")
        FileHandle.standardError.write(Data("courier-fuzz: set COURIER_FUZZ_TARGET to one of: \(names)\n".utf8))
        exit(2)
    }
    return parser
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func courierFuzzTestOneInput(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    fuzzedParser.run(UnsafeRawBufferPointer(start: count > 0 ? start : nil, count: count))
    return 0
}

#else

@main
enum CourierFuzzReplay {
    static func main() {
        let arguments = CommandLine.arguments.dropFirst()
        guard let name = arguments.first, let parser = FuzzTarget(name) else {
            let names = FuzzTarget.names.joined(separator: "|")
            FileHandle.standardError.write(Data("usage: courier-fuzz \(names) FILE...\n(scripts/fuzz builds the libFuzzer harness)\n".utf8))
            exit(2)
        }
        for path in arguments.dropFirst() {
            guard let data = FileManager.default.contents(atPath: path) else {
                FileHandle.standardError.write(Data("courier-fuzz: cannot read \(path)\n".utf8))
                exit(1)
            }
            data.withUnsafeBytes { parser.run($0) }
        }
    }
}

#endif
