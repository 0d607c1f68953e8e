// TEMPORARY (removed when the codecs branch merges): stand-ins so the pipeline compiles alone.
public struct ImageEncoding: Sendable, Hashable {
    public let name: String
    public static func jpeg(quality: Int = 85) -> ImageEncoding { ImageEncoding(name: "jpeg") }
    public static let png = ImageEncoding(name: "png")
}
public import Foundation
import Courier
extension CourierImage {
    public func thumbnail(_ thumbnail: Thumbnail) -> CourierImage { self }
    public func encoded(as encoding: ImageEncoding) throws(NetworkError) -> Data { Data(pixels) }
}
