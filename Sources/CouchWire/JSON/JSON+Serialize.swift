extension JSON {
    /// Appends the compact JSON text of this value: no spaces, members in order, numbers as their exact
    /// text, strings escaped like CouchDB's jiffy encoder (see ``appendQuoted(_:to:)``).
    ///
    /// Open containers are kept on a heap stack, not in recursive calls, so any depth is safe on a small
    /// thread stack.
    public func serialize(into buffer: inout [UInt8]) {
        /// A container being written and the index of its next child.
        enum Open {
            case array([JSON], next: Int)
            case object(JSONObject, next: Int)
        }
        var open: [Open] = []
        var current: JSON? = self
        while true {
            if let value = current {
                current = nil
                switch value {
                case .null, .bool, .number, .string:
                    _ = JSON.appendScalar(value, to: &buffer)
                case .array(let elements):
                    buffer.append(UInt8(ascii: "["))
                    if let first = elements.first {
                        open.append(.array(elements, next: 1))
                        current = first
                        continue
                    }
                    buffer.append(UInt8(ascii: "]"))
                case .object(let object):
                    buffer.append(UInt8(ascii: "{"))
                    if let first = object.first {
                        JSON.appendQuoted(first.key, to: &buffer)
                        buffer.append(UInt8(ascii: ":"))
                        open.append(.object(object, next: 1))
                        current = first.value
                        continue
                    }
                    buffer.append(UInt8(ascii: "}"))
                }
            }
            // The current value is written: write its container's following scalar children in place,
            // and descend (keeping the container open) at the next array or object, or close it.
            guard let top = open.popLast() else { return }
            switch top {
            case .array(let elements, var next):
                while next < elements.count {
                    buffer.append(UInt8(ascii: ","))
                    let child = elements[next]
                    next += 1
                    if !JSON.appendScalar(child, to: &buffer) {
                        open.append(.array(elements, next: next))
                        current = child
                        break
                    }
                }
                if current == nil { buffer.append(UInt8(ascii: "]")) }
            case .object(let object, var next):
                while next < object.count {
                    let member = object[next]
                    next += 1
                    buffer.append(UInt8(ascii: ","))
                    JSON.appendQuoted(member.key, to: &buffer)
                    buffer.append(UInt8(ascii: ":"))
                    if !JSON.appendScalar(member.value, to: &buffer) {
                        open.append(.object(object, next: next))
                        current = member.value
                        break
                    }
                }
                if current == nil { buffer.append(UInt8(ascii: "}")) }
            }
        }
    }

    /// Writes `value` if it is a scalar; returns false (writing nothing) for arrays and objects.
    @inline(__always)
    private static func appendScalar(_ value: JSON, to buffer: inout [UInt8]) -> Bool {
        switch value {
        case .null: appendLiteral("null", to: &buffer)
        case .bool(let flag): appendLiteral(flag ? "true" : "false", to: &buffer)
        case .number(let number): buffer.append(contentsOf: number.text.utf8)
        case .string(let string): appendQuoted(string, to: &buffer)
        case .array, .object: return false
        }
        return true
    }

    /// The compact JSON text of this value.
    public func serialized() -> [UInt8] {
        var buffer: [UInt8] = []
        serialize(into: &buffer)
        return buffer
    }

    /// The compact JSON text of this value as a string.
    public var serializedString: String { String(decoding: serialized(), as: UTF8.self) }

    /// Appends `string` as a JSON string literal, escaped as CouchDB's jiffy does: `"` and `\` with a
    /// backslash, `\b \f \n \r \t` by name, other bytes below 0x20 as `\u00XX` (uppercase hex); `/` and
    /// all non-ASCII characters are written raw as UTF-8.
    ///
    /// - Parameters:
    ///   - string: The text to quote.
    ///   - buffer: Where the literal, with its quotes, is appended.
    public static func appendQuoted(_ string: String, to buffer: inout [UInt8]) {
        var string = string
        string.withUTF8 { utf8 in
            buffer.append(UInt8(ascii: "\""))
            let raw = UnsafeRawBufferPointer(utf8)
            var runStart = 0
            while true {
                let k = JSONScan.plainRun(raw, from: runStart).end
                guard k < utf8.count else { break }
                let byte = utf8[k]
                buffer.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<k]))
                buffer.append(UInt8(ascii: "\\"))
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): buffer.append(byte)
                case 0x08: buffer.append(UInt8(ascii: "b"))
                case 0x0C: buffer.append(UInt8(ascii: "f"))
                case 0x0A: buffer.append(UInt8(ascii: "n"))
                case 0x0D: buffer.append(UInt8(ascii: "r"))
                case 0x09: buffer.append(UInt8(ascii: "t"))
                default:
                    let hex: StaticString = "0123456789ABCDEF"
                    buffer.append(UInt8(ascii: "u"))
                    buffer.append(UInt8(ascii: "0"))
                    buffer.append(UInt8(ascii: "0"))
                    buffer.append(hex.utf8Start[Int(byte >> 4)])
                    buffer.append(hex.utf8Start[Int(byte & 0xF)])
                }
                runStart = k + 1
            }
            buffer.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
            buffer.append(UInt8(ascii: "\""))
        }
    }

    private static func appendLiteral(_ literal: StaticString, to buffer: inout [UInt8]) {
        buffer.append(contentsOf: UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }
}
