import RevTree
import Testing
@Suite struct PlaceholderRevTree { @Test func builds() { #expect(Bool(true)) } }
