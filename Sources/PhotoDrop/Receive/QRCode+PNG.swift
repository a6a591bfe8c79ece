import CouchServer

extension QRCode {
    /// The symbol as a PNG image: `scale` pixels per module, black on white, with the quiet zone.
    public func png(scale: Int = 8) -> [UInt8] {
        let side = (size + 2 * QRCode.quietZone) * scale
        var pixels = [UInt8](repeating: 255, count: side * side)
        for y in 0..<size {
            for x in 0..<size where isDark(x: x, y: y) {
                let left = (x + QRCode.quietZone) * scale
                let top = (y + QRCode.quietZone) * scale
                for row in top..<(top + scale) {
                    let start = row * side + left
                    pixels.replaceSubrange(start..<(start + scale), with: repeatElement(0, count: scale))
                }
            }
        }
        return PNGEncoder.grayscale(width: side, height: side, pixels: pixels)
    }
}
