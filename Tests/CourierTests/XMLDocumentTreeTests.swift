import Foundation
import Testing
@testable import Courier

@Suite("XMLDocumentTree")
struct XMLDocumentTreeTests {
    private func parse(_ xml: String) -> XMLDocumentTree? {
        XMLDocumentTree(data: Data(xml.utf8))
    }

    @Test func parsesSimpleDocument() throws {
        let tree = try #require(parse("<?xml version=\"1.0\"?><greeting>Hello</greeting>"))
        #expect(tree == XMLDocumentTree(root: .init(name: "greeting", text: "Hello")))
    }

    @Test func parsesNestedElementsAndAttributes() throws {
        let xml = """
        <feed version="2">
          <entry id="1" lang="en"><title>First</title></entry>
          <entry id="2"><title>Second</title><link href="https://x/?a=1&amp;b=2"/></entry>
          <meta/>
        </feed>
        """
        let tree = try #require(parse(xml))
        let root = tree.root
        #expect(root.name == "feed")
        #expect(root.attributes == ["version": "2"])
        #expect(root.children.map(\.name) == ["entry", "entry", "meta"])
        let entries = root.children(named: "entry")
        #expect(entries.map { $0.attributes["id"] } == ["1", "2"])
        #expect(entries.first?.attributes == ["id": "1", "lang": "en"])
        #expect(root.child(named: "entry")?.child(named: "title")?.text == "First")
        #expect(entries.last?.child(named: "link")?.attributes["href"] == "https://x/?a=1&b=2")
        #expect(root.child(named: "meta") == XMLDocumentTree.Element(name: "meta"))
        #expect(root.child(named: "missing") == nil)
        #expect(root.children(named: "missing").isEmpty)
    }

    @Test func textIsDirectContentOnlyAndNotTrimmed() throws {
        let tree = try #require(parse("<a> one <b>inner</b> two </a>"))
        #expect(tree.root.text == " one  two ")
        #expect(tree.root.child(named: "b")?.text == "inner")
    }

    @Test func cdataIsIncludedInText() throws {
        let tree = try #require(parse("<script>x <![CDATA[<b>not a tag</b> & raw]]> y</script>"))
        #expect(tree.root.text == "x <b>not a tag</b> & raw y")
        #expect(tree.root.children.isEmpty)
    }

    @Test func entityReferencesAreDecoded() throws {
        let tree = try #require(parse("<t a=\"&quot;q&quot;\">&amp; &lt;x&gt; &apos; &#65;&#x42;</t>"))
        #expect(tree.root.text == "& <x> ' AB")
        #expect(tree.root.attributes["a"] == "\"q\"")
    }

    @Test func namespacePrefixesAreKeptInNames() throws {
        let tree = try #require(parse("<atom:feed xmlns:atom=\"http://www.w3.org/2005/Atom\"><atom:link rel=\"self\"/></atom:feed>"))
        #expect(tree.root.name == "atom:feed")
        #expect(tree.root.child(named: "atom:link")?.attributes["rel"] == "self")
    }

    @Test func unicodeContent() throws {
        let tree = try #require(parse("<p>café 😀</p>"))
        #expect(tree.root.text == "café 😀")
    }

    @Test(arguments: ["<a>", "<a></b>", "<a><b></a></b>", "not xml", "<a attr=noquotes/>", "<a>&undefined;</a>", "<a/><b/>", "<a>\u{0}</a>", "</a>"])
    func malformedDocumentsAreNil(xml: String) {
        #expect(parse(xml) == nil)
    }

    @Test func emptyAndWhitespaceOnlyDocumentsAreNil() {
        #expect(XMLDocumentTree(data: Data()) == nil)
        #expect(parse("   \n") == nil)
        #expect(parse("<?xml version=\"1.0\"?>") == nil)
        #expect(XMLDocumentTree(data: Data([0xFF, 0xFE, 0x00])) == nil)
    }

    @Test func externalEntitiesAreNotResolved() {
        let xml = """
        <?xml version="1.0"?>
        <!DOCTYPE r [<!ENTITY ext SYSTEM "file:///etc/hostname">]>
        <r>&ext;</r>
        """
        // Either parsing fails or the entity expands to nothing; the file is never read into the tree.
        if let tree = parse(xml) {
            #expect(tree.root.text.isEmpty)
        }
    }

    @Test func entityExpansionBombIsNotExpanded() {
        var declarations = "<!ENTITY e0 \"aaaaaaaaaa\">"
        for level in 1...9 {
            declarations += "<!ENTITY e\(level) \"" + String(repeating: "&e\(level - 1);", count: 10) + "\">"
        }
        let xml = "<?xml version=\"1.0\"?><!DOCTYPE l [\(declarations)]><l>&e9;</l>"
        // libxml2 refuses the amplification (nil) or leaves the entity unexpanded.
        if let tree = parse(xml) {
            #expect(tree.root.text.utf8.count < 1_000)
        }
    }

    @Test func nestingLimitIsEnforced() {
        func nested(_ depth: Int) -> String {
            String(repeating: "<a>", count: depth) + String(repeating: "</a>", count: depth)
        }
        #expect(parse(nested(XMLDocumentTree.maximumDepth + 1)) == nil)
    }

    @Test func excessiveNestingIsRejectedWithoutCrashing() {
        let depth = 5000
        let xml = String(repeating: "<a>", count: depth) + String(repeating: "</a>", count: depth)
        #expect(parse(xml) == nil)
    }

    @Test func moderateNestingIsAccepted() throws {
        let depth = 100
        let xml = String(repeating: "<a>", count: depth) + "x" + String(repeating: "</a>", count: depth)
        var element = try #require(parse(xml)).root
        for _ in 1..<depth {
            element = try #require(element.child(named: "a"))
        }
        #expect(element.text == "x")
    }
}
