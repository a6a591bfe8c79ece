import CouchWire
import Testing

@Suite struct UpdateSeqTests {
    @Test func formatsCouchDB3Strings() {
        #expect(UpdateSeq.format(0) == "0-AAAAAAAAAAA")
        #expect(UpdateSeq.format(12) == "12-AAAAAAAAAAw")
        #expect(UpdateSeq.format(Int.max) == "9223372036854775807-f_________8")
    }

    @Test func formatIsStableAndOrderedByItsLeadingNumber() {
        for seq in [1, 2, 63, 64, 255, 256, 65_535, 1 << 40] {
            let text = UpdateSeq.format(seq)
            #expect(text == UpdateSeq.format(seq))
            #expect(text.hasPrefix("\(seq)-"))
            #expect(!text.contains("=") && !text.contains("+") && !text.contains("/"))
        }
    }

    @Test func everyFormRoundTrips() {
        for seq in [0, 1, 9, 10, 99, 12_345, 1 << 40, Int.max] {
            #expect(UpdateSeq.parse(UpdateSeq.format(seq)) == seq)
            #expect(UpdateSeq.parse("\(seq)") == seq)
            #expect(UpdateSeq.parse("\"\(seq)\"") == seq)
            #expect(UpdateSeq.parse("\"\(UpdateSeq.format(seq))\"") == seq)
        }
    }

    @Test func readsOnlyTheLeadingNumberOfAForeignToken() {
        #expect(UpdateSeq.parse("34-g1AAAACbeJzLYWBgYMpgTmEQTM4vTc5ISXIwNDLXMwBCwxyQ") == 34)
        #expect(UpdateSeq.parse("7-") == 7)
        #expect(UpdateSeq.parse("7--x") == 7)
    }

    @Test func refusesWhatIsNotASequence() {
        for text in [
            "", "\"", "\"\"", "-", "-1", "-1-abc", "abc", "g1AAAA", "1x", "1.5", "1 ", " 1", "１", "٣", "1e3",
            "99999999999999999999999", "99999999999999999999999-abc", "now",
        ] {
            #expect(UpdateSeq.parse(text) == nil, "\(text)")
        }
    }
}
