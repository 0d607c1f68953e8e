import Foundation
import Testing
import Courier

/// Issue 11 item 8, tier 1: every fuzz target's seed corpus (`Tests/FuzzCorpus/<target>`) runs through the
/// same entry points as the libFuzzer harness (`scripts/fuzz`), with their property checks, so that the
/// seeds and the checks stay valid in an ordinary `swift test`. Inputs the fuzzer found crashing are
/// regression tests of their own, next to their parser's tests.
@Suite("Fuzz corpus")
struct FuzzCorpusTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("FuzzCorpus")

    @Test(arguments: FuzzEntryPoints.Parser.allCases)
    func seedsPassTheirChecks(_ parser: FuzzEntryPoints.Parser) throws {
        let directory = Self.corpus.appendingPathComponent(parser.rawValue)
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        #expect(!names.isEmpty, "no seeds for \(parser.rawValue)")
        for name in names {
            let data = try Data(contentsOf: directory.appendingPathComponent(name))
            FuzzEntryPoints.run(parser, Array(data))
        }
    }

    /// Inputs every parser must survive: empty, invalid UTF-8, control bytes, lone quotes and escapes,
    /// huge numbers.
    @Test(arguments: FuzzEntryPoints.Parser.allCases)
    func hostileInputs(_ parser: FuzzEntryPoints.Parser) {
        let inputs: [[UInt8]] = [
            [], [0], [0xFF, 0xFE, 0x80], Array("\"".utf8), Array("\\".utf8), Array("=\",;\\\n".utf8),
            Array("bytes 0-99999999999999999999/9".utf8), Array("bytes 9223372036854775806-9223372036854775806/9223372036854775807".utf8),
            Array("max-age=99999999999999999999999".utf8), Array("Sun, 31 Dec 9999 23:59:60 GMT".utf8),
            Array("Digest realm=\"\\".utf8), Array("<".utf8), Array("a=b; expires=99:99:99 1 jan 99999".utf8),
        ]
        for input in inputs { FuzzEntryPoints.run(parser, input) }
    }
}
