// The platform's decoders: the C codecs on Linux, ImageIO on Apple platforms.
#if canImport(CCourierImageCodecs)
let platformDecoders: [any ImageDecoder] = [PNGDecoder(), JPEGDecoder(), WebPDecoder(), GIFDecoder()]
#elseif canImport(ImageIO)
let platformDecoders: [any ImageDecoder] = [ImageIODecoder()]
#else
let platformDecoders: [any ImageDecoder] = []
#endif
