import CouchQuery
import CouchWire

/// Target: Mango selector compilation and matching (`_changes?filter=_selector`).
///
/// Input: JSON, either a selector object or an array `[selector, doc, doc, …]`. Properties: compiling never
/// crashes and either compiles or throws a `SelectorError` with a reason; matching any document (the given ones,
/// the selector itself, and a few fixed shapes) terminates, and gives the same answer for the selector recompiled
/// from its own serialization and for `{"$and":[s]}` and `{"$or":[s]}`. (`$not` is not compared with negation:
/// Mango's missing-field rule makes them differ on purpose.)
func fuzzOne(_ bytes: [UInt8]) {
    guard let input = try? JSON.parse(bytes) else { return }
    let selectorJSON: JSON
    var docs: [JSON] = fixedDocs
    if case .array(let items) = input, let first = items.first {
        selectorJSON = first
        docs += items.dropFirst()
    } else {
        selectorJSON = input
    }
    docs.append(selectorJSON)
    let selector: Selector
    do {
        selector = try Selector(selectorJSON)
    } catch {
        require(!error.reason.isEmpty, "empty reason")
        return
    }
    guard case .object = selectorJSON else {
        require(false, "a non-object compiled")
        return
    }
    let reparsed = (try? JSON.parse(selectorJSON.serialized())).flatMap { try? Selector($0) }
    // `{}` matches everything, but inside `$and`/`$or` it is an equality with `{}` (CouchDB's norm_ops: so
    // `{"$and":[{}]}` matches nothing there too): the wrapped forms are compared for other selectors only.
    let isEmpty = selectorJSON.objectValue?.isEmpty == true
    let wrappedAnd = isEmpty ? nil : try? Selector(.object(JSONObject([("$and", .array([selectorJSON]))])))
    let wrappedOr = isEmpty ? nil : try? Selector(.object(JSONObject([("$or", .array([selectorJSON]))])))
    for doc in docs {
        let answer = selector.matches(doc)
        require(reparsed?.matches(doc) == answer, "recompiled selector disagrees")
        if let wrappedAnd { require(wrappedAnd.matches(doc) == answer, "$and of one disagrees") }
        if let wrappedOr { require(wrappedOr.matches(doc) == answer, "$or of one disagrees") }
    }
}

let fixedDocs: [JSON] = [
    #"{"_id":"p1","type":"photo","size":120,"ratio":1.5,"tags":["sea","sun"],"meta":{"iso":200},"owner":null}"#,
    #"{"_id":"n","a":{"b":[1,{"c":"d"}]},"x":-0.0,"y":1e400,"z":true}"#,
    "{}", "[]", "null", "\"text\"", "[1,[2,[3]]]",
].compactMap { try? JSON.parse($0) }
