import CMalloc
import CouchWire
import Testing

/// Heap bytes in use: glibc's allocated chunks in every arena plus mmapped blocks.
private func heapInUse() -> Int {
    let info = mallinfo2()
    return Int(info.uordblks) + Int(info.hblkhd)
}

/// Attack: a body made of many tiny containers must not parse into a value many times its size (an
/// anonymous 64 MiB `_bulk_docs` once took the server to 9 GB). Without a budget a flood of one-element
/// arrays holds 20–30× its size; with ``JSON/memoryBudget(forInput:)`` (what request bodies get) the parse
/// either holds at most that budget or refuses with `.tooLarge`, while ordinary JSON parses as before.
@Suite(.serialized) struct JSONMemoryTests {
    static let inputBytes = 2 * 1024 * 1024

    /// `[item,item,…]` of about `inputBytes`.
    static func array(of item: String, bytes inputBytes: Int = inputBytes) -> [UInt8] {
        let count = inputBytes / (item.utf8.count + 1)
        var bytes: [UInt8] = [UInt8(ascii: "[")]
        bytes.reserveCapacity(inputBytes + 2)
        for index in 0..<count {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes += item.utf8
        }
        bytes.append(UInt8(ascii: "]"))
        return bytes
    }

    /// Parses `input` with the request budget; returns the heap bytes the value holds, or nil if refused.
    static func heldUnderBudget(_ input: [UInt8]) throws -> Int? {
        let before = heapInUse()
        do {
            let value = try JSON.parse(input, memoryBudget: JSON.memoryBudget(forInput: input.count))
            let held = heapInUse() - before
            withExtendedLifetime(value) {}
            return held
        } catch let error where error.kind == .tooLarge {
            return nil
        }
    }

    /// The heap is shared with tests running in parallel, so one reading can be off by what they allocate
    /// or free meanwhile: a heap-measured expectation passes if any of a few readings satisfies it.
    static func anyReading(_ reading: () throws -> Int?, satisfies: (Int) -> Bool) rethrows -> (Bool, [Int]) {
        var seen: [Int] = []
        for _ in 0..<4 {
            guard let value = try reading() else { return (false, seen) }
            seen.append(value)
            if satisfies(value) { return (true, seen) }
        }
        return (false, seen)
    }

    @Test func floodOfOneElementArraysHoldsManyTimesItsSizeUnbounded() throws {
        let input = JSONMemoryTests.array(of: "[0]")
        let (ok, readings) = try JSONMemoryTests.anyReading({
            let before = heapInUse()
            let unbounded = try JSON.parse(input)
            let held = heapInUse() - before
            withExtendedLifetime(unbounded) {}
            return held
        }) { $0 > 16 * input.count }
        print("JSON [0] flood: \(input.count) bytes hold \(readings) bytes unbounded")
        #expect(ok, "readings \(readings)")
    }

    @Test(arguments: [
        "[0]", "[[[[[[[[0]]]]]]]]", "{\"a\":[{\"b\":[0]}]}", "[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]", "0", "{}", "[1.5,2.5]",
    ])
    func test_json_many_tiny_values_blowup(item: String) throws {
        // 16 MiB of containers and values that hold 8 or more bytes per byte of text.
        let input = JSONMemoryTests.array(of: item, bytes: 16 * 1024 * 1024)
        #expect(
            try JSONMemoryTests.heldUnderBudget(input) == nil, "a \(input.count)-byte \(item) flood was not refused")
    }

    /// What request bodies are made of: documents as PouchDB and the replicator send them (at 2 and 8 MiB: a
    /// document may be 8 MB), attachment data and revision lists (at 2 and 32 MiB).
    static let ordinaryItems = [
        "{\"_id\":\"3f2a9c1e7b\",\"_rev\":\"1-967a00dff5e02add41819138abb3284d\",\"n\":1}",
        "{\"_id\":\"photo-000123\",\"_rev\":\"2-4a1b2c3d4e5f60718293a4b5c6d7e8f9\",\"title\":\"Beach at dawn\","
            + "\"taken\":\"2026-07-14T05:12:00Z\",\"tags\":[\"beach\",\"sunrise\"],\"_revisions\":{\"start\":2,"
            + "\"ids\":[\"4a1b2c3d4e5f60718293a4b5c6d7e8f9\",\"967a00dff5e02add41819138abb3284d\"]}}",
        "\"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==\"",
        "\"1-967a00dff5e02add41819138abb3284d\"",
    ]

    @Test(arguments: ordinaryItems)
    func ordinaryJSONParsesWithinItsBudget(item: String) throws {
        for size in [JSONMemoryTests.inputBytes, (item.hasPrefix("{") ? 8 : 32) * 1024 * 1024] {
            let input = JSONMemoryTests.array(of: item, bytes: size)
            #expect(try JSONMemoryTests.heldUnderBudget(input) != nil, "\(item) was refused at \(size) bytes")
            let budget = JSON.memoryBudget(forInput: input.count)
            let (ok, readings) = try JSONMemoryTests.anyReading({ try JSONMemoryTests.heldUnderBudget(input) }) {
                $0 <= budget
            }
            print("JSON \(item): \(input.count) bytes hold \(readings) bytes")
            #expect(ok, "readings \(readings) over the budget \(budget)")
        }
    }

    /// A small document may still be made of tiny containers: the budget's fixed part covers it.
    @Test(arguments: ["[0]", "{\"a\":0}", "[1.5,2.5]", "true", "[[[[[[[[0]]]]]]]]"])
    func smallBodiesOfTinyValuesStillParse(item: String) throws {
        let input = JSONMemoryTests.array(of: item, bytes: 4 * 1024)
        #expect(throws: Never.self) { try JSON.parse(input, memoryBudget: .requestBody) }
    }

    // MARK: - Attacks on the parser's limits (issue 29, item 4)

    /// `[0,0,0,…` of `count` bytes, left open or closed.
    static func zeros(bytes: Int, closed: Bool) -> [UInt8] {
        var input: [UInt8] = [UInt8(ascii: "[")]
        input.reserveCapacity(bytes + 1)
        while input.count < bytes - 1 { input += [UInt8(ascii: "0"), UInt8(ascii: ",")] }
        input.append(UInt8(ascii: "0"))
        if closed { input.append(UInt8(ascii: "]")) }
        return input
    }

    /// Attack: a 16 MiB array of millions of zeros (each 2 bytes of text, 24 or more of memory) was charged only
    /// when it closed, after its elements had filled the parser's stack: it must stop once it holds its budget.
    @Test func attack_huge_item_count_stops_while_parsing_not_at_the_close() throws {
        let input = JSONMemoryTests.zeros(bytes: 16 * 1024 * 1024, closed: true)
        let budget = 4 * 1024 * 1024
        let error = try #require(throws: JSONError.self) { try JSON.parse(input, memoryBudget: budget) }
        #expect(error.kind == .tooLarge)
        // About budget / 48 elements of 2 bytes each: a small part of the input.
        #expect(error.offset < budget / 8, "stopped at \(error.offset) of \(input.count)")
    }

    /// Attack: the same array never closed: before, the whole body went onto the parser's stack and only then
    /// failed as truncated.
    @Test func attack_unclosed_array_of_many_tiny_values_stops_at_the_budget() throws {
        let input = JSONMemoryTests.zeros(bytes: 16 * 1024 * 1024, closed: false)
        let error = try #require(throws: JSONError.self) { try JSON.parse(input, memoryBudget: 4 * 1024 * 1024) }
        #expect(error.kind == .tooLarge && error.offset < input.count / 8, "\(error)")
    }

    /// Attack: a flood of tiny values in a request body stops within the first megabyte, whatever the body's size:
    /// the request budget grows with the bytes parsed, not with the declared length.
    @Test(arguments: ["0", "{}", "[]", "\"1-a\"", "[0]", "{\"a\":0}"])
    func attack_many_tiny_values_stop_within_the_first_megabytes(item: String) throws {
        let input = JSONMemoryTests.array(of: item, bytes: 64 * 1024 * 1024)
        let error = try #require(throws: JSONError.self) { try JSON.parse(input, memoryBudget: .requestBody) }
        #expect(error.kind == .tooLarge && error.offset < 8 * 1024 * 1024, "\(item): \(error)")
    }

    /// Attack: 64 MiB of `[` nest past the depth limit at once, before any memory grows.
    @Test func attack_deep_nesting_stops_at_the_depth_limit() throws {
        let input = [UInt8](repeating: UInt8(ascii: "["), count: 64 * 1024 * 1024)
        let error = try #require(throws: JSONError.self) { try JSON.parse(input, memoryBudget: .requestBody) }
        #expect(error == JSONError(.tooDeep, at: JSON.defaultMaxDepth))
    }

    /// A value at the request budget's density holds at most the budget: a big body and its value hold at most
    /// 4 times its size (plus the budget's fixed 256 KiB).
    @Test func bodyAndValueHoldAtMostFourTimesTheBodyWhenBig() {
        let size = 64 * 1024 * 1024
        #expect(size + JSON.memoryBudget(forInput: size) <= 4 * size + 256 * 1024)
        #expect(JSON.memoryBudget(forInput: 512 * 1024 * 1024) < 3 * 512 * 1024 * 1024)
    }
}
