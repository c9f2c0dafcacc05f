// The client core: Castle iOS's API shape (configure, identify, secure, screen, custom, flush,
// reset, the request token and the header on allow-listed requests) over a `RampartPlatform`.
// It owns the rules of when events are queued and flushed, the user attached to them, and the
// app's lifecycle; the queue (EventQueue), the sending (Flusher), the session and tokens
// (SessionKeeper) and the allow list are its parts. No UIKit: the tests run it on Linux over a
// platform of temporary files, a fake clock and a scripted network.
//
// When events are flushed (Castle's mobile SDKs' rules, docs/mobile.md): at the app's install,
// update, open and close, at identify, when the queue reaches `flushLimit`, and when a request to
// an allow-listed URL goes out through the interceptor (Castle's `flushIfNeeded`). Never
// otherwise, except by `flush()` and `reset()`.
//
// Threading: every public method may be called from any thread. State lives on one serial queue;
// network answers and timers hop back onto it.
import Foundation

enum StorageKeys {
    static let queue = "rampart.queue"
    static let app = "rampart.app"
    static let user = "rampart.user"
    static let installId = "rampart.install_id"
    static let session = "rampart.session"
}

public enum RampartError: Error, CustomStringConvertible, Equatable {
    case notConfigured(String)
    case invalidArgument(String)
    case noSession

    public var description: String {
        switch self {
        case .notConfigured(let what): return "Rampart: call configure before \(what)"
        case .invalidArgument(let message): return "Rampart: \(message)"
        case .noSession: return "Rampart: no session could be registered (offline, or refused: see the debug log)"
        }
    }
}

/// How long the interceptor waits for a first session before sending a request without a token.
public let tokenWaitMs: Int64 = 3000
/// A token requested while there is no session starts a background registration at most this often.
let registrationRetryMs: Int64 = 10_000

private struct StoredUser: Codable {
    var id: String?
    var signature: String?
    /// The signed-user JWT (`userJwt`), for the user it names.
    var jwt: String?
}

/// The user a JWT's payload names (`id`, else `sub`), read without verifying it: Rampart verifies it.
public func userIdOfJwt(_ jwt: String) -> String? {
    guard jwt.count <= Limits.userJwtLength else { return nil }
    let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
    let b64 = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    guard parts.count == 3, parts.allSatisfy({ !$0.isEmpty && $0.unicodeScalars.allSatisfy(b64.contains) }) else { return nil }
    var text = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    while text.count % 4 != 0 { text += "=" }
    guard let data = Data(base64Encoded: text), let payload = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else { return nil }
    let named = payload["id"].flatMap { $0 is NSNull ? nil : $0 } ?? payload["sub"]
    if let id = named as? String { return !id.isEmpty && id.count <= Limits.userIdLength ? id : nil }
    if let n = named as? NSNumber, String(cString: n.objCType) != "c" {
        let d = n.doubleValue
        if d == d.rounded(), abs(d) <= 9_007_199_254_740_991 { return String(Int64(d)) }
    }
    return nil
}

private struct StoredApp: Codable {
    var version: String?
    var build: String?
}

private func isInstallId(_ s: String) -> Bool {
    (16...64).contains(s.count) && s.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || $0 == "_" || $0 == "-") }
}

private func isSignature(_ s: String) -> Bool {
    s.count == 64 && s.unicodeScalars.allSatisfy { CharacterSet(charactersIn: "0123456789abcdefABCDEF").contains($0) }
}

/// Traits as event properties: at most 20 members, strings cut to 256, numbers and booleans; anything else left out.
func toProperties(_ traits: [String: Any]?) -> EventProperties? {
    guard let traits else { return nil }
    var out: EventProperties = [:]
    for key in traits.keys.sorted() {
        if out.count >= Limits.propertiesPerEvent { break }
        if let v = PropertyValue.from(traits[key] as Any) { out[key] = v }
    }
    return out.isEmpty ? nil : out
}

/// A flag that is set once; `set()` answers whether this call set it.
final class Flag {
    private var done = false
    func set() -> Bool {
        if done { return false }
        done = true
        return true
    }
}

public final class RampartClient {
    private let platform: RampartPlatform
    let q = DispatchQueue(label: "rampart.client")
    /// Entered by every piece of background work (registrations, flushes); `idle` waits on it.
    private let work = DispatchGroup()

    private var settings: RampartConfiguration?
    /// What the interceptor reads, under a lock of its own rather than on the queue: URLSession's
    /// own work queue asks it, and must never wait behind a flush that waits for URLSession.
    private let headerLock = NSLock()
    private var allowList = try! AllowList([])
    private var headerName = RampartConfiguration.defaultClientIdHeaderName
    private var queue: EventQueue?
    private var sessions: SessionKeeper?
    private var flusher: Flusher?
    private var device: DeviceInfo?
    private var agent: String?
    private var user = StoredUser()
    /// The user id that was identified when `secure` was called (nil: before any identify).
    private var signatureFor: String?
    private var appState: AppState = .active
    private var lastScreen: String?
    private var subscriptions: [Cancellable] = []
    private var destroyed = false
    private var nextBackgroundRegistration: Int64 = 0

    public init(platform: RampartPlatform) {
        self.platform = platform
    }

    // MARK: Configuration

    /// Starts the client: reads what earlier runs stored, queues the install, update and open
    /// events, and registers a session in the background (the first flush follows it). Call it
    /// once, early, on the main thread (the platform reads the device there). Throws on a bad
    /// configuration, and when called a second time (the first configuration stays).
    public func configure(_ configuration: RampartConfiguration) throws {
        let config = configuration.copy()
        let allow = try validate(config)
        if q.sync(execute: { settings != nil }) { throw RampartConfigurationError.alreadyConfigured }
        let info = platform.deviceInfo()
        let attestation = platform.attestation()
        try q.sync {
            if settings != nil { throw RampartConfigurationError.alreadyConfigured }
            settings = config
            headerLock.lock()
            allowList = allow
            headerName = config.clientIdHeaderName
            headerLock.unlock()
            start(config, info, attestation)
        }
    }

    public var isConfigured: Bool { q.sync { settings != nil } }

    private func start(_ s: RampartConfiguration, _ info: DeviceInfo, _ attestation: Attestation?) {
        let log: (String) -> Void = { [weak self] m in self?.log(m) }
        let events = EventQueue(storage: platform.storage, key: StorageKeys.queue, max: s.maxQueueLimit, log: log)
        events.load()
        queue = events
        device = info
        let userAgent = buildUserAgent(info, sdk: RampartSDKInfo.sdk)
        agent = userAgent
        let installId = self.installId()
        let keeper = SessionKeeper(platform: platform, queue: q, endpoint: s.baseURL, publishableKey: s.publishableKey, storageKey: StorageKeys.session,
                                   components: {
                                       buildComponents(info, ComponentOptions(installId: installId, sdk: RampartSDKInfo.sdk, userAgent: userAgent,
                                                                              forwardDeviceId: s.deviceIDAutoForwardingEnabled, attestation: attestation))
                                   }, log: log)
        keeper.load()
        sessions = keeper
        flusher = Flusher(platform: platform, queue: q, events: events, sessions: keeper, endpoint: s.baseURL, publishableKey: s.publishableKey, work: work, log: log)
        loadUser()

        appState = platform.appState.current
        subscriptions.append(platform.appState.subscribe { [weak self] state in
            guard let self else { return }
            self.q.async { self.onAppState(state) }
        })
        if s.screenTrackingEnabled {
            if let screens = platform.screens {
                subscriptions.append(screens.subscribe { [weak self] name in
                    guard let self else { return }
                    self.q.async { self.onScreen(name) }
                })
            } else {
                log("screen tracking is on but the platform has no screen source")
            }
        }

        let lifecycle = lifecycleAtLaunch(s, info)
        let open = appState == .active
        if open && s.lifecycleTrackingEnabled { enqueue(.appOpened) }
        // A launch in the foreground is an open: a session older than an hour is replaced.
        // One registration attempt per trigger: when it fails, the events wait for the next one.
        ensureSession(maxAgeMs: open ? sessionRefreshMs : nil) { [weak self] ok in
            if ok && (lifecycle || open) { self?.flushNow() }
        }
    }

    /// Queues `app_installed` or `app_updated` when this launch is the first, or the first of a new version; true when it did.
    private func lifecycleAtLaunch(_ s: RampartConfiguration, _ info: DeviceInfo) -> Bool {
        let previous = platform.storage.get(StorageKeys.app).flatMap { try? JSONDecoder().decode(StoredApp.self, from: Data($0.utf8)) }
        var properties: EventProperties = ["version": .string(String(info.app.version.prefix(Limits.propertyStringLength)))]
        if let b = info.app.build, !b.isEmpty { properties["build"] = .string(String(b.prefix(Limits.propertyStringLength))) }
        var queued = false
        if previous == nil {
            if s.lifecycleTrackingEnabled { enqueue(.appInstalled, properties: properties) }
            queued = s.lifecycleTrackingEnabled
        } else if previous?.version != info.app.version {
            if let v = previous?.version { properties["previous_version"] = .string(String(v.prefix(Limits.propertyStringLength))) }
            if let b = previous?.build { properties["previous_build"] = .string(String(b.prefix(Limits.propertyStringLength))) }
            if s.lifecycleTrackingEnabled { enqueue(.appUpdated, properties: properties) }
            queued = s.lifecycleTrackingEnabled
        }
        // Stored even with lifecycle tracking off, so that turning it on later is not taken for an install.
        if previous == nil || previous?.version != info.app.version || previous?.build != info.app.build {
            if let data = try? JSONEncoder().encode(StoredApp(version: info.app.version, build: info.app.build)) {
                do { try platform.storage.set(StorageKeys.app, String(decoding: data, as: UTF8.self)) } catch { log("the app version could not be stored") }
            }
        }
        return queued
    }

    private func onAppState(_ state: AppState) {
        guard let s = settings, !destroyed, state != appState else { return }
        appState = state
        if state == .active {
            if s.lifecycleTrackingEnabled { enqueue(.appOpened) }
            ensureSession(maxAgeMs: sessionRefreshMs) { [weak self] ok in
                if ok { self?.flushNow() }
            }
        } else {
            if s.lifecycleTrackingEnabled { enqueue(.appClosed) }
            // The app may be suspended at any moment: what is not sent now stays stored for the next open.
            flushNow()
        }
    }

    private func onScreen(_ name: String) {
        guard !name.isEmpty, name != lastScreen, settings != nil, !destroyed else { return }
        lastScreen = name
        enqueue(.screen, name: String(name.prefix(Limits.nameLength)))
    }

    /// Registers a session if needed; calls back with false when that failed (logged), which only postpones it. On the queue.
    private func ensureSession(maxAgeMs: Int64? = nil, _ then: @escaping (Bool) -> Void) {
        guard let sessions else { return then(false) }
        work.enter()
        sessions.ensure(maxAgeMs: maxAgeMs) { [weak self] result in
            if case .failure = result { self?.log("no session for now; it will be registered again at the next trigger or token") }
            if case .success = result { then(true) } else { then(false) }
            self?.work.leave()
        }
    }

    private func flushNow(_ done: (() -> Void)? = nil) {
        guard let flusher else {
            done?()
            return
        }
        flusher.flush(done)
    }

    /// Queues an event with the identified user, and flushes when the queue reaches the flush limit. On the queue.
    private func enqueue(_ type: AppEventType, name: String? = nil, properties: EventProperties? = nil) {
        guard let queue, let s = settings, !destroyed else { return }
        queue.push(type: type, name: name, userId: user.id, userSignature: user.id != nil ? user.signature : nil,
                   userJwt: type == .identify && user.id != nil ? user.jwt : nil,
                   properties: properties, at: platform.clock.now(), offset: sessions?.offset)
        log("queued \(type.rawValue) (\(queue.count) queued)")
        if queue.count >= s.flushLimit { flushNow() }
    }

    private func requireConfigured(_ what: String) throws {
        if settings == nil { throw RampartError.notConfigured(what) }
    }

    // MARK: Events

    /// Attaches `userId` to this and every later event, queues an `identify` and flushes.
    public func identify(_ userId: String, traits: [String: Any]? = nil) throws {
        guard !userId.isEmpty, userId.count <= Limits.userIdLength else {
            throw RampartError.invalidArgument("identify needs a user id of 1 to \(Limits.userIdLength) characters")
        }
        try q.sync {
            try requireConfigured("identify")
            // A signature given for another user must not travel with this one's events; one given
            // before any identify is taken to be for the user identified next.
            let keep = user.signature != nil && (signatureFor == nil || signatureFor == userId)
            user = StoredUser(id: userId, signature: keep ? user.signature : nil, jwt: user.id == userId ? user.jwt : nil)
            signatureFor = keep ? userId : nil
            saveUser()
            enqueue(.identify, properties: toProperties(traits))
            flushNow()
        }
    }

    /// The user signature from the app's backend (hex HMAC-SHA256 of the user id under the API
    /// secret): later events of that user carry it, and its identify is `verified`. nil removes it.
    public func secure(_ userSignature: String?) throws {
        if let sig = userSignature, !isSignature(sig) {
            throw RampartError.invalidArgument("secure needs the 64-character hex HMAC-SHA256 of the user id")
        }
        try q.sync {
            try requireConfigured("secure")
            user.signature = userSignature?.lowercased()
            signatureFor = userSignature == nil ? nil : user.id
            saveUser()
        }
    }

    /// Castle's signed-user form: identifies the user the JWT names (`id`, else `sub`) with an
    /// identify that carries the JWT, and flushes. The app's backend signs it with the
    /// environment's API secret (HS256); Rampart verifies it and counts the identify `verified`.
    public func userJwt(_ jwt: String) throws {
        guard let userId = userIdOfJwt(jwt) else {
            throw RampartError.invalidArgument("userJwt needs a JWT (at most \(Limits.userJwtLength) characters) whose payload names the user as id or sub")
        }
        try q.sync {
            try requireConfigured("userJwt")
            user = StoredUser(id: userId, signature: nil, jwt: jwt)
            signatureFor = nil
            saveUser()
            enqueue(.identify)
            flushNow()
        }
    }

    /// Queues a screen view (names are cut to 128 characters).
    public func screen(_ name: String) throws {
        guard !name.isEmpty else { throw RampartError.invalidArgument("screen needs a name") }
        try q.sync {
            try requireConfigured("screen")
            lastScreen = name
            enqueue(.screen, name: String(name.prefix(Limits.nameLength)))
        }
    }

    /// Queues a named event of the app's own, with optional properties (at most 20; strings, numbers, booleans).
    public func custom(name: String, properties: [String: Any]? = nil) throws {
        guard !name.isEmpty else { throw RampartError.invalidArgument("custom needs a name") }
        try q.sync {
            try requireConfigured("custom")
            enqueue(.custom, name: String(name.prefix(Limits.nameLength)), properties: toProperties(properties))
        }
    }

    /// Sends what is queued now (joins a flush under way). Failures keep the events; `completion` runs when it ends.
    public func flush(completion: (() -> Void)? = nil) {
        q.async { [self] in
            guard settings != nil else {
                log("flush called before configure")
                if let completion { DispatchQueue.global().async(execute: completion) }
                return
            }
            // Never on the client's queue: a completion may call the client again.
            flushNow { if let completion { DispatchQueue.global().async(execute: completion) } }
        }
    }

    /// Flushes when `url` is under the allow list (what the interceptor does for each request it sends).
    public func flushIfNeeded(_ url: URL) {
        if isAllowlistURL(url) { q.async { [self] in if (queue?.count ?? 0) > 0 { flushNow() } } }
    }

    /// Flushes, then forgets the identified user and the signature (at logout).
    public func reset() {
        q.async { [self] in
            guard settings != nil else { return }
            flushNow()
            user = StoredUser()
            signatureFor = nil
            platform.storage.remove(StorageKeys.user)
        }
    }

    public var queueSize: Int { q.sync { queue?.count ?? 0 } }

    public var userId: String? { q.sync { user.id } }

    public var userSignature: String? { q.sync { user.signature } }

    // MARK: Tokens and the header

    public func isAllowlistURL(_ url: URL?) -> Bool {
        guard let url else { return false }
        headerLock.lock()
        defer { headerLock.unlock() }
        return allowList.allows(url)
    }

    public var clientIdHeaderName: String {
        headerLock.lock()
        defer { headerLock.unlock() }
        return headerName
    }

    /// `<App>/<version> (<build>; <model>; iOS <version>) rampart-ios/<version>`, once configured.
    public var userAgent: String? { q.sync { agent } }

    /// A fresh request token, at once, when a session exists; else nil (and a session is
    /// registered in the background, so that a later call has one).
    public func createRequestToken() -> String? {
        q.sync { tokenNow() }
    }

    private func tokenNow() -> String? {
        guard let sessions, !destroyed else { return nil }
        if let token = sessions.mint() { return token }
        // Registers in the background, at most every registrationRetryMs: an app offline calls this per request.
        let now = platform.clock.now()
        if now >= nextBackgroundRegistration {
            nextBackgroundRegistration = now + registrationRetryMs
            ensureSession { _ in }
        }
        return nil
    }

    /// A fresh request token, registering a session first when needed; nil when none could be had
    /// within `timeoutMs`. `completion` runs on any thread.
    public func createRequestToken(timeoutMs: Int64 = tokenWaitMs, completion answer: @escaping (String?) -> Void) {
        // Never on the client's queue: a completion may call the client again.
        let completion: (String?) -> Void = { token in DispatchQueue.global().async { answer(token) } }
        q.async { [self] in
            guard let sessions, !destroyed else { return completion(nil) }
            if let token = sessions.mint() { return completion(token) }
            // Whichever comes first, the session or the deadline, answers; both run on the queue.
            let answered = Flag()
            let timer = platform.clock.schedule(afterMs: timeoutMs) { [weak self] in
                self?.q.async {
                    if answered.set() { completion(nil) }
                }
            }
            ensureSession { [weak self] ok in
                guard answered.set() else { return }
                timer.cancel()
                completion(ok ? self?.sessions?.mint() : nil)
            }
        }
    }

    // MARK: Housekeeping

    /// Waits until the work started so far (registration, flushes) is done; false on timeout. For tests and a clean shutdown.
    @discardableResult
    public func idle(timeout: TimeInterval = 60) -> Bool {
        let deadline = DispatchTime.now() + timeout
        q.sync {}
        return work.wait(timeout: deadline) == .success
    }

    /// Stops listening to the app state and the screens and stops the timers. Storage is kept.
    public func destroy() {
        q.sync {
            destroyed = true
            subscriptions.forEach { $0.cancel() }
            subscriptions = []
            flusher?.stop()
        }
    }

    // MARK: Storage

    /// The install id: random, made once, kept in secure storage (the Keychain survives a reinstall).
    private func installId() -> String {
        if let stored = platform.secureStorage.get(StorageKeys.installId), isInstallId(stored) { return stored }
        let id = RampartCrypto.base64URL(platform.randomBytes(16))
        do { try platform.secureStorage.set(StorageKeys.installId, id) } catch { log("the install id could not be stored; a new one is made at the next launch") }
        return id
    }

    private func loadUser() {
        guard let raw = platform.storage.get(StorageKeys.user) else { return }
        guard let u = try? JSONDecoder().decode(StoredUser.self, from: Data(raw.utf8)) else {
            log("the identified user could not be read from storage")
            return
        }
        let signature = u.signature.flatMap { isSignature($0) ? $0 : nil }
        let jwt = u.jwt.flatMap { userIdOfJwt($0) == u.id ? $0 : nil }
        user = StoredUser(id: u.id, signature: signature, jwt: jwt)
        signatureFor = signature != nil ? u.id : nil
    }

    private func saveUser() {
        guard let data = try? JSONEncoder().encode(user) else { return }
        do { try platform.storage.set(StorageKeys.user, String(decoding: data, as: UTF8.self)) } catch { log("the identified user could not be stored") }
    }

    private func log(_ message: String) {
        if settings?.debugLoggingEnabled == true { platform.log("[Rampart] \(message)") }
    }
}
