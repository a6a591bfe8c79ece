// In-process micro-benchmarks. Usage: couchlite-microbench json|store
import Foundation

let which = CommandLine.arguments.dropFirst().first ?? "all"
if which == "json" || which == "all" { JSONBenchmark.run() }
if which == "store" || which == "all" { StoreBenchmark.run() }
