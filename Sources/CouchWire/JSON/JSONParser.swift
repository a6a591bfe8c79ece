/// A strict RFC 8259 parser over one contiguous byte buffer.
///
/// It is iterative: open containers live in heap arrays (`frames`, `values`, `keys`), not in stack frames,
/// so nesting depth costs no stack (server threads have 512 KiB) and `maxDepth` is only a resource limit.
/// Finished children wait on `values`/`keys` until their container closes, then move into it in one step.
struct JSONParser {
    private struct Frame {
        var isObject: Bool
        /// `values.count` when the container opened; its members are `values[valueStart...]`.
        var valueStart: Int
        /// `keys.count` when the container opened (objects only).
        var keyStart: Int
    }

    private let bytes: UnsafeRawBufferPointer
    private let count: Int
    private let maxDepth: Int
    /// Most heap bytes the value and the parser's stacks may hold so far (see ``JSONMemoryBudget``); `held` is the
    /// estimate, charged as each value is pushed, so a parse stops at the limit instead of after the container.
    private var cap: Int
    /// True when `cap` grows with the input parsed (``JSONMemoryBudget/requestBody``).
    private let proportional: Bool
    private var held = 0
    /// Capacities of `values` and `keys` already charged (a stack's buffer outlives the containers it built).
    private var valuesCharged = 0
    private var keysCharged = 0
    private var i = 0
    private var values: [JSON] = []
    private var keys: [String] = []
    private var frames: [Frame] = []
    /// Reused buffer for strings with escapes.
    private var scratch: [UInt8] = []

    init(bytes: UnsafeRawBufferPointer, maxDepth: Int, memoryBudget: JSONMemoryBudget = .total(.max)) {
        self.bytes = bytes
        self.count = bytes.count
        self.maxDepth = maxDepth
        switch memoryBudget {
        case .total(let bytes):
            cap = bytes
            proportional = false
        case .requestBody:
            cap = JSON.memoryBudget(forInput: 0)
            proportional = true
        }
    }

    /// Heap bytes of one string allocation (header and malloc's rounding) beyond its UTF-8 bytes.
    static let allocationBytes = 48
    /// Heap bytes of one array or member buffer before its elements (measured: a one-element array holds
    /// about 100 bytes), and what each element and member adds (`JSON` is 24 bytes, a key 16 more). Every value
    /// is charged its slot as it is pushed; the stacks' buffers are charged as they grow, since they hold up to
    /// twice the pending values and stay allocated until the parse ends.
    static let containerBytes = 80
    static let elementBytes = 24
    static let keyBytes = 16

    /// Adds `bytes` to the estimate of what the value holds.
    @inline(__always)
    private mutating func charge(_ bytes: Int) throws(JSONError) {
        held &+= bytes
        if held > cap { try overCap() }
    }

    /// The estimate passed `cap`: a proportional budget first grows to what the input parsed so far allows.
    @inline(never)
    private mutating func overCap() throws(JSONError) {
        if proportional {
            cap = JSON.memoryBudget(forInput: i)
            if held <= cap { return }
        }
        throw JSONError(.tooLarge, at: i)
    }

    /// Pushes a finished value, charging its slot in its container (and the stack's growth).
    @inline(__always)
    private mutating func push(_ value: JSON) throws(JSONError) {
        values.append(value)
        try charge(JSONParser.elementBytes)
        if values.capacity != valuesCharged { try chargeStacks() }
    }

    /// Charges the stacks' buffers grown since last charged.
    @inline(never)
    private mutating func chargeStacks() throws(JSONError) {
        let valuesGrowth = max(0, values.capacity - valuesCharged)
        let keysGrowth = max(0, keys.capacity - keysCharged)
        valuesCharged = max(valuesCharged, values.capacity)
        keysCharged = max(keysCharged, keys.capacity)
        try charge(valuesGrowth &* JSONParser.elementBytes &+ keysGrowth &* JSONParser.keyBytes)
    }

    /// Charges a string or number text of `length` UTF-8 bytes (Swift keeps up to 15 inline).
    @inline(__always)
    private mutating func chargeText(_ length: Int) throws(JSONError) {
        if length > 15 { try charge(JSONParser.allocationBytes &+ length) }
    }

    /// Parses the whole buffer as one JSON text (whitespace allowed around the value).
    mutating func parseDocument() throws(JSONError) -> JSON {
        if count >= 3 && bytes[0] == 0xEF && bytes[1] == 0xBB && bytes[2] == 0xBF {
            throw JSONError(.byteOrderMark, at: 0)
        }
        value: while true {
            // A value must start here.
            skipWhitespace()
            guard i < count else { throw JSONError(.unexpectedEnd, at: i) }
            switch bytes[i] {
            case UInt8(ascii: "{"):
                guard frames.count < maxDepth else { throw JSONError(.tooDeep, at: i) }
                i += 1
                skipWhitespace()
                if i < count && bytes[i] == UInt8(ascii: "}") {
                    i += 1
                    try push(.object(JSONObject()))
                } else {
                    frames.append(Frame(isObject: true, valueStart: values.count, keyStart: keys.count))
                    try parseKeyAndColon()
                    continue value
                }
            case UInt8(ascii: "["):
                guard frames.count < maxDepth else { throw JSONError(.tooDeep, at: i) }
                i += 1
                skipWhitespace()
                if i < count && bytes[i] == UInt8(ascii: "]") {
                    i += 1
                    try push(.array([]))
                } else {
                    frames.append(Frame(isObject: false, valueStart: values.count, keyStart: keys.count))
                    continue value
                }
            case UInt8(ascii: "\""):
                i += 1
                try push(.string(try parseString()))
            case UInt8(ascii: "t"):
                try expectLiteral("true")
                try push(.bool(true))
            case UInt8(ascii: "f"):
                try expectLiteral("false")
                try push(.bool(false))
            case UInt8(ascii: "n"):
                try expectLiteral("null")
                try push(.null)
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                try push(.number(try parseNumber()))
            default:
                throw JSONError(.unexpectedCharacter, at: i)
            }
            // A value just ended: move on to the next member or close the containers it completes.
            while let frame = frames.last {
                skipWhitespace()
                guard i < count else { throw JSONError(.unexpectedEnd, at: i) }
                let byte = bytes[i]
                if byte == UInt8(ascii: ",") {
                    i += 1
                    if frame.isObject {
                        skipWhitespace()
                        try parseKeyAndColon()
                    }
                    continue value
                }
                if frame.isObject && byte == UInt8(ascii: "}") {
                    i += 1
                    let n = keys.count - frame.keyStart
                    // The members were charged as pushed; past 16 an index of about 48 bytes per key is kept too.
                    try charge(JSONParser.containerBytes &+ (n > JSONObject.indexThreshold ? n &* 48 : 0))
                    let members = takeMembers(keyStart: frame.keyStart, valueStart: frame.valueStart)
                    try push(.object(JSONObject(parsedMembers: members)))
                } else if !frame.isObject && byte == UInt8(ascii: "]") {
                    i += 1
                    try charge(JSONParser.containerBytes)
                    let elements = takeValues(from: frame.valueStart)
                    try push(.array(elements))
                } else {
                    throw JSONError(.unexpectedCharacter, at: i)
                }
                frames.removeLast()
            }
            break
        }
        skipWhitespace()
        guard i == count else { throw JSONError(.trailingData, at: i) }
        guard let document = values.popLast() else { preconditionFailure("Invalid state: no value parsed") }
        return document
    }

    /// Moves `values[start...]` into a new array and drops them from the stack.
    ///
    /// Moving (rather than copying, then destroying the originals) saves a retain and a release per element;
    /// the vacated slots are refilled with `.null`, which owns nothing, before the stack shrinks.
    private mutating func takeValues(from start: Int) -> [JSON] {
        let n = values.count - start
        let taken = values.withUnsafeMutableBufferPointer { stack in
            [JSON](unsafeUninitializedCapacity: n) { target, initialized in
                guard let source = stack.baseAddress, let destination = target.baseAddress else { return }
                destination.moveInitialize(from: source + start, count: n)
                (source + start).initialize(repeating: .null, count: n)
                initialized = n
            }
        }
        values.removeLast(n)
        return taken
    }

    /// Moves the pending keys and values of an object into one member array and drops them from the stacks.
    private mutating func takeMembers(keyStart: Int, valueStart: Int) -> [JSONObject.Element] {
        let n = keys.count - keyStart
        precondition(values.count - valueStart == n, "Invalid state: keys and values out of step")
        let taken = keys.withUnsafeMutableBufferPointer { keyStack in
            values.withUnsafeMutableBufferPointer { valueStack in
                [JSONObject.Element](unsafeUninitializedCapacity: n) { target, initialized in
                    guard let keyBase = keyStack.baseAddress, let valueBase = valueStack.baseAddress,
                        let destination = target.baseAddress
                    else { return }
                    for k in 0..<n {
                        (destination + k).initialize(
                            to: ((keyBase + keyStart + k).move(), (valueBase + valueStart + k).move()))
                    }
                    (keyBase + keyStart).initialize(repeating: "", count: n)
                    (valueBase + valueStart).initialize(repeating: .null, count: n)
                    initialized = n
                }
            }
        }
        keys.removeLast(n)
        values.removeLast(n)
        return taken
    }

    @inline(__always)
    private mutating func skipWhitespace() {
        while i < count {
            switch bytes[i] {
            case 0x20, 0x0A, 0x0D, 0x09: i += 1
            default: return
            }
        }
    }

    private mutating func parseKeyAndColon() throws(JSONError) {
        guard i < count else { throw JSONError(.unexpectedEnd, at: i) }
        guard bytes[i] == UInt8(ascii: "\"") else { throw JSONError(.unexpectedCharacter, at: i) }
        i += 1
        keys.append(try parseString())
        try charge(JSONParser.keyBytes)
        if keys.capacity != keysCharged { try chargeStacks() }
        skipWhitespace()
        guard i < count else { throw JSONError(.unexpectedEnd, at: i) }
        guard bytes[i] == UInt8(ascii: ":") else { throw JSONError(.unexpectedCharacter, at: i) }
        i += 1
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(JSONError) {
        let length = literal.utf8CodeUnitCount
        let start = literal.utf8Start
        for k in 0..<length {
            guard i + k < count else { throw JSONError(.unexpectedEnd, at: count) }
            guard bytes[i + k] == start[k] else { throw JSONError(.unexpectedCharacter, at: i + k) }
        }
        i += length
    }

    private mutating func parseNumber() throws(JSONError) -> JSONNumber {
        switch JSONNumber.grammarEnd(bytes, from: i) {
        case .success(let end):
            try chargeText(end - i)
            let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[i..<end]), as: UTF8.self)
            i = end
            return JSONNumber(validatedText: text)
        case .failure(let error):
            throw error
        }
    }

    /// Parses a string body; `i` is just past the opening quote and ends just past the closing one.
    private mutating func parseString() throws(JSONError) -> String {
        let start = i
        let (end, isASCII) = JSONScan.plainRun(bytes, from: i)
        i = end
        guard i < count else { throw JSONError(.unexpectedEnd, at: count) }
        let byte = bytes[i]
        if byte == UInt8(ascii: "\"") {
            // Fast path: no escapes, so the string is exactly these bytes once they prove to be UTF-8.
            // (The standard library's `String(validating:)` is unspecialised here and costs more than the
            // parse, so validation is ours and `String(decoding:)` only copies.)
            let raw = UnsafeRawBufferPointer(rebasing: bytes[start..<i])
            if !isASCII, let bad = UTF8Validation.firstInvalidOffset(raw) {
                throw JSONError(.invalidUTF8, at: start + bad)
            }
            i += 1
            try chargeText(raw.count)
            return String(decoding: raw.assumingMemoryBound(to: UInt8.self), as: UTF8.self)
        }
        if byte < 0x20 { throw JSONError(.controlCharacterInString, at: i) }
        return try parseEscapedString(from: start)
    }

    /// Slow path for strings with escapes; `i` is at the first backslash.
    private mutating func parseEscapedString(from start: Int) throws(JSONError) -> String {
        scratch.removeAll(keepingCapacity: true)
        var runStart = start
        while true {
            i = JSONScan.plainRun(bytes, from: i).end
            guard i < count else { throw JSONError(.unexpectedEnd, at: count) }
            let byte = bytes[i]
            if byte == UInt8(ascii: "\"") { break }
            if byte < 0x20 { throw JSONError(.controlCharacterInString, at: i) }
            // A backslash.
            scratch.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[runStart..<i]))
            let escapeStart = i
            i += 1
            guard i < count else { throw JSONError(.unexpectedEnd, at: count) }
            switch bytes[i] {
            case UInt8(ascii: "\""): scratch.append(0x22)
            case UInt8(ascii: "\\"): scratch.append(0x5C)
            case UInt8(ascii: "/"): scratch.append(0x2F)
            case UInt8(ascii: "b"): scratch.append(0x08)
            case UInt8(ascii: "f"): scratch.append(0x0C)
            case UInt8(ascii: "n"): scratch.append(0x0A)
            case UInt8(ascii: "r"): scratch.append(0x0D)
            case UInt8(ascii: "t"): scratch.append(0x09)
            case UInt8(ascii: "u"):
                let unit = try readHex4(at: i + 1, escapeStart: escapeStart)
                i += 4
                var scalar = unit
                if unit >= 0xDC00 && unit < 0xE000 { throw JSONError(.loneSurrogate, at: escapeStart) }
                if unit >= 0xD800 && unit < 0xDC00 {
                    // Needs `\uDC00`–`\uDFFF` right after.
                    let next = i + 1
                    guard next < count else { throw JSONError(.unexpectedEnd, at: count) }
                    guard bytes[next] == UInt8(ascii: "\\") else { throw JSONError(.loneSurrogate, at: escapeStart) }
                    guard next + 1 < count else { throw JSONError(.unexpectedEnd, at: count) }
                    guard bytes[next + 1] == UInt8(ascii: "u") else {
                        throw JSONError(.loneSurrogate, at: escapeStart)
                    }
                    let low = try readHex4(at: next + 2, escapeStart: next)
                    guard low >= 0xDC00 && low < 0xE000 else { throw JSONError(.loneSurrogate, at: escapeStart) }
                    scalar = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                    i = next + 5
                }
                appendUTF8(scalar)
            default:
                throw JSONError(.invalidEscape, at: escapeStart)
            }
            i += 1
            runStart = i
        }
        // `i` is at the closing quote.
        scratch.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[runStart..<i]))
        let isValid = scratch.withUnsafeBytes { UTF8Validation.isValid($0) }
        guard isValid else {
            // Escapes produce valid UTF-8, so the culprit is in the raw source bytes.
            let raw = UnsafeRawBufferPointer(rebasing: bytes[start..<i])
            throw JSONError(.invalidUTF8, at: start + (UTF8Validation.firstInvalidOffset(raw) ?? 0))
        }
        i += 1
        try chargeText(scratch.count)
        return String(decoding: scratch, as: UTF8.self)
    }

    /// The value of four hex digits at `offset`.
    private func readHex4(at offset: Int, escapeStart: Int) throws(JSONError) -> UInt32 {
        var value: UInt32 = 0
        for k in 0..<4 {
            guard offset + k < count else { throw JSONError(.unexpectedEnd, at: count) }
            let byte = bytes[offset + k]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw JSONError(.invalidEscape, at: escapeStart)
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    private mutating func appendUTF8(_ scalar: UInt32) {
        switch scalar {
        case ..<0x80:
            scratch.append(UInt8(scalar))
        case ..<0x800:
            scratch.append(UInt8(0xC0 | scalar >> 6))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        case ..<0x10000:
            scratch.append(UInt8(0xE0 | scalar >> 12))
            scratch.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        default:
            scratch.append(UInt8(0xF0 | scalar >> 18))
            scratch.append(UInt8(0x80 | scalar >> 12 & 0x3F))
            scratch.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        }
    }
}
