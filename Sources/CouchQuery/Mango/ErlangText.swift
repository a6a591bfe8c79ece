import CouchWire
import Foundation

/// JSON written as Erlang prints the term jiffy decodes it to with `~w`, which is how CouchDB quotes a bad
/// argument in its error reasons (`Bad argument for operator $exists: <<120>>`): strings as binaries of byte
/// values, objects as `{[{Key,Value}]}`, `null`/`true`/`false` as atoms.
/// With `pretty` (`~p`), printable binaries read as text: `<<"a">>`.
public enum ErlangText {
    public static func format(_ value: JSON, pretty: Bool = false) -> String {
        var out = ""
        append(value, pretty: pretty, to: &out)
        return out
    }

    private static func append(_ value: JSON, pretty: Bool, to out: inout String) {
        switch value {
        case .null: out += "null"
        case .bool(let flag): out += flag ? "true" : "false"
        case .number(let number): out += formatNumber(number)
        case .string(let text): out += binary(text, pretty: pretty)
        case .array(let elements):
            out += "["
            for (position, element) in elements.enumerated() {
                if position > 0 { out += "," }
                append(element, pretty: pretty, to: &out)
            }
            out += "]"
        case .object(let object):
            out += "{["
            for (position, member) in object.enumerated() {
                if position > 0 { out += "," }
                out += "{" + binary(member.key, pretty: pretty) + ","
                append(member.value, pretty: pretty, to: &out)
                out += "}"
            }
            out += "]}"
        }
    }

    private static func binary(_ text: String, pretty: Bool) -> String {
        if pretty, text.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) {
            return "<<\""
                + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
                + "\">>"
        }
        return "<<" + text.utf8.map(String.init).joined(separator: ",") + ">>"
    }

    /// Integers as written; floats in Erlang's shortest form (`2.5`, `1.0e10`, `1.0`).
    private static func formatNumber(_ number: JSONNumber) -> String {
        if let integer = number.intValue { return String(integer) }
        guard let double = number.doubleValue else { return number.text }
        var text = "\(double)".replacingOccurrences(of: "e+", with: "e")
        let exponent = text.firstIndex(of: "e")
        let mantissa = exponent.map { String(text[..<$0]) } ?? text
        if !mantissa.contains(".") {
            text = mantissa + ".0" + (exponent.map { String(text[$0...]) } ?? "")
        }
        return text
    }
}
