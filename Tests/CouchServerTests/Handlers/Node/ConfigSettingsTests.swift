import CouchWire
import Testing

@testable import CouchServer

/// `_config`'s settings: values are checked before anything changes, unknown keys are never stored, and a change
/// reaches the next request. Integer limits are tried on private `LiveInt`s (the server's are process-wide and
/// other tests rely on their defaults); CORS and the log level belong to one server and are tried on it.
@Suite struct ConfigSettingsTests {
    @Test(arguments: ["abc", "-5", "0", "1.5", "", " 7", "99999999999999999999999"])
    func aBadIntegerChangesNothing(_ value: String) {
        let setting = LiveInt(42)
        let entry = ConfigSettings.integer("couchdb", "max_document_size", setting)
        #expect(throws: CouchError.self) { try entry.write(value) }
        #expect(setting.value == 42)
        #expect(entry.read() == "42")
    }

    @Test func anIntegerIsSetAndResetToItsInitialValue() throws {
        let setting = LiveInt(42)
        let entry = ConfigSettings.integer("uuids", "max_count", setting)
        try entry.write("7")
        #expect(setting.value == 7 && entry.read() == "7")
        entry.reset()
        #expect(setting.value == 42)
    }

    @Test func logLevelsTakeCouchDBsNamesCouchliteHas() throws {
        #expect(try ConfigSettings.logLevel("debug") == .debug)
        #expect(try ConfigSettings.logLevel("warn") == .warning)
        #expect(try ConfigSettings.logLevel("err") == .error)
        for bad in ["notice", "critical", "none", "INFO", ""] {
            #expect(throws: CouchError.self) { try ConfigSettings.logLevel(bad) }
        }
    }

    @Test func unknownKeysAreNotFoundAndNeverStored() throws {
        try InProcessServer.with { server in
            let admin = InProcessServer.admin
            let put = try server.request("PUT", "/_node/_local/_config/nosection/k", as: admin, json: "\"v\"")
            #expect(put.status == 404 && put.reason == "unknown_config_value", "\(put)")
            let section = try server.request("GET", "/_node/_local/_config/nosection", as: admin)
            #expect(section.status == 200 && section.text.hasPrefix("{}"))
            let all = try server.request("GET", "/_node/_local/_config", as: admin)
            #expect(all.json["nosection"] == nil)
            #expect(all.json["log"]?["level"]?.stringValue == "error")
        }
    }

    @Test func corsAndLogLevelChangeForTheNextRequest() throws {
        try InProcessServer.with { server in
            let admin = InProcessServer.admin
            let origin = [("Origin", "http://app.example")]
            #expect(try server.request("GET", "/", headers: origin).header("Access-Control-Allow-Origin") == nil)
            let config = "/_node/_local/_config"
            #expect(
                try server.request("PUT", config + "/cors/origins", as: admin, json: "\"http://app.example\"").json
                    == .string(""))
            // Origins alone do not turn CORS on: [chttpd] enable_cors does.
            #expect(try server.request("GET", "/", headers: origin).header("Access-Control-Allow-Origin") == nil)
            #expect(
                try server.request("PUT", config + "/chttpd/enable_cors", as: admin, json: "\"true\"").status == 200)
            let allowed = try server.request("GET", "/", headers: origin)
            #expect(allowed.header("Access-Control-Allow-Origin") == "http://app.example")
            let bad = try server.request("PUT", config + "/chttpd/enable_cors", as: admin, json: "\"yes\"")
            #expect(bad.status == 400)
            #expect(try server.request("DELETE", config + "/chttpd/enable_cors", as: admin).json == .string("true"))
            #expect(try server.request("GET", "/", headers: origin).header("Access-Control-Allow-Origin") == nil)
            #expect(
                try server.request("PUT", config + "/log/level", as: admin, json: "\"debug\"").json
                    == .string("error"))
            #expect(server.app.log.level == .debug)
            #expect(try server.request("DELETE", config + "/log/level", as: admin).json == .string("debug"))
            #expect(server.app.log.level == .error)
        }
    }
}
