import CouchWire
import Foundation
import Testing

@testable import CouchQuery

private func matches(_ selector: String, _ doc: String) throws -> Bool {
    try Selector(JSON.parse(selector)).matches(JSON.parse(doc))
}

private func refusal(_ selector: String) -> SelectorError? {
    do {
        _ = try Selector(JSON.parse(selector, maxDepth: 10_000))
        return nil
    } catch let error as SelectorError {
        return error
    } catch {
        return SelectorError(reason: "unexpected \(error)")
    }
}

/// The operators `_find` added to the matcher, CouchDB's normalization, and hostile selectors.
@Suite struct MangoSelectorTests {
    let doc = #"{"_id":"p1","tags":["sea","sun"],"n":12,"f":2.5,"s":"Xylophone","o":{"k1":1,"k2":{"z":true}},"e":[]}"#

    @Test(arguments: [
        (#"{"n":{"$type":"number"}}"#, true), (#"{"s":{"$type":"string"}}"#, true),
        (#"{"o":{"$type":"object"}}"#, true), (#"{"tags":{"$type":"array"}}"#, true),
        (#"{"n":{"$type":"string"}}"#, false),
        (#"{"n":{"$mod":[5,2]}}"#, true), (#"{"n":{"$mod":[5,1]}}"#, false), (#"{"f":{"$mod":[2,0]}}"#, false),
        (#"{"n":{"$mod":[0,0]}}"#, false),
        (#"{"s":{"$regex":"^Xy"}}"#, true), (#"{"s":{"$regex":"phone$"}}"#, true), (#"{"n":{"$regex":"1"}}"#, false),
        (#"{"s":{"$beginsWith":"Xy"}}"#, true), (#"{"s":{"$beginsWith":"xy"}}"#, false),
        (#"{"tags":{"$size":2}}"#, true), (#"{"e":{"$size":0}}"#, true), (#"{"s":{"$size":9}}"#, false),
        (#"{"tags":{"$all":["sun","sea"]}}"#, true), (#"{"tags":{"$all":["sun","moon"]}}"#, false),
        (#"{"tags":{"$all":[]}}"#, false),
        (#"{"tags":{"$elemMatch":{"$eq":"sun"}}}"#, true), (#"{"e":{"$elemMatch":{"$eq":"sun"}}}"#, false),
        (#"{"tags":{"$allMatch":{"$regex":"^s"}}}"#, true), (#"{"e":{"$allMatch":{"$eq":1}}}"#, false),
        (#"{"o":{"$keyMapMatch":{"$eq":"k2"}}}"#, true), (#"{"o":{"$keyMapMatch":{"$eq":"k3"}}}"#, false),
        (#"{"o.k2.z":true}"#, true), (#"{"o":{"k2":{"z":{"$exists":true}}}}"#, true),
        (#"{"s":{"$not":{"$regex":"^Q"}}}"#, true), (#"{"missing":{"$not":{"$regex":"^Q"}}}"#, false),
        (#"{"$or":[]}"#, true), (#"{"tags":{"$in":["moon","sun"]}}"#, true), (#"{"tags":{"$nin":["sun"]}}"#, false),
        (#"{"_id":{"$gt":"P"}}"#, true),
    ])
    func operators(selector: String, expected: Bool) throws {
        #expect(try matches(selector, doc) == expected, "\(selector)")
    }

    @Test func typeOrderingFollowsCouchDB() throws {
        // null < false < true < numbers < strings < arrays < objects
        let ordered = ["null", "false", "true", "-1", "2.5", "\"a\"", "\"B\"", "[]", "[1]", "{}", #"{"a":1}"#]
        for (position, value) in ordered.enumerated() {
            for (other, bigger) in ordered.enumerated() where other > position {
                #expect(try matches(#"{"v":{"$lt":"# + bigger + "}}", #"{"v":"# + value + "}"), "\(value) < \(bigger)")
            }
        }
        // Strings other than _id are in ICU order (lowercase first); _id compares raw bytes.
        #expect(try matches(#"{"v":{"$lt":"B"}}"#, #"{"v":"a"}"#))
        #expect(!(try matches(#"{"_id":{"$lt":"B"}}"#, #"{"_id":"a"}"#)))
    }

    @Test func normalizedFormIsCouchDBs() throws {
        func normalized(_ text: String) throws -> String { try Selector(JSON.parse(text)).normalized.serializedString }
        #expect(try normalized(#"{"a":1,"b":{"$gt":2}}"#) == #"{"$and":[{"a":{"$eq":1}},{"b":{"$gt":2}}]}"#)
        #expect(try normalized(#"{"a":{"b":{"$not":{"$in":[1]}}}}"#) == #"{"a.b":{"$nin":[1]}}"#)
        #expect(try normalized(#"{"$nor":[{"t":"x"}]}"#) == #"{"$and":[{"t":{"$ne":"x"}}]}"#)
        #expect(
            try normalized(#"{"$not":{"$and":[{"a":1},{"b":2}]}}"#) == #"{"$or":[{"a":{"$ne":1}},{"b":{"$ne":2}}]}"#)
        #expect(try normalized(#"{"a":{"$not":{"$size":1}}}"#) == #"{"a":{"$not":{"$size":1}}}"#)
        #expect(try normalized("{}") == "{}")
    }

    @Test func escapedDotsAndArrayIndexes() throws {
        #expect(try matches(#"{"a\\.b":1}"#, #"{"a.b":1}"#))
        #expect(!(try matches(#"{"a.b":1}"#, #"{"a.b":1}"#)))
        #expect(try matches(#"{"l.1":"y"}"#, #"{"l":["x","y"]}"#))
        #expect(!(try matches(#"{"l.x":"y"}"#, #"{"l":["x","y"]}"#)))
    }

    @Test func selectorNestedAThousandDeepIsRefusedBeforeRecursing() {
        let deep = String(repeating: #"{"$and":["#, count: 1000) + #"{"a":1}"# + String(repeating: "]}", count: 1000)
        #expect(refusal(deep)?.reason == "Selector is nested too deeply")
        let deepNot = String(repeating: #"{"$not":"#, count: 1000) + #"{"a":1}"# + String(repeating: "}", count: 1000)
        #expect(refusal(deepNot)?.reason == "Selector is nested too deeply")
    }

    @Test func hundredThousandElementInIsFast() throws {
        let values = (0..<100_000).map { JSON.int($0) }
        let selector = try Selector(.object(JSONObject([("v", .object(JSONObject([("$in", .array(values))])))])))
        #expect(selector.matches(try JSON.parse(#"{"v":99999}"#)))
        #expect(!selector.matches(try JSON.parse(#"{"v":100000}"#)))
        #expect(selector.matches(try JSON.parse(#"{"v":[-1, 5]}"#)))
    }

    @Test func catastrophicBacktrackingRegexIsANonMatchNotAHang() throws {
        let selector = try Selector(JSON.parse(#"{"s":{"$regex":"^(a+)+$"}}"#))
        let subject = JSON.object(JSONObject([("s", .string(String(repeating: "a", count: 64) + "!"))]))
        let start = Date()
        #expect(!selector.matches(subject))
        #expect(Date().timeIntervalSince(start) < 30)  // bounded by the match limit, not 2^64 steps
        #expect(MangoRegex("^(a+)+$")?.matches("aaaa") == true)
    }

    @Test func hostileRegexPatternsAreRefusedAsBadArguments() {
        #expect(refusal(#"{"s":{"$regex":"(("}}"#)?.error == "bad_arg")
        let long = String(repeating: "a", count: MangoRegex.maxPatternBytes + 1)
        #expect(refusal(#"{"s":{"$regex":""# + long + #""}}"#)?.error == "bad_arg")
        let nested = String(repeating: "(", count: 300) + String(repeating: ")", count: 300)
        #expect(refusal(#"{"s":{"$regex":""# + nested + #""}}"#)?.error == "bad_arg")
    }

    @Test func errorNamesAreCouchDBs() {
        #expect(refusal(#"{"a":{"$foo":1}}"#)?.error == "invalid_operator")
        #expect(refusal(#"{"a":{"$size":1.5}}"#)?.error == "bad_arg")
        #expect(refusal(#"{"$eq":1}"#)?.error == "invalid_selector")
        #expect(refusal(#"{"$near":1}"#)?.error == "not_supported")
        #expect(refusal(#"{"a":{"$keyMapMatch":[]}}"#)?.reason == "Bad argument for operator $keyMapMatch: []")
    }

    @Test func erlangTermsQuoteArgumentsAsCouchDBDoes() {
        #expect(ErlangText.format(.string("ab")) == "<<97,98>>")
        #expect(ErlangText.format(.string("ab"), pretty: true) == #"<<"ab">>"#)
        #expect(
            ErlangText.format((try? JSON.parse(#"{"a":[1,2.5,null,true]}"#)) ?? .null)
                == "{[{<<97>>,[1,2.5,null,true]}]}")
        #expect(ErlangText.format(.double(-0.5)) == "-0.5")
    }
}

/// `_id` compares in Erlang's term order (`mango_json:cmp_raw/2`), the order `_all_docs` keeps, not in view
/// collation: numbers < false < null < true < objects < arrays < strings.
@Suite struct RawIdOrderTests {
    @Test func everyStringIdIsAboveObjectsArraysAtomsAndNumbers() throws {
        for below in ["{}", #"{"z":1}"#, "[]", "[1]", "null", "true", "false", "0", "1e300"] {
            #expect(try matches(#"{"_id":{"$gt":\#(below)}}"#, #"{"_id":"a"}"#), "\(below)")
            #expect(!(try matches(#"{"_id":{"$lt":\#(below)}}"#, #"{"_id":"a"}"#)), "\(below)")
            #expect(!(try matches(#"{"_id":{"$lte":\#(below)}}"#, #"{"_id":"a"}"#)), "\(below)")
        }
    }

    @Test func theTypesFollowErlangsTermOrder() throws {
        let ascending = [
            "-1", "2.5", "false", "null", "true", "{}", #"{"a":1}"#, #"{"a":1,"b":1}"#, #"{"a":2}"#,
            #"{"b":0}"#, "[]", "[0]", "[0,0]", #"[{}]"#, #"["a"]"#, #""""#, #""B""#, #""a""#, #""ab""#,
        ]
        // Members compare pair by pair before length: `{"a":1,"b":1}` is below `{"a":2}`.
        let values = ascending.compactMap { try? JSON.parse($0) }
        #expect(values.count == ascending.count)
        for (i, lower) in values.enumerated() {
            for (j, upper) in values.enumerated() {
                let expected = i < j ? -1 : i > j ? 1 : 0
                #expect(RawCollation.compare(lower, upper) == expected, "\(ascending[i]) vs \(ascending[j])")
            }
        }
        #expect(RawCollation.compare(try JSON.parse("1"), try JSON.parse("1.0")) == 0)
    }

    @Test func otherFieldsKeepViewCollation() throws {
        #expect(!(try matches(#"{"s":{"$gt":{}}}"#, #"{"s":"a"}"#)))  // objects sort last in view collation
        #expect(try matches(#"{"s":{"$lt":{}}}"#, #"{"s":"a"}"#))
        #expect(!(try matches(#"{"a._id":{"$gt":{}}}"#, #"{"a":{"_id":"x"}}"#)))  // only the top-level _id
    }

    @Test func anEscapedDollarNamesAField() throws {
        #expect(try matches(#"{"\\$foobar":"a"}"#, #"{"$foobar":"a"}"#))
        #expect(!(try matches(#"{"\\$foobar":"a"}"#, #"{"foobar":"a"}"#)))
    }
}
