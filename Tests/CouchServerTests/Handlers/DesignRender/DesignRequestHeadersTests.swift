import CouchWire
import Testing

@testable import CouchServer

/// `req.headers` as CouchDB builds it from what Erlang's HTTP parser and mochiweb make of the request's headers.
@Suite struct DesignRequestHeadersTests {
    private func names(_ object: JSONObject) -> [String] { object.map(\.0) }

    @Test func namesTakeErlangsCanonicalCase() {
        let cases = [
            ("x-a", "X-A"), ("content-md5", "Content-Md5"), ("X-UPPER", "X-Upper"), ("x--b", "X--b"),
            ("x-a-", "X-A-"), ("x-2a", "X-2a"), ("1x-y", "1x-Y"), ("x.y.z", "X.y.z"),
            ("x-my_header-abC", "X-My_header-Abc"),
            ("", ""), ("-", "-"), ("--", "--"), ("é-é", "é-é"),
        ]
        for (sent, canonical) in cases { #expect(DesignRequestHeaders.canonicalName(sent) == canonical, "\(sent)") }
    }

    @Test func namesPastFiftyBytesStayAsSent() {
        let fifty = "x" + String(repeating: "X", count: 49)
        #expect(DesignRequestHeaders.canonicalName(fifty) == "X" + String(repeating: "x", count: 49))
        let fiftyOne = fifty + "X"
        #expect(DesignRequestHeaders.canonicalName(fiftyOne) == fiftyOne)
        let huge = String(repeating: "a-", count: 100_000)
        #expect(DesignRequestHeaders.canonicalName(huge) == huge)
    }

    @Test func repeatedHeadersMergeInOrderUnderTheFirstSpelling() {
        let headers = HTTPHeaders([("x-a", "1"), ("Host", "h"), ("X-A", "2"), ("x-A", "3")])
        let object = DesignRequestHeaders.json(headers, excluding: [])
        #expect(names(object) == ["Host", "X-A"])
        #expect(object["X-A"] == "1, 2, 3")
    }

    @Test func namesAreSortedByTheirLowerCaseBytes() {
        let headers = HTTPHeaders([("x-b", "1"), ("User-Agent", "u"), ("accept", "a"), ("X-a", "2"), ("Host", "h")])
        #expect(
            names(DesignRequestHeaders.json(headers, excluding: [])) == ["Accept", "Host", "User-Agent", "X-A", "X-B"])
    }

    @Test func credentialsAreLeftOutWhateverTheirCase() {
        let headers = HTTPHeaders([("AUTHORIZATION", "Basic x"), ("cookie", "AuthSession=s"), ("X-Ok", "1")])
        let object = DesignRequestHeaders.json(headers, excluding: DesignRequestObject.credentialHeaders)
        #expect(names(object) == ["X-Ok"])
    }

    @Test func noHeadersIsAnEmptyObject() {
        #expect(DesignRequestHeaders.json(HTTPHeaders(), excluding: []).isEmpty)
    }
}

/// `If-None-Match` as `chttpd:etag_match` reads it.
@Suite struct IfNoneMatchTests {
    @Test func tagsAreSplitAtCommasAndSpacesWithWeakPrefixesDropped() {
        #expect(Request.etags(in: #""a", "b",W/"c"  "d""#) == [#""a""#, #""b""#, #""c""#, #""d""#])
    }

    @Test func emptyAndDegenerateHeadersNameNothingUsable() {
        #expect(Request.etags(in: "").isEmpty)
        #expect(Request.etags(in: " , ,, ").isEmpty)
        #expect(Request.etags(in: "W/") == [""])
        #expect(Request.etags(in: "*") == ["*"])
    }

    @Test func aHostileHeaderIsSplitWithoutTrouble() {
        let header = String(repeating: "W/\"x\",", count: 50_000)
        let tags = Request.etags(in: header)
        #expect(tags.count == 50_000 && tags.allSatisfy { $0 == "\"x\"" })
    }
}

/// `req.requested_path` as chttpd splits and unquotes the raw target.
@Suite struct RequestedPathTests {
    @Test func partsAreSplitThenDecodedWithPlusAsSpace() {
        #expect(
            DesignRequestObject.requestedPath("/db/_design/d/_show/s/a%2Fb+c?q=%22x%22&p=1+2")
                == ["db", "_design", "d", "_show", "s", "a/b c?q=\"x\"&p=1 2"])
    }

    @Test func emptyPartsAreDroppedAndUndecodablePartsStayAsSent() {
        #expect(DesignRequestObject.requestedPath("//db///x%") == ["db", "x%"])
        #expect(DesignRequestObject.requestedPath("/db/%zz/%E9") == ["db", "%zz", "%E9"])
        #expect(DesignRequestObject.requestedPath("").isEmpty)
        #expect(DesignRequestObject.requestedPath("/").isEmpty)
    }
}
