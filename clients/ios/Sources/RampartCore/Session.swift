// The device's session with Rampart and the request tokens minted from it (docs/mobile.md §1-2).
// A session is registered at `POST /v1/client/token`; it holds the signed session, the HMAC key
// for the tokens, when it was issued and expires (in Rampart's clock), and the offset between
// Rampart's clock and the device's, so that tokens and events are stamped in Rampart's time even
// when the phone's clock is wrong. It is kept in secure storage (the key signs tokens) and reused
// across restarts until it expires or, at an open, is more than an hour old.
//
// One registration at a time: every caller waiting for a session shares the one in flight.
// Not thread-safe: used on the client's serial queue, and answers on it.
import Foundation

public struct Session: Codable, Equatable {
    /// `rps1.<claims>.<mac>`.
    public var session: String
    /// The token HMAC key: never logged, never sent.
    public var key: String
    /// Issued at, Rampart's clock (ms).
    public var registeredAt: Int64
    /// Expires at, Rampart's clock (ms).
    public var expiresAt: Int64
    /// Rampart's clock minus the device's, when it was issued (ms).
    public var offset: Int64
}

/// At an open, a session older than this is replaced (docs/mobile.md).
public let sessionRefreshMs: Int64 = 3_600_000
/// A token is accepted for five minutes: a session closer than that to its end mints none.
let tokenTTLMs: Int64 = 300_000
/// A session issued further ahead than this of the device's idea of Rampart's clock means the clock moved back.
let clockBackMs: Int64 = 60_000

/// An answer from Rampart that is not a success: the status and the error type, never a secret.
public struct RampartHTTPError: Error, CustomStringConvertible {
    public let status: Int
    public let type: String?
    public let fields: [String]
    public let description: String
}

/// The error type and a loggable description of a failed answer (field names, no values).
func describeError(status: Int, body: Data) -> RampartHTTPError {
    let e = try? JSONDecoder().decode(ErrorBody.self, from: body)
    let fields = (e?.fields ?? []).compactMap(\.field)
    let detail = (e?.fields ?? []).map { "\($0.field ?? "?"): \($0.message ?? "")" }.joined(separator: "; ")
    var message = "Rampart answered \(status)"
    if let t = e?.type { message += " \(t)" }
    if !detail.isEmpty { message += " (\(detail))" }
    return RampartHTTPError(status: status, type: e?.type, fields: fields, description: message)
}

/// POSTs `body` as JSON.
func postJSON<T: Encodable>(_ platform: RampartPlatform, _ url: URL, _ body: T, completion: @escaping (Result<HTTPResponse, Error>) -> Void) {
    let data: Data
    do {
        data = try JSONEncoder().encode(body)
    } catch {
        return completion(.failure(error))
    }
    platform.transport.post(url, headers: ["Content-Type": "application/json", "Accept": "application/json"], body: data, completion: completion)
}

public final class SessionKeeper {
    private(set) var current: Session?
    private var waiters: [(Result<Session, Error>) -> Void] = []
    private let platform: RampartPlatform
    private let queue: DispatchQueue
    private let endpoint: URL
    private let publishableKey: String
    private let storageKey: String
    private let components: () -> MobileComponents
    private let log: (String) -> Void

    init(platform: RampartPlatform, queue: DispatchQueue, endpoint: URL, publishableKey: String, storageKey: String,
         components: @escaping () -> MobileComponents, log: @escaping (String) -> Void) {
        self.platform = platform
        self.queue = queue
        self.endpoint = endpoint
        self.publishableKey = publishableKey
        self.storageKey = storageKey
        self.components = components
        self.log = log
    }

    /// Takes up the session an earlier run stored, if any.
    func load() {
        guard let raw = platform.secureStorage.get(storageKey) else { return }
        if let s = try? JSONDecoder().decode(Session.self, from: Data(raw.utf8)), s.session.hasPrefix(WirePrefix.session), !s.key.isEmpty {
            current = s
        } else {
            log("the stored session could not be read; a new one will be registered")
        }
    }

    /// Rampart's clock minus the device's, or nil before any session.
    var offset: Int64? { current?.offset }

    /// Now in Rampart's clock (the device's when no session has told the offset yet).
    func serverNow() -> Int64 { platform.clock.now() + (offset ?? 0) }

    /// Whether `s` can mint a token that is still good when the server sees it.
    private func usable(_ s: Session?) -> Session? {
        guard let s, s.expiresAt - serverNow() >= tokenTTLMs else { return nil }
        return s
    }

    /// The current session, registering one first when there is none, it has expired, or is older than `maxAgeMs`.
    func ensure(maxAgeMs: Int64? = nil, _ done: @escaping (Result<Session, Error>) -> Void) {
        if let s = usable(current) {
            let age = serverNow() - s.registeredAt
            if maxAgeMs == nil || (age <= maxAgeMs! && age >= -clockBackMs) { return done(.success(s)) }
        }
        register(done)
    }

    /// A new session after the server refused `stale`, unless another caller already replaced it.
    func renew(_ stale: Session, _ done: @escaping (Result<Session, Error>) -> Void) {
        if let s = usable(current), s != stale { return done(.success(s)) }
        if current == stale { current = nil }
        register(done)
    }

    /// A fresh token from the current session, or nil when there is none usable.
    func mint() -> String? {
        usable(current).map(mint(from:))
    }

    /// `rpm1.<claims>.<session mac>.<t>.<nonce>.<mac>`: t in Rampart's clock, a new 22-character
    /// nonce each time, and the MAC of everything before the last dot under the session key.
    func mint(from s: Session) -> String {
        mintToken(session: s.session, key: s.key, t: tokenTime(deviceTimeMs: Double(platform.clock.now()), offsetMs: s.offset),
                  nonce: RampartCrypto.base64URL(platform.randomBytes(16)))
    }

    /// Forgets the session (memory and storage).
    func clear() {
        current = nil
        platform.secureStorage.remove(storageKey)
    }

    private func register(_ done: @escaping (Result<Session, Error>) -> Void) {
        waiters.append(done)
        if waiters.count > 1 { return }
        let body = RegisterRequest(publishable_key: publishableKey, mobile: components())
        log("registering a session")
        let sentAt = platform.clock.now()
        postJSON(platform, endpoint.appendingPathComponent("v1/client/token"), body) { [weak self] result in
            guard let self else { return }
            self.queue.async { self.registered(result, sentAt: sentAt) }
        }
    }

    private func registered(_ result: Result<HTTPResponse, Error>, sentAt: Int64) {
        let outcome: Result<Session, Error>
        switch result {
        case .failure(let error):
            log("session registration failed: no answer")
            outcome = .failure(error)
        case .success(let res) where res.status != 201 && res.status != 200:
            let e = describeError(status: res.status, body: res.body)
            log("session registration failed: \(e.description)")
            outcome = .failure(e)
        case .success(let res):
            if let s = parseRegistration(res.body) {
                current = s
                log("session registered (expires at \(s.expiresAt), clock offset \(s.offset) ms)")
                if let data = try? JSONEncoder().encode(s) {
                    do { try platform.secureStorage.set(storageKey, String(decoding: data, as: UTF8.self)) } catch { log("the session could not be stored; it is kept in memory") }
                }
                outcome = .success(s)
            } else {
                log("session registration answered without a session")
                outcome = .failure(RampartHTTPError(status: res.status, type: nil, fields: [], description: "Rampart: the collector answered without a session"))
            }
        }
        let ws = waiters
        waiters = []
        ws.forEach { $0(outcome) }
    }

    private func parseRegistration(_ body: Data) -> Session? {
        guard let o = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any],
              let session = o["session"] as? String, session.hasPrefix(WirePrefix.session),
              let key = o["session_key"] as? String, !key.isEmpty,
              let expiresIn = (o["session_expires_in"] as? NSNumber)?.doubleValue,
              let serverTime = (o["server_time"] as? NSNumber)?.doubleValue, serverTime.isFinite, expiresIn.isFinite
        else { return nil }
        let t = Int64(serverTime)
        return Session(session: session, key: key, registeredAt: t, expiresAt: t + Int64(expiresIn * 1000), offset: t - platform.clock.now())
    }
}

/// A token's `t`: the device's time plus the clock offset, in whole milliseconds (rounded down).
public func tokenTime(deviceTimeMs: Double, offsetMs: Int64) -> Int64 {
    Int64((deviceTimeMs + Double(offsetMs)).rounded(.down))
}

/// The request token for a session, at time `t` (Rampart's clock, ms) with `nonce` (docs/mobile.md §2).
public func mintToken(session: String, key: String, t: Int64, nonce: String) -> String {
    let claims = session.hasPrefix(WirePrefix.session) ? String(session.dropFirst(WirePrefix.session.count)) : session
    let signed = "\(WirePrefix.mobileToken)\(claims).\(t).\(nonce)"
    return "\(signed).\(RampartCrypto.hmacSHA256Base64URL(key: key, message: signed))"
}
