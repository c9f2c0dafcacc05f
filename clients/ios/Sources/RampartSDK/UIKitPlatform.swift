// The iOS platform: the Keychain for the install id and the session, files under Application
// Support for the queue, UIApplication's notifications for the lifecycle, each view controller
// that appears for screen tracking, and the device's description and checks (docs/mobile.md,
// "What to collect"). Compiled only where UIKit exists; the rules it feeds (RampartCore) are
// tested on any machine.
#if canImport(UIKit) && !os(watchOS)
import Foundation
import MachO
import Security
import UIKit

/// The Keychain (`kSecClassGenericPassword`, this device only, readable after the first unlock):
/// it survives a reinstall and is not restored onto another phone.
public final class KeychainStorage: KeyValueStorage {
    private let service: String

    public init(service: String = "com.rampart.sdk") { self.service = service }

    private func query(_ key: String) -> [String: Any] {
        [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service, kSecAttrAccount as String: key]
    }

    public func get(_ key: String) -> String? {
        var q = query(key)
        q[kSecReturnData as String] = true
        q[kSecMatchLimit as String] = kSecMatchLimitOne
        var out: CFTypeRef?
        guard SecItemCopyMatching(q as CFDictionary, &out) == errSecSuccess, let data = out as? Data else { return nil }
        return String(data: data, encoding: .utf8)
    }

    public func set(_ key: String, _ value: String) throws {
        let data = Data(value.utf8)
        let update: [String: Any] = [kSecValueData as String: data, kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly]
        var status = SecItemUpdate(query(key) as CFDictionary, update as CFDictionary)
        if status == errSecItemNotFound {
            var add = query(key)
            add.merge(update) { _, new in new }
            status = SecItemAdd(add as CFDictionary, nil)
        }
        if status != errSecSuccess { throw NSError(domain: NSOSStatusErrorDomain, code: Int(status)) }
    }

    public func remove(_ key: String) {
        SecItemDelete(query(key) as CFDictionary)
    }
}

/// `didBecomeActive` is an open, `didEnterBackground` a close.
final class UIKitAppState: AppStateSource {
    private let lock = NSLock()
    private var state: AppState
    private var observers: [NSObjectProtocol] = []

    init() {
        let read = { UIApplication.shared.applicationState == .background ? AppState.background : AppState.active }
        state = Thread.isMainThread ? read() : DispatchQueue.main.sync(execute: read)
    }

    var current: AppState {
        lock.lock()
        defer { lock.unlock() }
        return state
    }

    func subscribe(_ listener: @escaping (AppState) -> Void) -> Cancellable {
        let center = NotificationCenter.default
        let tokens = [
            center.addObserver(forName: UIApplication.didBecomeActiveNotification, object: nil, queue: nil) { [weak self] _ in self?.move(.active, listener) },
            center.addObserver(forName: UIApplication.didEnterBackgroundNotification, object: nil, queue: nil) { [weak self] _ in self?.move(.background, listener) },
        ]
        return Subscription { tokens.forEach(center.removeObserver) }
    }

    private func move(_ s: AppState, _ listener: (AppState) -> Void) {
        lock.lock()
        state = s
        lock.unlock()
        listener(s)
    }
}

extension Notification.Name {
    static let rampartScreenAppeared = Notification.Name("RampartScreenAppeared")
}

/// Each view controller that appears (containers excepted) is a screen, named by its title or
/// its class. `viewDidAppear(_:)` is exchanged once, process-wide, to post the name.
final class UIKitScreens: ScreenSource {
    private static let swizzle: Void = {
        let cls: AnyClass = UIViewController.self
        guard let original = class_getInstanceMethod(cls, #selector(UIViewController.viewDidAppear(_:))),
              let replacement = class_getInstanceMethod(cls, #selector(UIViewController.rampart_viewDidAppear(_:)))
        else { return }
        method_exchangeImplementations(original, replacement)
    }()

    init() { _ = UIKitScreens.swizzle }

    func subscribe(_ listener: @escaping (String) -> Void) -> Cancellable {
        let center = NotificationCenter.default
        let token = center.addObserver(forName: .rampartScreenAppeared, object: nil, queue: nil) { note in
            if let name = note.userInfo?["name"] as? String { listener(name) }
        }
        return Subscription { center.removeObserver(token) }
    }
}

extension UIViewController {
    @objc func rampart_viewDidAppear(_ animated: Bool) {
        rampart_viewDidAppear(animated) // the original, after the exchange
        if self is UINavigationController || self is UITabBarController || self is UIPageViewController || self is UISplitViewController { return }
        var name = title ?? String(describing: type(of: self))
        if title == nil, name.hasSuffix("ViewController"), name.count > "ViewController".count { name.removeLast("ViewController".count) }
        NotificationCenter.default.post(name: .rampartScreenAppeared, object: nil, userInfo: ["name": name])
    }
}

public final class UIKitPlatform: RampartPlatform {
    public let storage: KeyValueStorage
    public let secureStorage: KeyValueStorage
    public let appState: AppStateSource
    public let screens: ScreenSource?
    public let transport: HTTPTransport = URLSessionTransport()
    public let clock: RampartClock = SystemClock()
    private let attest: () -> Attestation?

    /// `attestation`: an App Attest attestation the app obtained (`DCAppAttestService.attestKey`), carried as evidence.
    public init(attestation: @escaping () -> Attestation? = { nil }) {
        var directory = FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask)[0].appendingPathComponent("Rampart")
        storage = FileStorage(directory: directory)
        // Not in backups: restored onto another phone, the stored app version would hide that phone's install.
        var values = URLResourceValues()
        values.isExcludedFromBackup = true
        try? directory.setResourceValues(values)
        secureStorage = KeychainStorage()
        appState = UIKitAppState()
        screens = UIKitScreens()
        attest = attestation
    }

    public func attestation() -> Attestation? { attest() }

    public func randomBytes(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        if SecRandomCopyBytes(kSecRandomDefault, count, &bytes) != errSecSuccess { return systemRandomBytes(count) }
        return bytes
    }

    public func log(_ message: String) { NSLog("%@", message) }

    public func deviceInfo() -> DeviceInfo {
        let read = { () -> DeviceInfo in
            let info = Bundle.main.infoDictionary ?? [:]
            let device = UIDevice.current
            let screen = UIScreen.main
            return DeviceInfo(
                platform: .ios,
                osVersion: device.systemVersion,
                model: UIKitPlatform.hardwareModel(),
                manufacturer: "Apple",
                app: .init(id: Bundle.main.bundleIdentifier ?? "unknown",
                           name: (info["CFBundleDisplayName"] as? String) ?? (info["CFBundleName"] as? String) ?? "App",
                           version: (info["CFBundleShortVersionString"] as? String) ?? "0",
                           build: info["CFBundleVersion"] as? String),
                locale: Locale.preferredLanguages.first,
                timezone: TimeZone.current.identifier,
                timezoneOffset: -TimeZone.current.secondsFromGMT() / 60,
                screen: ScreenSize(width: Double(screen.nativeBounds.width), height: Double(screen.nativeBounds.height), scale: Double(screen.nativeScale)),
                vendorId: device.identifierForVendor?.uuidString,
                integrity: UIKitPlatform.integrity())
        }
        return Thread.isMainThread ? read() : DispatchQueue.main.sync(execute: read)
    }

    /// `utsname.machine` (`iPhone15,3`); on the simulator, the model it simulates.
    static func hardwareModel() -> String {
        if let simulated = ProcessInfo.processInfo.environment["SIMULATOR_MODEL_IDENTIFIER"] { return simulated }
        var u = utsname()
        uname(&u)
        return withUnsafeBytes(of: &u.machine) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
    }

    static func integrity() -> [IntegrityCheck] {
        #if targetEnvironment(simulator)
        let simulator = true
        #else
        let simulator = false
        #endif
        let jailbroken = !simulator && IntegrityRules.jailbroken(
            fileExists: { FileManager.default.fileExists(atPath: $0) },
            canWriteOutsideSandbox: {
                let path = "/private/rampart-\(UUID().uuidString)"
                guard (try? "x".write(toFile: path, atomically: false, encoding: .utf8)) != nil else { return false }
                try? FileManager.default.removeItem(atPath: path)
                return true
            })
        var images: [String] = []
        for i in 0..<_dyld_image_count() {
            if let name = _dyld_get_image_name(i) { images.append(String(cString: name)) }
        }
        return IntegrityRules.findings(simulator: simulator, jailbroken: jailbroken, debugger: debuggerAttached(),
                                       hooked: IntegrityRules.hooked(imageNames: images), tampered: false)
    }

    /// `sysctl` `P_TRACED`: a debugger is attached.
    static func debuggerAttached() -> Bool {
        var info = kinfo_proc()
        var size = MemoryLayout<kinfo_proc>.stride
        var mib: [Int32] = [CTL_KERN, KERN_PROC, KERN_PROC_PID, getpid()]
        guard sysctl(&mib, u_int(mib.count), &info, &size, nil, 0) == 0 else { return false }
        return (info.kp_proc.p_flag & P_TRACED) != 0
    }
}
#endif
