// The app-facing API, in Castle iOS's shape: a type with static methods over one shared client.
// A Castle app changes its import, its key and adds the base URL:
//
//     import RampartSDK
//     let configuration = CastleConfiguration(publishableKey: "pk_…", baseURL: URL(string: "https://rampart.example.com")!)
//     configuration.baseURLAllowList = [URL(string: "https://api.example.com/")!]
//     Castle.configure(configuration)
//     let session = URLSession(configuration: Castle.urlSessionInterceptConfiguration())
//
// `Castle` and `CastleConfiguration` are aliases of `Rampart` and `RampartConfiguration`.
// Misuse (a call before configure, a bad argument) is logged, as Castle's are, never a crash;
// `Rampart.client` gives the throwing API.
@_exported import RampartCore
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

public typealias Castle = Rampart
public typealias CastleConfiguration = RampartConfiguration
/// Castle's request-token header (`X-Castle-Request-Token`): set `clientIdHeaderName` to it to keep a Castle backend's header.
public let CastleRequestTokenHeaderName = RampartConfiguration.castleRequestTokenHeaderName

public enum Rampart {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var shared: RampartClient?

    /// The configured client (nil before `configure`), with the throwing API.
    public static var client: RampartClient? {
        lock.lock()
        defer { lock.unlock() }
        return shared
    }

    public static func versionString() -> String { RampartSDKInfo.version }

    // MARK: Configuration

    /// Configures the shared client on this device's platform (UIKit and the Keychain on iOS).
    /// Call it once, on the main thread, in `application(_:didFinishLaunchingWithOptions:)`.
    @discardableResult
    public static func configure(_ configuration: RampartConfiguration) -> Bool {
        configure(configuration, platform: defaultPlatform())
    }

    /// Castle's `configure(withPublishableKey:)`, with the base URL Rampart needs.
    @discardableResult
    public static func configure(publishableKey: String, baseURL: URL) -> Bool {
        configure(RampartConfiguration(publishableKey: publishableKey, baseURL: baseURL))
    }

    /// Configures the shared client on a given platform (tests, app extensions, other hosts).
    @discardableResult
    public static func configure(_ configuration: RampartConfiguration, platform: RampartPlatform) -> Bool {
        if client != nil {
            platform.log("[Rampart] configure was already called; the first configuration stays")
            return false
        }
        // Configured outside the lock: reading the device may wait for the main thread, which may be reading `client`.
        let configured = RampartClient(platform: platform)
        do {
            try configured.configure(configuration)
        } catch {
            platform.log("[Rampart] \(error)")
            return false
        }
        lock.lock()
        let won = shared == nil
        if won { shared = configured }
        lock.unlock()
        guard won else {
            configured.destroy()
            platform.log("[Rampart] configure was already called; the first configuration stays")
            return false
        }
        RampartURLProtocol.rampart = configured
        return true
    }

    /// Forgets the configuration (stops the client; what it stored stays), so that `configure` can be called again.
    public static func resetConfiguration() {
        lock.lock()
        let c = shared
        shared = nil
        lock.unlock()
        if RampartURLProtocol.rampart === c { RampartURLProtocol.rampart = nil }
        c?.destroy()
    }

    /// A session configuration whose requests to allow-listed URLs carry the token header.
    public static func urlSessionInterceptConfiguration(_ base: URLSessionConfiguration = .default) -> URLSessionConfiguration {
        let c = base
        c.protocolClasses = [RampartURLProtocol.self] + (c.protocolClasses ?? [])
        return c
    }

    // MARK: Tracking

    private static func run(_ what: String, _ f: (RampartClient) throws -> Void) {
        guard let c = client else {
            NSLog("[Rampart] call configure before %@", what)
            return
        }
        do { try f(c) } catch { NSLog("[Rampart] %@", String(describing: error)) }
    }

    /// Identifies the user (kept across launches until `reset`); nil forgets the user, as `reset` does.
    public static func identify(_ userId: String?) { identify(userId, traits: nil) }

    public static func identify(_ userId: String?, traits: [String: Any]?) {
        guard let userId else { return reset() }
        run("identify") { try $0.identify(userId, traits: traits) }
    }

    /// The user signature from the app's backend (hex HMAC-SHA256 of the user id under the API secret).
    public static func secure(_ signature: String?) { run("secure") { try $0.secure(signature) } }

    /// Castle's signed user: identifies the user the JWT names.
    public static func userJwt(_ jwt: String) { run("userJwt") { try $0.userJwt(jwt) } }

    public static func screen(_ name: String) { run("screen") { try $0.screen(name) } }

    public static func custom(name: String) { custom(name: name, properties: nil) }

    public static func custom(name: String, properties: [String: Any]?) { run("custom") { try $0.custom(name: name, properties: properties) } }

    public static func flush() { run("flush") { $0.flush() } }

    public static func flushIfNeeded(_ url: URL) { run("flushIfNeeded") { $0.flushIfNeeded(url) } }

    /// Flushes, then forgets the identified user and the signature.
    public static func reset() { run("reset") { $0.reset() } }

    public static func isAllowlistURL(_ url: URL?) -> Bool { client?.isAllowlistURL(url) ?? false }

    // MARK: Metadata

    /// A fresh request token for a request to the app's API; nil until the first session is registered.
    public static func createRequestToken() -> String? { client?.createRequestToken() }

    /// A fresh request token, waiting up to 3 s for the first session.
    public static func createRequestToken(completion: @escaping (String?) -> Void) {
        guard let c = client else { return completion(nil) }
        c.createRequestToken(completion: completion)
    }

    @available(*, deprecated, message: "Use createRequestToken() instead")
    public static func clientId() -> String? { createRequestToken() }

    /// The header the token goes in (`X-Service-Client-Id` unless configured).
    public static func clientIdHeaderName() -> String { client?.clientIdHeaderName ?? RampartConfiguration.defaultClientIdHeaderName }

    /// Castle's name for the same.
    public static func requestTokenHeaderName() -> String { clientIdHeaderName() }

    public static func userId() -> String? { client?.userId }

    public static func userSignature() -> String? { client?.userSignature }

    /// `<App>/<version> (<build>; <model>; iOS <version>) rampart-ios/<version>`.
    public static func userAgent() -> String? { client?.userAgent }

    public static func queueSize() -> Int { client?.queueSize ?? 0 }

    // MARK: Platform

    static func defaultPlatform() -> RampartPlatform {
        #if canImport(UIKit) && !os(watchOS)
        return UIKitPlatform()
        #else
        return GenericPlatform()
        #endif
    }
}
