public import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// A small, immutable-by-value XML document tree parsed with Foundation's `XMLParser`.
///
/// ```swift
/// let tree = XMLDocumentTree(data: Data("<feed><entry id=\"1\">Hi</entry></feed>".utf8))
/// tree?.root.child(named: "entry")?.attributes["id"]  // "1"
/// ```
///
/// External entities are never resolved. Namespace prefixes are kept as part of
/// element and attribute names (`atom:link`).
public struct XMLDocumentTree: Sendable, Hashable {
    /// An XML element with its attributes, child elements and direct text content.
    public struct Element: Sendable, Hashable {
        /// The element's qualified name, e.g. `entry` or `atom:link`.
        public var name: String
        /// The element's attributes by qualified name.
        public var attributes: [String: String]
        /// The child elements, in document order.
        public var children: [Element]
        /// The character data directly inside this element (including CDATA sections),
        /// concatenated in document order and not trimmed. Text of child elements is not included.
        public var text: String

        /// Creates an element.
        /// - Parameters:
        ///   - name: The qualified element name.
        ///   - attributes: The attributes by name.
        ///   - children: The child elements in document order.
        ///   - text: The element's direct character data.
        public init(name: String, attributes: [String: String] = [:], children: [Element] = [], text: String = "") {
            self.name = name
            self.attributes = attributes
            self.children = children
            self.text = text
        }

        /// The first child element called `name`.
        /// - Parameter name: The qualified element name to look for.
        /// - Returns: The first matching direct child, or `nil`.
        public func child(named name: String) -> Element? {
            children.first { $0.name == name }
        }

        /// All child elements called `name`, in document order.
        /// - Parameter name: The qualified element name to look for.
        /// - Returns: The matching direct children.
        public func children(named name: String) -> [Element] {
            children.filter { $0.name == name }
        }
    }

    /// The document's root element.
    public var root: Element

    /// Creates a document from a root element.
    /// - Parameter root: The root element.
    public init(root: Element) {
        self.root = root
    }

    /// Parses `data` as XML.
    ///
    /// External entities are not resolved, and documents nested deeper than
    /// ``maximumDepth`` are rejected.
    /// - Parameter data: The XML document bytes.
    /// - Returns: `nil` for malformed XML or a document without a root element.
    public init?(data: Data) {
        guard !data.isEmpty else { return nil }
        let builder = TreeBuilder()
        let parser = XMLParser(data: data)
        parser.shouldResolveExternalEntities = false
        parser.shouldProcessNamespaces = false
        parser.shouldReportNamespacePrefixes = false
        parser.delegate = builder
        let succeeded = withExtendedLifetime(builder) { parser.parse() }
        parser.delegate = nil
        guard succeeded, !builder.failed, builder.stack.isEmpty, let root = builder.root else { return nil }
        self.root = root
    }

    /// The deepest element nesting accepted by ``init(data:)``.
    public static let maximumDepth = 512
}

/// `XMLParserDelegate` that assembles ``XMLDocumentTree/Element`` values. Used by one parse only.
private final class TreeBuilder: NSObject, XMLParserDelegate {
    /// Open elements, innermost last.
    var stack: [XMLDocumentTree.Element] = []
    /// The completed root element.
    var root: XMLDocumentTree.Element?
    /// Set when the document violates a structural limit.
    var failed = false

    func parser(
        _ parser: XMLParser,
        didStartElement elementName: String,
        namespaceURI: String?,
        qualifiedName qName: String?,
        attributes attributeDict: [String: String] = [:]
    ) {
        guard root == nil, stack.count < XMLDocumentTree.maximumDepth else {
            fail(parser)
            return
        }
        stack.append(XMLDocumentTree.Element(name: elementName, attributes: attributeDict))
    }

    func parser(
        _ parser: XMLParser,
        didEndElement elementName: String,
        namespaceURI: String?,
        qualifiedName qName: String?
    ) {
        guard let element = stack.popLast() else {
            fail(parser)
            return
        }
        if stack.isEmpty {
            root = element
        } else {
            stack[stack.count - 1].children.append(element)
        }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        guard !stack.isEmpty else { return }
        stack[stack.count - 1].text += string
    }

    func parser(_ parser: XMLParser, foundCDATA CDATABlock: Data) {
        guard !stack.isEmpty else { return }
        stack[stack.count - 1].text += String(decoding: CDATABlock, as: UTF8.self)
    }

    func parser(_ parser: XMLParser, parseErrorOccurred parseError: any Error) {
        failed = true
    }

    /// Records a failure and stops parsing.
    private func fail(_ parser: XMLParser) {
        failed = true
        parser.abortParsing()
    }
}
