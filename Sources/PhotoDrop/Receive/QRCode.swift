import CQRencode
import CouchServer

/// A QR code symbol: a square of dark and light modules, made by Debian's libqrencode.
///
/// The value is a plain grid so that the renderers (terminal, PNG) and their tests need no C.
public struct QRCode: Sendable, Equatable {
    /// Modules per side, without the quiet zone.
    public let size: Int
    /// Row-major, `true` for a dark module.
    public let modules: [Bool]

    /// Light modules around the symbol that scanners need to find it (ISO/IEC 18004 asks for four).
    public static let quietZone = 4

    public init(size: Int, modules: [Bool]) {
        precondition(modules.count == size * size, "a QR code is square")
        self.size = size
        self.modules = modules
    }

    /// Encodes `text` as bytes (8-bit mode, so the URL's case is kept) at error correction level M.
    /// - Returns: nil when libqrencode refuses (text too long for version 40, or out of memory).
    public static func encode(_ text: String) -> QRCode? {
        guard let symbol = text.withCString({ QRcode_encodeString8bit($0, 0, QR_ECLEVEL_M) }) else { return nil }
        defer { QRcode_free(symbol) }
        let width = Int(symbol.pointee.width)
        guard width > 0, let data = symbol.pointee.data else { return nil }
        // libqrencode's bit 0 is "dark"; the other bits say what kind of module it is.
        let modules = (0..<(width * width)).map { data[$0] & 1 == 1 }
        return QRCode(size: width, modules: modules)
    }

    /// Whether the module at (`x`, `y`) is dark; the quiet zone and anything outside are light.
    public func isDark(x: Int, y: Int) -> Bool {
        guard x >= 0, y >= 0, x < size, y < size else { return false }
        return modules[y * size + x]
    }
}
