// swift-tools-version:5.9
// Rampart's iOS client: a platform-independent core (RampartCore: the wire protocol, tokens, the
// queue, the allow list, the lifecycle rules, uploads), which builds and is tested on Linux too,
// and the app-facing library (RampartSDK: Castle iOS's API shape, and the UIKit, Keychain and
// device adapters, compiled where UIKit exists).
import PackageDescription

let package = Package(
    name: "Rampart",
    platforms: [.iOS(.v13), .macOS(.v10_15)],
    products: [
        .library(name: "RampartSDK", targets: ["RampartSDK"]),
    ],
    targets: [
        .target(name: "RampartCore"),
        .target(name: "RampartSDK", dependencies: ["RampartCore"]),
        .testTarget(name: "RampartCoreTests", dependencies: ["RampartCore", "RampartSDK"]),
        .testTarget(name: "RampartE2ETests", dependencies: ["RampartSDK"]),
    ]
)
