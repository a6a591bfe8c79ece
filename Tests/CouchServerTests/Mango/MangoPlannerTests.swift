import CouchWire
import Testing

@testable import CouchServer

private func options(_ text: String) throws -> FindOptions {
    guard case .object(let body) = try JSON.parse(text) else { throw CouchError.notAnObject }
    return try FindOptions(body)
}

private func index(_ design: String, _ name: String, _ fields: [String], partial: JSON? = nil) -> MangoIndex {
    MangoIndex(
        designID: "_design/" + design, name: name, type: "json", fields: fields.map { ($0, .asc) },
        partialFilter: partial, definition: .null)
}

private func mangoError(_ body: () throws -> Void) -> String? {
    do {
        try body()
        return nil
    } catch let error as CouchError {
        return error.error
    } catch {
        return "unexpected \(error)"
    }
}

/// Index choice (`mango_cursor_view:choose_best_index`), key ranges, index keys, and the request's options.
@Suite struct MangoPlannerTests {
    let indexes = [
        MangoIndex.allDocs, index("a", "type", ["type"]), index("b", "type-size", ["type", "size"]),
        index("c", "tcs", ["type", "camera", "size"]), index("d", "partial", ["type"], partial: ["x": ["$eq": 1]]),
    ]

    @Test func prefersTheLongestPrefixThenTheFewestColumnsThenTheName() throws {
        let bySize = try MangoPlanner.plan(
            options(#"{"selector":{"type":"photo","size":{"$gt":1}}}"#), indexes: indexes)
        #expect(bySize.index.name == "type-size")
        #expect(bySize.startKey == ["photo", 1])
        #expect(bySize.endKey == ["photo"])
        let byType = try MangoPlanner.plan(options(#"{"selector":{"type":"photo"}}"#), indexes: indexes)
        #expect(byType.index.name == "type")
        let twins = [MangoIndex.allDocs, index("z", "t", ["type"]), index("m", "t", ["type"])]
        #expect(
            try MangoPlanner.plan(options(#"{"selector":{"type":"photo"}}"#), indexes: twins).index.designID
                == "_design/m")
    }

    @Test func fallsBackToAllDocsWithCouchDBsWarning() throws {
        let plan = try MangoPlanner.plan(options(#"{"selector":{"camera":"X"}}"#), indexes: indexes)
        #expect(plan.index.isSpecial)
        #expect(plan.warnings == ["No matching index found, create an index to optimize query time."])
    }

    @Test func partialIndexesOnlyWhenNamed() throws {
        let unnamed = try MangoPlanner.plan(options(#"{"selector":{"type":"photo"}}"#), indexes: indexes)
        #expect(unnamed.index.name != "partial")
        let named = try MangoPlanner.plan(
            options(#"{"selector":{"type":"photo"},"use_index":["d","partial"]}"#), indexes: indexes)
        #expect(named.index.name == "partial")
    }

    @Test func sortNeedsAnIndexThatGivesItsOrder() throws {
        #expect(
            mangoError { _ = try MangoPlanner.plan(options(#"{"selector":{},"sort":["size"]}"#), indexes: indexes) }
                == "no_usable_index")
        // A constant leading column does not spoil the order of the next.
        let plan = try MangoPlanner.plan(
            options(#"{"selector":{"type":"photo","size":{"$gt":0}},"sort":["size"]}"#), indexes: indexes)
        #expect(plan.index.name == "type-size")
        let byID = try MangoPlanner.plan(
            options(#"{"selector":{"_id":{"$gt":null}},"sort":["_id"]}"#), indexes: indexes)
        #expect(byID.index.isSpecial)
    }

    @Test func contradictoryRangesSelectNothing() throws {
        let plan = try MangoPlanner.plan(options(#"{"selector":{"type":{"$gt":"b","$lt":"a"}}}"#), indexes: indexes)
        #expect(plan.ranges == nil)
        let equal = try MangoPlanner.plan(options(#"{"selector":{"type":{"$gte":"a","$lte":"a"}}}"#), indexes: indexes)
        #expect(equal.ranges == [.equal("a")])
        let noop = try MangoPlanner.plan(options(#"{"selector":{"$or":[]}}"#), indexes: indexes)
        #expect(noop.ranges == nil)
    }

    @Test func useIndexWithoutFallbackIsRefused() throws {
        #expect(
            mangoError {
                _ = try MangoPlanner.plan(
                    options(#"{"selector":{"camera":"X"},"use_index":"a","allow_fallback":false}"#), indexes: indexes)
            } == "invalid_index")
    }

    @Test func indexKeysAreTheFieldsValuesWhenAllExistAndTheFilterPasses() throws {
        let map = MangoViewEngine.IndexMap(
            #"{"fields":{"type":"asc","exif.iso":"asc"},"partial_filter_selector":{"type":{"$ne":"video"}}}"#)
        #expect(map.key(try JSON.parse(#"{"type":"photo","exif":{"iso":200}}"#)) == ["photo", 200])
        #expect(map.key(try JSON.parse(#"{"type":"photo"}"#)) == nil)
        #expect(map.key(try JSON.parse(#"{"type":"video","exif":{"iso":200}}"#)) == nil)
        #expect(map.key(try JSON.parse(#"{"type":null,"exif":{"iso":null}}"#)) == [.null, .null])
        let empty = MangoViewEngine.IndexMap(#"{"fields":{}}"#)
        #expect(empty.key(try JSON.parse("{}")) == [])
    }

    @Test func hugeLimitNegativeSkipAndMalformedBookmarks() throws {
        #expect(try options(#"{"selector":{},"limit":99999999999999999999999}"#).limit == Int.max)
        #expect(mangoError { _ = try options(#"{"selector":{},"skip":-1}"#) } == "invalid_non_neg_integer")
        #expect(mangoError { _ = try options(#"{"selector":{},"limit":1.5}"#) } == "invalid_non_neg_integer")
        for bad in ["xyz", "!!!!", "W10", "WyJhIl0", "WzEsMl0", String(repeating: "A", count: 70_000)] {
            #expect(mangoError { _ = try MangoBookmark(decoding: bad) } == "invalid_bookmark", "\(bad.prefix(10))")
        }
        let bookmark = MangoBookmark(key: ["2024", 1], docID: "p1")
        #expect(try MangoBookmark(decoding: bookmark.encoded) == bookmark)
    }

    @Test func findOverIndexEndToEnd() throws {
        let server = try ViewTestServer()
        #expect(try server.put("/db", "").status == 201)
        let docs = (0..<1_200).map { #"{"_id":"d\#($0)","n":\#($0),"even":\#($0 % 2 == 0)}"# }
        #expect(
            try server.request("POST", "/db/_bulk_docs", #"{"docs":["# + docs.joined(separator: ",") + "]}").status
                == 201)
        let created = try server.request("POST", "/db/_index", #"{"index":{"fields":["n"]},"ddoc":"i","name":"n"}"#)
        #expect(created.json["result"] == "created")
        let found = try server.request(
            "POST", "/db/_find",
            #"{"selector":{"n":{"$gte":600},"even":true},"sort":["n"],"limit":1000,"fields":["n"]}"#)
        let values = (found.json["docs"]?.arrayValue ?? []).compactMap { $0["n"]?.intValue }
        #expect(values == Array(stride(from: 600, to: 1_200, by: 2)))
        #expect(found.json["warning"] == nil)
    }
}
