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

    @Test(arguments: ["[0]", "[[[[[[[[0]]]]]]]]", "{\"a\":[{\"b\":[0]}]}", "[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]"])
    func test_json_many_tiny_values_blowup(item: String) throws {
        // 16 MiB: past the 8 MiB where the budget allows small-container documents their 30×.
        let input = JSONMemoryTests.array(of: item, bytes: 16 * 1024 * 1024)
        #expect(
            try JSONMemoryTests.heldUnderBudget(input) == nil, "a \(input.count)-byte \(item) flood was not refused")
    }

    @Test(arguments: [
        "0", "{\"a\":0}", "{}", "[]", "\"\"", "true", "1.5e300", "[1.5,2.5]", "[0,1]",
        "{\"_id\":\"3f2a9c1e7b\",\"_rev\":\"1-967a00dff5e02add41819138abb3284d\",\"n\":1}",
        "\"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==\"",
    ])
    func ordinaryJSONParsesWithinItsBudget(item: String) throws {
        let input = JSONMemoryTests.array(of: item)
        #expect(try JSONMemoryTests.heldUnderBudget(input) != nil, "\(item) was refused")
        let budget = JSON.memoryBudget(forInput: input.count)
        let (ok, readings) = try JSONMemoryTests.anyReading({ try JSONMemoryTests.heldUnderBudget(input) }) {
            $0 <= budget
        }
        print("JSON \(item): \(input.count) bytes hold \(readings) bytes")
        #expect(ok, "readings \(readings) over the budget \(budget)")
    }
}
