import CouchWire
import Testing

@testable import CouchServer

/// `POST /db/_index` bodies: default names as CouchDB 3.4.3 generates them (constants from a real CouchDB), and the
/// options that change them or are refused.
@Suite struct IndexRequestTests {
    private func request(_ text: String) throws -> IndexRequest {
        guard case .object(let body) = try JSON.parse(Array(text.utf8)) else { throw CouchError.notAnObject }
        return try IndexRequest(body)
    }

    @Test(arguments: [
        (
            #"{"index":{"fields":["size"]}}"#, "6a4693997737e072a86f4c2e110887a1d45c2a1a",
            "6a4693997737e072a86f4c2e110887a1d45c2a1a"
        ),
        (#"{"index":{"fields":["size"]},"ddoc":"dd"}"#, "dd", "b55b676f6c9cc40140734ee3ed76d0931eab26df"),
        (#"{"index":{"fields":["size"]},"name":"nn"}"#, "c58c9867862c7b653f15c85a3fbe74257187a450", "nn"),
        (
            #"{"index":{"fields":["size","taken"]},"w":3,"partitioned":false}"#,
            "0b700f706689fee07b092aaf3ca663f6190618dc", "0b700f706689fee07b092aaf3ca663f6190618dc"
        ),
    ])
    func defaultNamesAreCouchDBs(body: String, design: String, name: String) throws {
        let parsed = try request(body)
        #expect(parsed.designID == "_design/" + design)
        #expect(parsed.name == name)
    }

    @Test func everyOptionChangesTheGeneratedName() throws {
        let base = try request(#"{"index":{"fields":["size"]}}"#).name
        for body in [
            #"{"index":{"fields":["size"]},"w":3}"#, #"{"index":{"fields":["size"]},"partitioned":true}"#,
            #"{"index":{"fields":["size"]},"ddoc":"x"}"#, #"{"index":{"fields":[{"size":"desc"}]}}"#,
        ] {
            #expect(try request(body).name != base, "\(body)")
        }
    }

    @Test(arguments: [
        #"{"index":{"fields":["a"]},"w":0}"#, #"{"index":{"fields":["a"]},"w":1.5}"#,
        #"{"index":{"fields":["a"]},"w":"2"}"#,
    ])
    func aWriteQuorumThatIsNoPositiveIntegerIsRefused(body: String) {
        #expect(throws: CouchError.self) { try request(body) }
    }

    @Test func aPartitionedOptionThatIsNoBooleanIsRefused() {
        #expect(throws: CouchError.self) { try request(#"{"index":{"fields":["a"]},"partitioned":"x"}"#) }
    }

    @Test func aHugeDefinitionStillGetsAName() throws {
        // Thousands of fields: the term is written in one pass, the name is still 40 hex digits.
        let fields = (0..<5_000).map { "\"f\($0)\"" }.joined(separator: ",")
        let parsed = try request(#"{"index":{"fields":["# + fields + "]}}")
        #expect(
            parsed.name.count == 40 && parsed.name.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
        )
    }
}
