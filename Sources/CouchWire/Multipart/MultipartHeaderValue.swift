/// A header value with parameters, such as `multipart/related; boundary="b"` or
/// `attachment; filename=photo`.
///
/// Parsing is lenient the way Couchbase Lite and OkHttp need it: parameter values may be quoted
/// (with `\` escapes) or bare, names are compared without regard to case.
public struct MultipartHeaderValue: Sendable, Equatable {
    /// The part before the first `;`, trimmed and lowercased (`application/json`).
    public var value: String
    /// Parameters in order, names lowercased, values unquoted.
    public var parameters: [(name: String, value: String)]

    /// Parses a header value; never fails, unparseable parameters are skipped.
    /// - Parameter text: The raw header value.
    public init(parsing text: String) {
        let bytes = Array(text.utf8)
        var index = 0
        var head = [UInt8]()
        while index < bytes.count, bytes[index] != UInt8(ascii: ";") {
            head.append(bytes[index])
            index += 1
        }
        value = Self.trimmed(head).lowercased()
        parameters = []
        while index < bytes.count {
            // At a ';': read `name`, optional `= value`.
            index += 1
            var name = [UInt8]()
            while index < bytes.count, bytes[index] != UInt8(ascii: "="), bytes[index] != UInt8(ascii: ";") {
                name.append(bytes[index])
                index += 1
            }
            guard index < bytes.count, bytes[index] == UInt8(ascii: "=") else { continue }
            index += 1
            while index < bytes.count, bytes[index] == UInt8(ascii: " ") || bytes[index] == UInt8(ascii: "\t") {
                index += 1
            }
            var raw = [UInt8]()
            if index < bytes.count, bytes[index] == UInt8(ascii: "\"") {
                index += 1
                while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
                    if bytes[index] == UInt8(ascii: "\\"), index + 1 < bytes.count { index += 1 }
                    raw.append(bytes[index])
                    index += 1
                }
                // Skip the closing quote and anything up to the next ';'.
                while index < bytes.count, bytes[index] != UInt8(ascii: ";") { index += 1 }
                let key = Self.trimmed(name).lowercased()
                if !key.isEmpty { parameters.append((key, String(decoding: raw, as: UTF8.self))) }
            } else {
                while index < bytes.count, bytes[index] != UInt8(ascii: ";") {
                    raw.append(bytes[index])
                    index += 1
                }
                let key = Self.trimmed(name).lowercased()
                if !key.isEmpty { parameters.append((key, Self.trimmed(raw))) }
            }
        }
    }

    /// The first parameter called `name` (case-insensitive), unquoted.
    public func parameter(_ name: String) -> String? {
        let key = name.lowercased()
        return parameters.first { $0.name == key }?.value
    }

    public static func == (lhs: MultipartHeaderValue, rhs: MultipartHeaderValue) -> Bool {
        lhs.value == rhs.value && lhs.parameters.elementsEqual(rhs.parameters) { $0 == $1 }
    }

    private static func trimmed(_ bytes: [UInt8]) -> String {
        var slice = bytes[...]
        while let first = slice.first, first == UInt8(ascii: " ") || first == UInt8(ascii: "\t") {
            slice = slice.dropFirst()
        }
        while let last = slice.last, last == UInt8(ascii: " ") || last == UInt8(ascii: "\t") {
            slice = slice.dropLast()
        }
        return String(decoding: slice, as: UTF8.self)
    }
}

/// Looks up part headers, which the parser keeps as sent.
public enum MultipartHeaders {
    /// The value of the first header called `name` (case-insensitive), or nil.
    public static func value(_ name: String, in headers: [(String, String)]) -> String? {
        let key = name.lowercased()
        return headers.first { $0.0.lowercased() == key }?.1
    }

    /// The `filename` parameter of a part's `Content-Disposition`, quoted or not.
    public static func filename(in headers: [(String, String)]) -> String? {
        value("Content-Disposition", in: headers).flatMap { MultipartHeaderValue(parsing: $0).parameter("filename") }
    }
}
