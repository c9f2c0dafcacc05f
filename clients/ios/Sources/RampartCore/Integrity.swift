// The rules of the device's own checks (docs/mobile.md, "What to collect"), as pure functions of
// what the platform adapter can observe, so that they are tested on any machine: the UIKit adapter
// feeds them the file system, the loaded images and the process flags.
import Foundation

public enum IntegrityRules {
    /// Files that exist only on jailbroken phones (package managers, Substrate, a shell, sshd).
    public static let jailbreakPaths = [
        "/Applications/Cydia.app",
        "/Applications/Sileo.app",
        "/Applications/Zebra.app",
        "/Library/MobileSubstrate/MobileSubstrate.dylib",
        "/usr/lib/libsubstitute.dylib",
        "/usr/lib/TweakInject",
        "/var/jb",
        "/bin/bash",
        "/usr/sbin/sshd",
        "/etc/apt",
        "/private/var/lib/apt/",
    ]

    /// Image names (or parts of them) of hooking frameworks: Frida, Substrate, Substitute, libhooker.
    public static let hookingImageMarkers = ["frida", "fridagadget", "mobilesubstrate", "substrateloader", "libsubstitute", "libhooker", "cynject", "substrateinserter"]

    /// `jailbroken` when any tell-tale file exists, or when the sandbox lets the app write outside its container.
    public static func jailbroken(fileExists: (String) -> Bool, canWriteOutsideSandbox: () -> Bool) -> Bool {
        jailbreakPaths.contains(where: fileExists) || canWriteOutsideSandbox()
    }

    /// `hooking_framework` when a loaded image's name carries a hooking framework's marker.
    public static func hooked(imageNames: [String]) -> Bool {
        imageNames.contains { name in
            let lower = name.lowercased()
            return hookingImageMarkers.contains { lower.contains($0) }
        }
    }

    /// The checks that found something, in the protocol's order.
    public static func findings(simulator: Bool, jailbroken: Bool, debugger: Bool, hooked: Bool, tampered: Bool) -> [IntegrityCheck] {
        var out: [IntegrityCheck] = []
        if simulator { out.append(.emulator) }
        if jailbroken { out.append(.jailbroken) }
        if debugger { out.append(.debugger) }
        if hooked { out.append(.hookingFramework) }
        if tampered { out.append(.appTampered) }
        return out
    }
}
