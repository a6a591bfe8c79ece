import CouchWire

/// Target: the strict JSON parser and the serializer.
///
/// Properties: a failed parse reports an offset inside the input; a parsed value `x` satisfies
/// `parse(serialize(x)) == x` and serializing is then a fixed point. The input is also read as a small program that
/// builds an arbitrary value (any strings, including control characters and non-ASCII, any valid numbers, deep
/// nesting, repeated keys), for which `parse(serialize(x)) == x` must hold too. Under a request body's memory budget
/// (or a tiny total one) a parse gives the same value or error, or stops with `.tooLarge` inside the input.
func fuzzOne(_ bytes: [UInt8]) {
    let unbounded: Result<JSON, JSONError>
    do {
        let value = try JSON.parse(bytes)
        roundTrip(value)
        unbounded = .success(value)
    } catch {
        require(error.offset >= 0 && error.offset <= bytes.count, "offset \(error.offset) of \(bytes.count)")
        unbounded = .failure(error)
    }
    for budget in [JSONMemoryBudget.requestBody, .total(Int(bytes.first ?? 0) * 16)] {
        let budgeted = Result { () throws(JSONError) -> JSON in try JSON.parse(bytes, memoryBudget: budget) }
        switch (budgeted, unbounded) {
        case (.failure(let error), _) where error.kind == .tooLarge:
            require(error.offset >= 0 && error.offset <= bytes.count, "tooLarge offset \(error.offset)")
        case (.success(let value), .success(let expected)):
            require(value == expected, "a budgeted parse gave another value")
        case (.failure(let error), .failure(let expected)):
            require(error == expected, "a budgeted parse failed otherwise: \(error), not \(expected)")
        default:
            require(false, "a budgeted parse disagrees with the unbounded one")
        }
    }
    var builder = ValueBuilder(bytes: bytes)
    roundTrip(builder.value(depth: 0))
}

func roundTrip(_ value: JSON) {
    let text = value.serialized()
    do {
        let again = try JSON.parse(text)
        require(again == value, "parse(serialize(x)) != x for \(value.serializedString)")
        require(again.serialized() == text, "serialization is not a fixed point: \(value.serializedString)")
    } catch {
        require(false, "serialize(x) does not parse (\(error)): \(String(decoding: text, as: UTF8.self))")
    }
}

/// Reads the fuzz input as instructions for building a value.
struct ValueBuilder {
    let bytes: [UInt8]
    var index = 0

    mutating func next() -> UInt8? {
        guard index < bytes.count else { return nil }
        defer { index += 1 }
        return bytes[index]
    }

    mutating func value(depth: Int) -> JSON {
        guard let op = next() else { return .null }
        switch op % 8 {
        case 0: return .null
        case 1: return .bool(op & 8 != 0)
        case 2: return .int(Int(truncatingIfNeeded: UInt64(next() ?? 0) << 56 | UInt64(next() ?? 0) << 3) &- 7)
        case 3:
            let raw = UInt64(next() ?? 0) << 40 | UInt64(next() ?? 0) << 20 | UInt64(next() ?? 0)
            return .double(Double(bitPattern: raw &* 0x9E37_79B9_7F4A_7C15))
        case 4: return .number(number())
        case 5: return .string(string())
        case 6:
            guard depth < 40 else { return .null }
            var elements: [JSON] = []
            for _ in 0..<Int(next() ?? 0) % 6 { elements.append(value(depth: depth + 1)) }
            return .array(elements)
        default:
            guard depth < 40 else { return .string("") }
            var pairs: [(String, JSON)] = []
            for _ in 0..<Int(next() ?? 0) % 6 { pairs.append((string(), value(depth: depth + 1))) }
            return .object(JSONObject(pairs))
        }
    }

    /// A number text from the grammar (`-? int frac? exp?`), built digit by digit.
    mutating func number() -> JSONNumber {
        let shape = next() ?? 0
        var text = shape & 1 != 0 ? "-" : ""
        let digits = { (count: Int, builder: inout ValueBuilder) -> String in
            var out = ""
            for _ in 0..<max(1, count) { out += String((builder.next() ?? 0) % 10) }
            return out
        }
        if shape & 2 != 0 {
            text += "0"
        } else {
            text += String(1 + (next() ?? 0) % 9) + (shape & 4 != 0 ? digits(Int(shape >> 5), &self) : "")
        }
        if shape & 8 != 0 { text += "." + digits(1 + Int(shape >> 6), &self) }
        if shape & 16 != 0 { text += ["e", "E", "e+", "E-"][Int(next() ?? 0) % 4] + digits(1, &self) }
        guard let number = JSONNumber(text) else {
            require(false, "built number \(text) refused")
            return JSONNumber(0)
        }
        return number
    }

    /// A string of up to 8 scalars drawn from ASCII, controls, quote and backslash, and multi-byte ranges.
    mutating func string() -> String {
        var scalars = String.UnicodeScalarView()
        for _ in 0..<Int(next() ?? 0) % 9 {
            let a = UInt32(next() ?? 0)
            let b = UInt32(next() ?? 0)
            let code: UInt32 =
                switch a % 5 {
                case 0: b % 0x80
                case 1: [0x22, 0x5C, 0x2F, 0x00, 0x1F, 0x7F, 0x2028, 0x2029][Int(b % 8)]
                case 2: 0x80 + (a << 8 | b) % 0x780
                case 3: 0xE000 + (a << 8 | b) % 0x2000
                default: 0x10000 + (a << 12 | b << 4) % 0x100000
                }
            if let scalar = Unicode.Scalar(code) { scalars.append(scalar) }
        }
        return String(scalars)
    }
}
