import Testing

@testable import PhotoDrop

/// The short code of `couchlite receive`, traded by `couchlite push --to NAME` for the one-time credentials.
@Suite struct PairingCodeTests {
    static let code = Array("ABCD2345".utf8)

    static func opened(httpsOnly: Bool = true) -> PairingCode {
        let pairing = PairingCode(code: code)
        pairing.open(user: "drop-1", password: "secret", httpsOnly: httpsOnly)
        return pairing
    }

    @Test func theRightCodeAsTypedGetsTheCredentials() {
        let pairing = Self.opened()
        #expect(pairing.display == "ABCD-2345")
        for typed in ["ABCD-2345", "abcd2345", " abcd 2345 ", "aBcD-2345"] {
            #expect(pairing.redeem(typed, secure: true) == .accepted(user: "drop-1", password: "secret"), "\(typed)")
        }
        // Crockford's reading of the letters it leaves out: O is 0, I and L are 1.
        let digits = PairingCode(code: Array("10000001".utf8))
        digits.open(user: "u", password: "p", httpsOnly: false)
        #expect(digits.redeem("lOOO-OOOI", secure: false) == .accepted(user: "u", password: "p"))
    }

    @Test func randomCodesAreEightCharactersOfTheUnambiguousAlphabet() {
        var seen = Set<[UInt8]>()
        for _ in 0..<1000 {
            let code = PairingCode().code
            #expect(code.count == 8)
            #expect(code.allSatisfy { PairingCode.alphabet.contains($0) })
            #expect(!code.contains { "ILOU".utf8.contains($0) })
            seen.insert(code)
        }
        #expect(seen.count > 990)
    }

    @Test func shortCodeGuessingIsStoppedAfterTenWrongCodesEvenForTheRightOne() {
        let pairing = Self.opened()
        for attempt in 1..<PairingCode.maxWrongCodes {
            #expect(pairing.redeem("ZZZZ-ZZZZ", secure: true) == .wrong(left: PairingCode.maxWrongCodes - attempt))
        }
        #expect(pairing.redeem("ZZZZ-ZZZY", secure: true) == .spent)
        // Spent for good: the right code no longer works either (the URL and the QR code still do).
        #expect(pairing.redeem("ABCD-2345", secure: true) == .spent)
        #expect(pairing.redeem("ABCD-2345", secure: true) == .spent)
    }

    @Test func shortCodeGuessingInParallelIsCountedExactly() async {
        let pairing = Self.opened()
        let accepted = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<200 {
                group.addTask {
                    let guess = index == 199 ? "ABCD-2345" : "ZZZZ-ZZZZ"
                    if case .accepted = pairing.redeem(guess, secure: true) { return true }
                    return false
                }
            }
            var count = 0
            for await ok in group where ok { count += 1 }
            return count
        }
        // 199 wrong guesses spend the code whatever the order, so the right one can only have come in the first ten.
        #expect(accepted <= 1)
        #expect(pairing.redeem("ABCD-2345", secure: true) == .spent)
    }

    @Test func malformedCodesAreNotCountedAndCodesOverPlainHTTPAreRefusedUnread() {
        let pairing = Self.opened()
        for typed in ["", "ABC", "ABCD-23456", "ABCD-234U", String(repeating: "A", count: 10_000), "ÀBCD-2345"] {
            #expect(pairing.redeem(typed, secure: true) == .malformed)
        }
        for _ in 0..<50 { #expect(pairing.redeem("ABCD-2345", secure: false) == .insecure) }
        #expect(pairing.redeem("ABCD-2345", secure: true) == .accepted(user: "drop-1", password: "secret"))
        let plain = Self.opened(httpsOnly: false)
        #expect(plain.redeem("ABCD-2345", secure: false) == .accepted(user: "drop-1", password: "secret"))
    }

    @Test func aClosedSessionsCodeGetsNothing() {
        let pairing = Self.opened()
        pairing.close()
        #expect(pairing.redeem("ABCD-2345", secure: true) == .closed)
        #expect(PairingCode(code: Self.code).redeem("ABCD-2345", secure: true) == .closed)
    }
}
