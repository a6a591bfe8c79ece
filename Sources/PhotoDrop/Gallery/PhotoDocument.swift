import CouchCrypto
import CouchServer
import CouchWire
import Foundation

/// The documents photos are stored as, the same shape `couchlite push` gives them (its outbox in
/// Push/Outbox.swift): id `photo-` and the first 32 hex digits of the file's SHA-256, so the same
/// bytes uploaded from a browser or pushed from a folder are one document; fields `type`,
/// `name`, `taken` (ISO 8601: when the camera says it was taken, with its offset when known, else the file's
/// modification time) and `size`; the file as the one
/// attachment, under its own name.
enum PhotoDocument {
    static func id(sha256: [UInt8]) -> String { id(sha256Hex: sha256.hexString) }

    static func id(sha256Hex: String) -> String { "photo-" + String(sha256Hex.prefix(32)) }

    /// The fields of a photo's document: `camera` (`{"make","model"}`, what the camera wrote) and `width`/`height`
    /// (as displayed) when the file says them, so a Mango query can select by camera or size.
    static func fields(
        name: String, taken: String, size: Int, make: String? = nil, model: String? = nil, width: Int? = nil,
        height: Int? = nil
    ) -> JSONObject {
        var fields = JSONObject([
            ("type", "photo"), ("name", .string(name)), ("taken", .string(taken)), ("size", .int(size)),
        ])
        if make != nil || model != nil {
            var camera = JSONObject()
            if let make { camera["make"] = .string(make) }
            if let model { camera["model"] = .string(model) }
            fields["camera"] = .object(camera)
        }
        if let width, let height, width > 0, height > 0 {
            fields["width"] = .int(width)
            fields["height"] = .int(height)
        }
        return fields
    }
}

/// `Content-Disposition: attachment` for any file name (RFC 6266 with RFC 5987's `filename*`): an
/// ASCII `filename` fallback for old clients and the exact name, UTF-8 percent-encoded.
enum ContentDisposition {
    static func attachment(_ name: String) -> String {
        var fallback = ""
        for scalar in name.unicodeScalars {
            let printable = scalar.value >= 0x20 && scalar.value < 0x7F
            fallback.unicodeScalars.append(printable && scalar != "\"" && scalar != "\\" ? scalar : "_")
        }
        return "attachment; filename=\"\(fallback)\"; filename*=UTF-8''" + encode(name)
    }

    /// RFC 5987 `value-chars`: `attr-char`s as they are, every other byte as `%XX`.
    static func encode(_ text: String) -> String { PercentEncoding.encode(text, alsoKeeping: "!#$&+^`|") }
}
