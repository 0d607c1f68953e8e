import HTTPTypes
import Testing
@testable import Courier

/// Tier 1: how a request's fields go out over HTTP/1.1.
@Suite("HTTP/1.1 fields")
struct HTTP1FieldsTests {
    @Test func cookiesAreJoinedIntoOneFieldAtTheFirstOnesPlaceAndTheRestKeepTheirOrder() {
        var fields = HTTPFields()
        fields.append(HTTPField(name: .accept, value: "*/*"))
        fields.append(HTTPField(name: .cookie, value: "a=1"))
        fields.append(HTTPField(name: HTTPField.Name("X-Trace")!, value: "t"))
        fields.append(HTTPField(name: .cookie, value: "b=2"))
        var written: [String] = []
        fields.forEachHTTP1Field { written.append("\($0): \($1)") }
        #expect(written == ["Accept: */*", "Cookie: a=1; b=2", "X-Trace: t"])
        #expect(fields.http1Fields.map { "\($0.name): \($0.value)" } == written)
    }

    @Test func fieldsWithoutCookiesGoOutAsTheyAre() {
        let fields: HTTPFields = [.accept: "*/*", .userAgent: "courier"]
        var written: [String] = []
        fields.forEachHTTP1Field { written.append("\($0): \($1)") }
        #expect(written == ["Accept: */*", "User-Agent: courier"])
    }
}
