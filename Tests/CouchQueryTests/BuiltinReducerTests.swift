import CouchWire
import Testing

@testable import CouchQuery

private func reduce(_ reducer: BuiltinReducer, _ values: [String], keys: [String]? = nil) throws -> String {
    var accumulator = reducer.accumulator()
    for (i, value) in values.enumerated() {
        try accumulator.add(key: try JSON.parse(keys?[i] ?? "null"), value: try JSON.parse(value))
    }
    return accumulator.result.serializedString
}

@Suite struct BuiltinReducerTests {
    @Test func namesMatchByPrefixAsCouchDB() {
        #expect(BuiltinReducer(source: "_sum") == .sum)
        #expect(BuiltinReducer(source: "_sum\n") == .sum)
        #expect(BuiltinReducer(source: "  _count") == .count)
        #expect(BuiltinReducer(source: "_stats") == .stats)
        #expect(BuiltinReducer(source: "_approx_count_distinct") == .approxCountDistinct)
        #expect(BuiltinReducer(source: "_nope") == nil)
        #expect(BuiltinReducer(source: "function(k,v){return sum(v)}") == nil)
    }

    @Test func countAndEmpty() throws {
        #expect(try reduce(.count, ["1", "\"x\"", "null"]) == "3")
        #expect(try reduce(.count, []) == "0")
        #expect(try reduce(.sum, []) == "0")
        #expect(try reduce(.stats, []) == #"{"sum":0,"count":0,"min":0,"max":0,"sumsqr":0}"#)
        #expect(try reduce(.approxCountDistinct, []) == "0")
    }

    @Test func sumOfNumbersKeepsIntegersExact() throws {
        #expect(try reduce(.sum, ["1", "2", "3"]) == "6")
        #expect(try reduce(.sum, ["1", "2.5"]) == "3.5")
        #expect(try reduce(.sum, ["9007199254740993", "1"]) == "9007199254740994")
        // Past 64 bits the sum goes on as a double (Erlang would keep a bignum).
        #expect(try reduce(.sum, ["9223372036854775807", "1"]) == "9.223372036854776e+18")
        #expect(try reduce(.sum, ["-5", "5"]) == "0")
    }

    @Test func sumOfArraysPadsTheShorter() throws {
        #expect(try reduce(.sum, ["[1,2,3]", "[10,20]"]) == "[11,22,3]")
        #expect(try reduce(.sum, ["1", "[1,4,6]"]) == "[2,4,6]")  // couch_query_servers' sum_values_test
        #expect(try reduce(.sum, ["[3,2,4]", "[0,3,3]"]) == "[3,5,7]")
        #expect(try reduce(.sum, ["[]", "[]"]) == "[0]")  // sum_arrays([0], []): the initial 0 stays
    }

    @Test func sumOfObjectsIsMemberwiseAndRecursive() throws {
        #expect(
            try reduce(.sum, [#"{"a":1,"b":[1,2]}"#, #"{"b":[1],"c":{"d":2}}"#, #"{"c":{"d":3}}"#])
                == #"{"a":1,"b":[2,2],"c":{"d":5}}"#)
        // Members come out in key order, as Erlang's `lists:sort` leaves them.
        #expect(try reduce(.sum, [#"{"z":1,"a":2}"#]) == #"{"a":2,"z":1}"#)
    }

    @Test func sumErrorsAreValuesNotFailures() throws {
        let error = try JSON.parse(try reduce(.sum, ["1", #""x""#, "2"]))
        #expect(error["error"] == "builtin_reduce_error")
        #expect(error["caused_by"] == "x")
        #expect(error["reason"]?.stringValue?.hasPrefix("The _sum function requires") == true)
        // Mixing an object with a number, or an array holding a string, fails the same way.
        #expect(try JSON.parse(try reduce(.sum, ["1", #"{"a":1}"#]))["error"] == "builtin_reduce_error")
        #expect(try JSON.parse(try reduce(.sum, [#"{"a":1}"#, "1"]))["error"] == "builtin_reduce_error")
        #expect(try JSON.parse(try reduce(.sum, [#"[1,"a"]"#]))["error"] == "builtin_reduce_error")
        #expect(try JSON.parse(try reduce(.sum, ["null"]))["caused_by"] == .null)
        #expect(try JSON.parse(try reduce(.sum, ["true"]))["error"] == "builtin_reduce_error")
        // An error object emitted as a value is the result as it is.
        #expect(
            try reduce(.sum, [#"{"error":"builtin_reduce_error","reason":"r"}"#, "1"])
                == #"{"error":"builtin_reduce_error","reason":"r"}"#)
    }

    @Test func statsOfNumbersArraysAndPreaggregates() throws {
        #expect(try reduce(.stats, ["2"]) == #"{"sum":2,"count":1,"min":2,"max":2,"sumsqr":4}"#)
        #expect(try reduce(.stats, ["1", "-3", "2.5"]) == #"{"sum":0.5,"count":3,"min":-3,"max":2.5,"sumsqr":16.25}"#)
        #expect(
            try reduce(.stats, ["[1,2]", "[3,4]"])
                == #"[{"sum":4,"count":2,"min":1,"max":3,"sumsqr":10},{"sum":6,"count":2,"min":2,"max":4,"sumsqr":20}]"#
        )
        #expect(
            try reduce(.stats, [#"{"sum":10,"count":4,"min":1,"max":5,"sumsqr":40}"#, "2"])
                == #"{"sum":12,"count":5,"min":1,"max":5,"sumsqr":44}"#)
    }

    @Test func statsRefusesWhatIsNotANumber() {
        #expect(throws: ReduceError.self) { try reduce(.stats, [#""x""#]) }
        #expect(throws: ReduceError.self) { try reduce(.stats, ["1", "null"]) }
        #expect(throws: ReduceError.self) { try reduce(.stats, [#"{"sum":1}"#]) }
        #expect(throws: ReduceError.self) { try reduce(.stats, [#"{"sum":"1","count":1,"min":1,"max":1,"sumsqr":1}"#]) }
    }

    @Test func approxCountDistinctCountsKeys() throws {
        let keys = (0..<300).map { #"["k",\#($0 % 100)]"# }
        let hundred = Int(try reduce(.approxCountDistinct, Array(repeating: "null", count: 300), keys: keys)) ?? 0
        #expect(abs(hundred - 100) <= 2)  // linear counting: register collisions are corrected for, on average
        let few = (0..<5).map { "\($0)" }
        #expect(try reduce(.approxCountDistinct, few + few, keys: few + few) == "5")
        var big = BuiltinReducer.approxCountDistinct.accumulator()
        for i in 0..<100_000 { try big.add(key: .int(i), value: .null) }
        let estimate = big.result.intValue ?? 0
        #expect(abs(estimate - 100_000) < 5_000)  // HyperLogLog at 2^11 registers: about 2.3% standard error
    }

    @Test func mergeIsRereduce() throws {
        for reducer in BuiltinReducer.allCases {
            var whole = reducer.accumulator()
            var left = reducer.accumulator()
            var right = reducer.accumulator()
            for i in 0..<50 {
                try whole.add(key: .int(i), value: .int(i))
                if i < 20 {
                    try left.add(key: .int(i), value: .int(i))
                } else {
                    try right.add(key: .int(i), value: .int(i))
                }
            }
            try left.merge(right)
            #expect(left.result == whole.result, "\(reducer)")
        }
    }
}
