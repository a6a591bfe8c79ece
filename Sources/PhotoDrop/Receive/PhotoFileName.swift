import CouchServer
import Foundation

/// File names for exported photos: safe in any directory and for any tool, whatever the sender put in the
/// attachment name or document id.
///
/// A safe name has no `/` or `\`, no `.` or `..` component, no NUL, control, bidirectional-override or
/// line-separator characters, no leading dot (hidden) or dash (read as an option by command-line tools),
/// no trailing dot or space, is NFC, and is at most `maxBytes` bytes of UTF-8 even after a ` (N)` counter,
/// so it fits the 255-byte limit of Linux file systems. Spaces, emoji and other Unicode are kept.
public enum PhotoFileName {
    /// Longest name made, in UTF-8 bytes, counter and extension included.
    public static let maxBytes = 200
    /// Longest extension kept as one, in bytes; a longer "extension" is part of the stem.
    static let maxExtensionBytes = 10
    /// What a name falls back to when neither the attachment name nor the document id has anything left.
    static let fallbackStem = "photo"
    /// Attachment names that say nothing about the photo (PhotoDrop's is `photo`): the document id is used.
    static let uninformativeStems: Set<String> = [
        "photo", "image", "picture", "img", "attachment", "file", "blob", "data", "content", "upload", "video",
        "movie", "untitled",
    ]

    /// The name for one attachment's bytes.
    /// - Parameters:
    ///   - attachment: the attachment's name as stored.
    ///   - docID: the document's id, used when the attachment name says nothing.
    ///   - kind: what the bytes are (sniffed, else from the content type); its extension is added unless the
    ///     name already ends with one of the kind's.
    public static func make(attachment: String, docID: String, kind: ContentSniffer.Kind?) -> String {
        var name = sanitize(attachment)
        let (stem, ext) = split(name)
        if stem.isEmpty || (ext.isEmpty && uninformativeStems.contains(stem.lowercased())) {
            name = sanitize(docID)
            if name.isEmpty { name = fallbackStem }
        }
        if let kind, !kind.extensions.contains(split(name).ext.lowercased()) {
            name += "." + kind.fileExtension
        }
        return numbered(name, 1)
    }

    /// `name` with its counter: `photo.jpg`, `photo (2).jpg`, …, cut to `maxBytes`.
    public static func numbered(_ name: String, _ counter: Int) -> String {
        let (stem, ext) = split(name)
        let suffix = (counter > 1 ? " (\(counter))" : "") + (ext.isEmpty ? "" : "." + ext)
        let room = maxBytes - suffix.utf8.count
        var cut = truncated(stem, toBytes: room)
        while let last = cut.last, last == "." || last.isWhitespace { cut.removeLast() }
        if cut.isEmpty { cut = fallbackStem }
        return cut + suffix
    }

    /// The harmless form of `raw` (possibly empty), before extensions and counters.
    ///
    /// Works on Unicode scalars, not characters: a `/` or `.` followed by a combining mark is one Swift
    /// `Character` that compares unequal to `/` or `.`, yet its first byte is still a slash or a dot.
    public static func sanitize(_ raw: String) -> String {
        var components: [String.UnicodeScalarView] = [String.UnicodeScalarView()]
        for scalar in raw.precomposedStringWithCanonicalMapping.unicodeScalars {
            if scalar == "/" || scalar == "\\" {
                components.append(String.UnicodeScalarView())
            } else if isKept(scalar) {
                // Runs of dots become one: no `..` anywhere, even inside a name.
                if scalar == ".", components[components.count - 1].last == "." { continue }
                components[components.count - 1].append(scalar)
            }
        }
        let joined = components.map(String.init).filter { !$0.isEmpty && $0 != "." }.joined(separator: "_")
        var scalars = Array(joined.unicodeScalars)
        let trimmedStart = scalars.prefix { $0 == "." || $0 == "-" || $0.properties.isWhitespace }.count
        scalars.removeFirst(trimmedStart)
        while let last = scalars.last, last == "." || last.properties.isWhitespace { scalars.removeLast() }
        var view = String.UnicodeScalarView()
        view.append(contentsOf: scalars)
        return String(view)
    }

    /// Everything but control characters (C0, DEL, C1), format characters that reorder or hide text (bidi
    /// overrides, zero-width spaces; the zero-width joiner of emoji sequences is kept), line and paragraph
    /// separators, and unassigned or private-use code points.
    static func isKept(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .control, .lineSeparator, .paragraphSeparator, .surrogate, .privateUse, .unassigned: return false
        case .format: return scalar == "\u{200D}"
        default: return true
        }
    }

    /// `a.b.jpg` → (`a.b`, `jpg`); a leading dot, an empty or overlong extension count as none.
    package static func split(_ name: String) -> (stem: String, ext: String) {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return (name, "") }
        let ext = String(name[name.index(after: dot)...])
        guard !ext.isEmpty, ext.utf8.count <= maxExtensionBytes, !ext.contains(where: \.isWhitespace) else {
            return (name, "")
        }
        return (String(name[..<dot]), ext)
    }

    /// The longest prefix of whole characters with at most `bytes` bytes of UTF-8.
    static func truncated(_ text: String, toBytes bytes: Int) -> String {
        guard text.utf8.count > bytes else { return text }
        var out = ""
        var used = 0
        for character in text {
            let size = character.utf8.count
            if used + size > bytes { break }
            out.append(character)
            used += size
        }
        return out
    }
}
