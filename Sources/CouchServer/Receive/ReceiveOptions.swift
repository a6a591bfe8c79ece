import Foundation

/// The command line of `couchlite receive`: its own flags, plus every server option of `serve` (data dir,
/// admin, log level, …) from the same table and the same `COUCHLITE_*` environment variables.
struct ReceiveOptions: Sendable {
    var server = Options()
    /// nil: the best LAN address (`LANAddresses`), else loopback.
    var bind: String?
    var out = "./PhotoDrop"
    var database = "photodrop"
    var ttl = Duration.seconds(15 * 60)
    var once = false
    var qrPNG: String?
    /// Whether the QR code's URL carries the certificate fingerprint (`#sha256=…`) for the sender to pin.
    var qrPin = false
    var json = false

    /// One receive-only option (`value` false: a flag without a value).
    struct Spec: Sendable {
        let flag: String
        let environment: String
        let valueName: String?
        let help: String
        let apply: @Sendable (inout ReceiveOptions, String) throws(OptionsError) -> Void
    }

    static let table: [Spec] = [
        Spec(
            flag: "--out", environment: "COUCHLITE_RECEIVE_OUT", valueName: "DIR",
            help: "folder the photos are saved in, default ./PhotoDrop"
        ) { o, v throws(OptionsError) in
            guard !v.isEmpty else { throw OptionsError("--out needs a directory") }
            o.out = v
        },
        Spec(
            flag: "--db", environment: "COUCHLITE_RECEIVE_DB", valueName: "NAME",
            help: "drop database (created if missing), default photodrop"
        ) { o, v throws(OptionsError) in
            do {
                try App.validateDatabaseName(v)
            } catch {
                throw OptionsError("--db: '\(v)' is not a valid database name")
            }
            guard !v.hasPrefix("_") else { throw OptionsError("--db cannot be a system database") }
            o.database = v
        },
        Spec(
            flag: "--bind", environment: "COUCHLITE_BIND", valueName: "ADDRESS",
            help: "address to listen on, default the machine's LAN address (loopback if none)"
        ) { o, v throws(OptionsError) in
            guard !v.isEmpty else { throw OptionsError("--bind needs an address") }
            o.bind = v
        },
        Spec(
            flag: "--ttl", environment: "COUCHLITE_RECEIVE_TTL", valueName: "DURATION",
            help: "how long the one-time credentials live (90s, 15m, 1h30m), default 15m"
        ) { o, v throws(OptionsError) in
            guard let seconds = ReceiveOptions.parseDuration(v), seconds > 0 else {
                throw OptionsError("--ttl must be a duration like 30s, 15m or 2h, got '\(v)'")
            }
            o.ttl = .seconds(seconds)
        },
        Spec(
            flag: "--once", environment: "COUCHLITE_RECEIVE_ONCE", valueName: nil,
            help: "end when the first push is complete (its checkpoint written, then quiet)"
        ) { o, v throws(OptionsError) in
            guard let flag = Bool(v) else { throw OptionsError("--once takes no value (or true/false)") }
            o.once = flag
        },
        Spec(
            flag: "--qr-png", environment: "COUCHLITE_RECEIVE_QR_PNG", valueName: "FILE",
            help: "also write the QR code as a PNG image"
        ) { o, v throws(OptionsError) in
            guard !v.isEmpty else { throw OptionsError("--qr-png needs a file name") }
            o.qrPNG = v
        },
        Spec(
            flag: "--qr-pin", environment: "COUCHLITE_RECEIVE_QR_PIN", valueName: nil,
            help: "with --tls: add the certificate's #sha256=FINGERPRINT to the QR code's URL (couchlite push pins it)"
        ) { o, v throws(OptionsError) in
            guard let flag = Bool(v) else { throw OptionsError("--qr-pin takes no value (or true/false)") }
            o.qrPin = flag
        },
        Spec(
            flag: "--json", environment: "COUCHLITE_RECEIVE_JSON", valueName: nil,
            help: "print one JSON line {url,user,expires,db,out} instead of the text and QR code"
        ) { o, v throws(OptionsError) in
            guard let flag = Bool(v) else { throw OptionsError("--json takes no value (or true/false)") }
            o.json = flag
        },
    ]

    /// `serve`'s options that mean the same here (`--bind` and `--port` differ in their defaults or help).
    static let serverSpecs = Options.table.filter { $0.flag != "--bind" }

    static var usage: String {
        var lines = [
            "usage: couchlite receive [options]", "",
            "Receive photos: serve a drop database with one-time credentials, print its URL and QR code, and save",
            "every photo pushed into it (CouchDB replicator, PouchDB, Couchbase Lite 1.x) in a folder.", "",
            "options:",
        ]
        func row(_ flag: String, _ value: String?, _ help: String, _ environment: String) {
            let left = "  \(flag)" + (value.map { " \($0)" } ?? "")
            lines.append(left.padding(toLength: 30, withPad: " ", startingAt: 0) + help + " [$\(environment)]")
        }
        for spec in table { row(spec.flag, spec.valueName, spec.help, spec.environment) }
        for spec in serverSpecs {
            let help = spec.flag == "--log-level" ? "error, warning, info or debug; default warning here" : spec.help
            row(spec.flag, spec.valueName, help, spec.environment)
        }
        lines.append("  --help".padding(toLength: 30, withPad: " ", startingAt: 0) + "show this help")
        return lines.joined(separator: "\n")
    }

    /// Parses the environment first, then the arguments, which win.
    /// - Returns: nil when `--help` was asked for.
    static func parse(arguments: [String], environment: [String: String]) throws(OptionsError) -> ReceiveOptions? {
        var options = ReceiveOptions()
        // Less chatter than `serve`: one line per request would bury the progress line.
        options.server.logLevel = .warning
        for spec in table {
            if let value = environment[spec.environment] { try spec.apply(&options, value) }
        }
        for spec in serverSpecs {
            if let value = environment[spec.environment] { try spec.apply(&options.server, value) }
        }
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "--help" || argument == "-h" { return nil }
            var name = argument
            var value: String?
            if let eq = argument.firstIndex(of: "="), argument.hasPrefix("--") {
                name = String(argument[..<eq])
                value = String(argument[argument.index(after: eq)...])
            }
            if let spec = table.first(where: { $0.flag == name }) {
                if spec.valueName == nil {
                    try spec.apply(&options, value ?? "true")
                } else {
                    if value == nil {
                        index += 1
                        guard index < arguments.count else { throw OptionsError("\(name) needs a value") }
                        value = arguments[index]
                    }
                    try spec.apply(&options, value ?? "")
                }
            } else if let spec = serverSpecs.first(where: { $0.flag == name }) {
                if value == nil {
                    index += 1
                    guard index < arguments.count else { throw OptionsError("\(name) needs a value") }
                    value = arguments[index]
                }
                try spec.apply(&options.server, value ?? "")
            } else {
                throw OptionsError("unknown option '\(argument)'")
            }
            index += 1
        }
        try options.server.validate()
        if options.qrPin && !options.server.tls.isOn {
            throw OptionsError("--qr-pin puts the certificate's fingerprint in the QR code: it needs --tls")
        }
        return options
    }

    /// `90`, `90s`, `15m`, `2h`, `1h30m`, `1d` → seconds; nil for anything else.
    static func parseDuration(_ text: String) -> Int? {
        guard !text.isEmpty, text.utf8.count <= 32 else { return nil }
        if let plain = Int(text) { return plain }
        var total = 0
        var number = ""
        for character in text {
            if character.isASCII, character.isNumber {
                number.append(character)
                continue
            }
            let unit: Int
            switch character {
            case "s": unit = 1
            case "m": unit = 60
            case "h": unit = 3600
            case "d": unit = 86400
            default: return nil
            }
            guard let value = Int(number) else { return nil }
            let (product, overflow) = value.multipliedReportingOverflow(by: unit)
            guard !overflow else { return nil }
            let (sum, overflowSum) = total.addingReportingOverflow(product)
            guard !overflowSum else { return nil }
            total = sum
            number = ""
        }
        return number.isEmpty ? total : nil
    }
}
