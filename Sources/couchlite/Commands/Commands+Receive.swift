import CouchServer
import PhotoDrop

extension Commands {
    /// `couchlite receive [options]`: a photo drop with one-time credentials (see `ReceiveSession`).
    public static func receive(arguments: [String], environment: [String: String]) -> Int32 {
        switch ReceiveOptions.commandLine.enter(
            arguments, environment: environment, into: ReceiveOptions.defaults, check: ReceiveOptions.check)
        {
        case .run(let options): return ReceiveSession(options: options).run()
        case .exit(let status): return status
        }
    }
}
