// In-process micro-benchmarks. Usage: couchlite-microbench json|store|revhash|blip|all, or crash-child DIR (crash test).
import Foundation

let arguments = Array(CommandLine.arguments.dropFirst())
let which = arguments.first ?? "all"
if which == "crash-child" {
    guard arguments.count == 2 else {
        FileHandle.standardError.write(Data("usage: couchlite-microbench crash-child DIR\n".utf8))
        exit(64)
    }
    CrashChild.run(directory: arguments[1])
    exit(0)
}
if which == "json" || which == "all" { JSONBenchmark.run() }
if which == "store" || which == "all" { StoreBenchmark.run() }
if which == "revhash" || which == "all" { RevHashBenchmark.run() }
if which == "blip" || which == "all" { BlipBenchmark.run() }
