extension CourierImage {
    /// The image scaled down to `thumbnail`, by area averaging (every source pixel counts, partly covered ones
    /// by the covered fraction; RGBA averaged premultiplied).
    ///
    /// - `.fit`: the whole image inside the box, aspect ratio kept (the longer side as long as the box's).
    /// - `.fill`: scaled to cover the box, then cropped around the centre to exactly the box.
    ///
    /// Never upscales: an image already inside a `.fit` box comes back unchanged; a `.fill` box larger than
    /// the image gives the largest centred crop of the box's aspect ratio at the source's resolution.
    public func thumbnail(_ thumbnail: Thumbnail) -> CourierImage {
        let w = Double(width), h = Double(height)
        let boxWidth = Double(thumbnail.width), boxHeight = Double(thumbnail.height)
        switch thumbnail.contentMode {
        case .fit:
            let scale = min(boxWidth / w, boxHeight / h)
            guard scale < 1 else { return self }
            let outWidth = max(1, min(thumbnail.width, Int((w * scale).rounded())))
            let outHeight = max(1, min(thumbnail.height, Int((h * scale).rounded())))
            if outWidth == width && outHeight == height { return self }
            return resampled(region: (0, 0, w, h), width: outWidth, height: outHeight)
        case .fill:
            let scale = max(boxWidth / w, boxHeight / h)
            // The source area the box covers; at scale 1 when the box is larger than the image (no upscaling).
            let regionWidth = min(w, boxWidth / scale), regionHeight = min(h, boxHeight / scale)
            let outWidth = scale >= 1 ? max(1, Int(regionWidth.rounded())) : thumbnail.width
            let outHeight = scale >= 1 ? max(1, Int(regionHeight.rounded())) : thumbnail.height
            let region = ((w - regionWidth) / 2, (h - regionHeight) / 2, regionWidth, regionHeight)
            if outWidth == width && outHeight == height { return self }
            return resampled(region: region, width: outWidth, height: outHeight)
        }
    }

    /// The image scaled to exactly `width` x `height` (aspect ratio not kept), by area averaging. Upscaling
    /// with area averaging repeats source pixels (blending at their edges): meant for downscaling.
    public func resized(width newWidth: Int, height newHeight: Int) -> CourierImage {
        let outWidth = max(1, newWidth), outHeight = max(1, newHeight)
        if outWidth == width && outHeight == height { return self }
        return resampled(region: (0, 0, Double(width), Double(height)), width: outWidth, height: outHeight)
    }

    private func resampled(region: (x: Double, y: Double, width: Double, height: Double), width outWidth: Int, height outHeight: Int) -> CourierImage {
        let output = pixels.withUnsafeBufferPointer { source in
            AreaResampler.resample(
                source, width: width, height: height, channels: pixelFormat.bytesPerPixel, alpha: pixelFormat.hasAlpha,
                region: region, outWidth: outWidth, outHeight: outHeight
            )
        }
        return CourierImage(unchecked: outWidth, outHeight, pixelFormat, output, sourceFormat)
    }
}
