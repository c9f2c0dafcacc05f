// The platform adapter: everything the client core needs from the device, behind one protocol.
// The core (RampartClient) holds the queue, the flush rules, the session and token logic and the
// allow list; it reaches storage, app state, device facts, the network, the clock and randomness
// only through a `RampartPlatform`. RampartSDK implements one over UIKit and the Keychain
// (`#if canImport(UIKit)`); the tests implement one over temporary files, with a fake clock and a
// recording network, so every rule runs on Linux without a phone (as the React Native library
// keeps its platform behind one interface).
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A small synchronous string store (files, the Keychain, memory).
public protocol KeyValueStorage: AnyObject {
    func get(_ key: String) -> String?
    /// Throws when the value could not be stored.
    func set(_ key: String, _ value: String) throws
    func remove(_ key: String)
}

/// Only the two states the rules act on: iOS's transient `inactive` is not a change.
public enum AppState: Equatable {
    case active, background
}

public protocol Cancellable: AnyObject {
    func cancel()
}

/// A cancellable made of a closure.
public final class Subscription: Cancellable {
    private var onCancel: (() -> Void)?
    private let lock = NSLock()
    public init(_ onCancel: @escaping () -> Void) { self.onCancel = onCancel }
    public func cancel() {
        lock.lock()
        let f = onCancel
        onCancel = nil
        lock.unlock()
        f?()
    }
}

public protocol AppStateSource: AnyObject {
    /// The state now (an app launched for a background task starts in `background`).
    var current: AppState { get }
    /// Calls `listener` on every change.
    func subscribe(_ listener: @escaping (AppState) -> Void) -> Cancellable
}

/// Where automatic screen tracking learns the screen shown (each view controller that appears).
public protocol ScreenSource: AnyObject {
    func subscribe(_ listener: @escaping (String) -> Void) -> Cancellable
}

public struct DeviceInfo: Equatable {
    public struct App: Equatable {
        /// The bundle identifier.
        public var id: String
        /// The display name, for the user agent.
        public var name: String
        public var version: String
        public var build: String?
        public init(id: String, name: String, version: String, build: String?) {
            self.id = id
            self.name = name
            self.version = version
            self.build = build
        }
    }
    public var platform: MobilePlatform
    /// `UIDevice.current.systemVersion`.
    public var osVersion: String
    /// The hardware identifier (`utsname.machine`, e.g. `iPhone15,3`).
    public var model: String
    public var manufacturer: String?
    public var app: App
    /// BCP 47 (`en-GB`).
    public var locale: String?
    /// IANA name.
    public var timezone: String?
    /// Minutes, as JavaScript's `getTimezoneOffset()` (UTC minus local).
    public var timezoneOffset: Int?
    /// Physical pixels and density.
    public var screen: ScreenSize?
    /// The raw vendor id (`identifierForVendor`): hashed before it is sent, unless forwarding is on.
    public var vendorId: String?
    /// What the device's own checks found.
    public var integrity: [IntegrityCheck]

    public init(platform: MobilePlatform = .ios, osVersion: String, model: String, manufacturer: String? = "Apple", app: App,
                locale: String? = nil, timezone: String? = nil, timezoneOffset: Int? = nil, screen: ScreenSize? = nil,
                vendorId: String? = nil, integrity: [IntegrityCheck] = []) {
        self.platform = platform
        self.osVersion = osVersion
        self.model = model
        self.manufacturer = manufacturer
        self.app = app
        self.locale = locale
        self.timezone = timezone
        self.timezoneOffset = timezoneOffset
        self.screen = screen
        self.vendorId = vendorId
        self.integrity = integrity
    }
}

public struct HTTPResponse {
    public let status: Int
    /// Header names in lower case.
    public let headers: [String: String]
    public let body: Data
    public init(status: Int, headers: [String: String], body: Data) {
        self.status = status
        self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { a, _ in a })
        self.body = body
    }
}

/// POST with a JSON body, as far as the core calls it. The completion may run on any thread.
public protocol HTTPTransport: AnyObject {
    func post(_ url: URL, headers: [String: String], body: Data, completion: @escaping (Result<HTTPResponse, Error>) -> Void)
}

public protocol RampartClock: AnyObject {
    /// Device time, milliseconds since the epoch.
    func now() -> Int64
    /// Runs `callback` after `ms` milliseconds, on any thread, unless cancelled.
    func schedule(afterMs ms: Int64, _ callback: @escaping () -> Void) -> Cancellable
}

public protocol RampartPlatform: AnyObject {
    /// The app's private storage: the event queue, the last app version, the identified user.
    var storage: KeyValueStorage { get }
    /// Keychain storage: the install id and the session (its key signs tokens).
    var secureStorage: KeyValueStorage { get }
    var appState: AppStateSource { get }
    /// The source of screen names for automatic screen tracking, if the platform has one.
    var screens: ScreenSource? { get }
    /// Read once per client.
    func deviceInfo() -> DeviceInfo
    /// A platform attestation (App Attest) to carry with a registration, if the app provides one.
    func attestation() -> Attestation?
    var transport: HTTPTransport { get }
    var clock: RampartClock { get }
    /// Cryptographically secure random bytes.
    func randomBytes(_ count: Int) -> [UInt8]
    /// Used only with debug logging on.
    func log(_ message: String)
}

// MARK: - Portable implementations (Linux, macOS, and the parts iOS shares)

/// The system clock, with timers on a global dispatch queue.
public final class SystemClock: RampartClock {
    public init() {}
    public func now() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }
    public func schedule(afterMs ms: Int64, _ callback: @escaping () -> Void) -> Cancellable {
        let item = DispatchWorkItem(block: callback)
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(Int(max(0, ms))), execute: item)
        return Subscription { item.cancel() }
    }
}

/// One file per key in a directory, written atomically (the app's private storage).
public final class FileStorage: KeyValueStorage {
    public let directory: URL
    private let lock = NSLock()

    public init(directory: URL) {
        self.directory = directory
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    private func file(_ key: String) -> URL {
        let safe = key.unicodeScalars.map { CharacterSet.alphanumerics.contains($0) || $0 == "." || $0 == "_" || $0 == "-" ? String($0) : "_" }.joined()
        return directory.appendingPathComponent(safe)
    }

    public func get(_ key: String) -> String? {
        lock.lock()
        defer { lock.unlock() }
        guard let data = try? Data(contentsOf: file(key)) else { return nil }
        return String(data: data, encoding: .utf8)
    }

    public func set(_ key: String, _ value: String) throws {
        lock.lock()
        defer { lock.unlock() }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Data(value.utf8).write(to: file(key), options: .atomic)
    }

    public func remove(_ key: String) {
        lock.lock()
        defer { lock.unlock() }
        try? FileManager.default.removeItem(at: file(key))
    }
}

/// A store in memory (tests, and a fallback when nothing else can be had).
public final class MemoryStorage: KeyValueStorage {
    private var values: [String: String] = [:]
    private let lock = NSLock()
    public init() {}
    public func get(_ key: String) -> String? {
        lock.lock()
        defer { lock.unlock() }
        return values[key]
    }
    public func set(_ key: String, _ value: String) throws {
        lock.lock()
        values[key] = value
        lock.unlock()
    }
    public func remove(_ key: String) {
        lock.lock()
        values[key] = nil
        lock.unlock()
    }
}

/// An app state moved by hand (tests, and hosts without a lifecycle).
public final class ManualAppState: AppStateSource {
    private let lock = NSLock()
    private var state: AppState
    private var listeners: [Int: (AppState) -> Void] = [:]
    private var next = 0

    public init(_ initial: AppState = .active) { state = initial }

    public var current: AppState {
        lock.lock()
        defer { lock.unlock() }
        return state
    }

    public func subscribe(_ listener: @escaping (AppState) -> Void) -> Cancellable {
        lock.lock()
        let id = next
        next += 1
        listeners[id] = listener
        lock.unlock()
        return Subscription { [weak self] in
            guard let self else { return }
            self.lock.lock()
            self.listeners[id] = nil
            self.lock.unlock()
        }
    }

    /// Moves to `state` and tells the listeners (once per change).
    public func emit(_ newState: AppState) {
        lock.lock()
        let changed = state != newState
        state = newState
        let ls = Array(listeners.values)
        lock.unlock()
        if changed { ls.forEach { $0(newState) } }
    }
}

/// URLSession as the transport: an ephemeral session (no cookies, no cache), 30 s per request.
public final class URLSessionTransport: HTTPTransport {
    private let session: URLSession

    public init(timeout: TimeInterval = 30) {
        let config = URLSessionConfiguration.ephemeral
        config.timeoutIntervalForRequest = timeout
        config.timeoutIntervalForResource = timeout
        config.httpCookieAcceptPolicy = .never
        config.httpShouldSetCookies = false
        session = URLSession(configuration: config)
    }

    public func post(_ url: URL, headers: [String: String], body: Data, completion: @escaping (Result<HTTPResponse, Error>) -> Void) {
        var req = URLRequest(url: url)
        req.httpMethod = "POST"
        for (k, v) in headers { req.setValue(v, forHTTPHeaderField: k) }
        req.httpBody = body
        session.dataTask(with: req) { data, response, error in
            if let error { return completion(.failure(error)) }
            guard let http = response as? HTTPURLResponse else { return completion(.failure(URLError(.badServerResponse))) }
            var hs: [String: String] = [:]
            for (k, v) in http.allHeaderFields { hs[String(describing: k)] = String(describing: v) }
            completion(.success(HTTPResponse(status: http.statusCode, headers: hs, body: data ?? Data())))
        }.resume()
    }
}

/// Secure random bytes from the system's generator (getrandom on Linux, SecRandom on Apple's).
public func systemRandomBytes(_ count: Int) -> [UInt8] {
    var g = SystemRandomNumberGenerator()
    return (0..<count).map { _ in UInt8.random(in: 0...255, using: &g) }
}

/// A platform made of parts: the default where UIKit is absent (files under the user's
/// application-support directory, an app that is always active, the process's description of
/// itself), and what tests and other hosts assemble.
public final class GenericPlatform: RampartPlatform {
    public let storage: KeyValueStorage
    public let secureStorage: KeyValueStorage
    public let appState: AppStateSource
    public let screens: ScreenSource?
    public let transport: HTTPTransport
    public let clock: RampartClock
    private let device: DeviceInfo
    private let attest: () -> Attestation?
    private let random: (Int) -> [UInt8]
    private let logger: (String) -> Void

    public init(storage: KeyValueStorage? = nil, secureStorage: KeyValueStorage? = nil, appState: AppStateSource = ManualAppState(.active),
                screens: ScreenSource? = nil, device: DeviceInfo? = nil, attestation: @escaping () -> Attestation? = { nil },
                transport: HTTPTransport = URLSessionTransport(), clock: RampartClock = SystemClock(),
                randomBytes: @escaping (Int) -> [UInt8] = systemRandomBytes, log: @escaping (String) -> Void = { NSLog("%@", $0) }) {
        let base = GenericPlatform.defaultDirectory()
        self.storage = storage ?? FileStorage(directory: base.appendingPathComponent("storage"))
        self.secureStorage = secureStorage ?? FileStorage(directory: base.appendingPathComponent("secure"))
        self.appState = appState
        self.screens = screens
        self.device = device ?? GenericPlatform.processDevice()
        self.attest = attestation
        self.transport = transport
        self.clock = clock
        self.random = randomBytes
        self.logger = log
    }

    public func deviceInfo() -> DeviceInfo { device }
    public func attestation() -> Attestation? { attest() }
    public func randomBytes(_ count: Int) -> [UInt8] { random(count) }
    public func log(_ message: String) { logger(message) }

    /// `<application support>/Rampart/<bundle id>`.
    public static func defaultDirectory() -> URL {
        let support = FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first
            ?? URL(fileURLWithPath: NSTemporaryDirectory())
        let bundle = Bundle.main.bundleIdentifier ?? ProcessInfo.processInfo.processName
        return support.appendingPathComponent("Rampart").appendingPathComponent(bundle)
    }

    /// What the process can say of itself.
    public static func processDevice() -> DeviceInfo {
        let info = Bundle.main.infoDictionary ?? [:]
        let v = ProcessInfo.processInfo.operatingSystemVersion
        let id = Bundle.main.bundleIdentifier ?? "app.\(ProcessInfo.processInfo.processName.filter { $0.isLetter || $0.isNumber })"
        return DeviceInfo(
            platform: .ios, osVersion: "\(v.majorVersion).\(v.minorVersion).\(v.patchVersion)", model: "unknown",
            app: .init(id: id, name: (info["CFBundleName"] as? String) ?? ProcessInfo.processInfo.processName,
                       version: (info["CFBundleShortVersionString"] as? String) ?? "0", build: info["CFBundleVersion"] as? String),
            locale: Locale.preferredLanguages.first, timezone: TimeZone.current.identifier,
            timezoneOffset: -TimeZone.current.secondsFromGMT() / 60)
    }
}
