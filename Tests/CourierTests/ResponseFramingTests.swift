import HTTPTypes
import Testing
@testable import Courier

/// How a response's body is framed for the body limit and download progress: its declared length (which
/// lets an oversized body fail before any of it is read) and whether a content coding makes that length
/// say nothing about the decoded bytes.
@Suite("Response framing") struct ResponseFramingTests {
    static let cases: [(fields: [(String, String)], length: Int64?, isEncoded: Bool)] = [
        ([], nil, false),
        ([("Content-Length", "42")], 42, false),
        ([("Content-Length", "42"), ("Content-Length", "42")], 42, false),
        ([("Content-Length", "42"), ("Content-Length", "43")], nil, false),
        ([("Content-Length", "x"), ("Content-Length", "42")], nil, false),
        ([("Content-Length", "-1")], -1, false),
        ([("Content-Length", "99999999999999999999")], nil, false),
        ([("Content-Encoding", "gzip"), ("Content-Length", "10")], 10, true),
        ([("Content-Encoding", "identity")], nil, false),
        ([("Content-Encoding", "IDENTITY, identity")], nil, false),
        ([("Content-Encoding", "identity"), ("Content-Encoding", "br")], nil, true),
        ([("Content-Encoding", "")], nil, false),
        ([("Content-Encoding", " , gzip")], nil, true),
    ]

    @Test(arguments: cases.indices) func lengthAndEncodingAreReadInOnePass(index: Int) {
        let (pairs, length, isEncoded) = Self.cases[index]
        var fields = HTTPFields()
        for (name, value) in pairs { fields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
        let framing = RequestExecutor.framing(of: fields)
        #expect(framing.length == length, "\(pairs)")
        #expect(framing.isEncoded == isEncoded, "\(pairs)")
    }
}
