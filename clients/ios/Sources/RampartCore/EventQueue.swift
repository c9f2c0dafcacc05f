// The event queue: bounded, oldest dropped first, written to the app's private storage (a file)
// on every change, so that events survive the process being killed (an `app_closed` is often the
// last thing an app does before it is suspended). It knows nothing of when or how events are
// sent: the Flusher decides that. Not thread-safe: the client uses it on its own serial queue.
//
// An event keeps the device time it happened at and the clock offset known then; when no session
// had given an offset yet (an install is queued before the first registration answers), the
// offset known when it is sent is used, so every timestamp goes out in Rampart's clock.
import Foundation

public struct QueuedEvent: Codable, Equatable {
    /// Unique within the queue: events leave it by id, since it may shift while a batch is out.
    public var id: Int
    public var type: AppEventType
    public var name: String?
    public var user_id: String?
    public var user_signature: String?
    /// The signed-user JWT, on an identify only.
    public var user_jwt: String?
    public var properties: EventProperties?
    /// Device time, ms since the epoch.
    public var at: Int64
    /// Server time minus device time when queued, or nil when not yet known.
    public var offset: Int64?

    /// The wire form, stamped in Rampart's clock.
    public func wire(currentOffset: Int64?) -> AppEvent {
        AppEvent(type: type, timestamp: isoTimestamp(ms: at + (offset ?? currentOffset ?? 0)), name: name, user_id: user_id,
                 user_signature: user_signature, user_jwt: user_jwt, properties: properties)
    }
}

public final class EventQueue {
    private(set) var events: [QueuedEvent] = []
    private var nextId = 1
    private let storage: KeyValueStorage
    private let key: String
    private let max: Int
    private let log: (String) -> Void

    public init(storage: KeyValueStorage, key: String, max: Int, log: @escaping (String) -> Void) {
        self.storage = storage
        self.key = key
        self.max = max
        self.log = log
    }

    /// Reads what an earlier run left.
    public func load() {
        guard let raw = storage.get(key) else { return }
        guard let data = raw.data(using: .utf8), let stored = try? JSONDecoder().decode([QueuedEvent].self, from: data) else {
            log("the stored queue could not be read; starting empty")
            return
        }
        events = stored
        nextId = (stored.map(\.id).max() ?? 0) + 1
        trim()
    }

    public var count: Int { events.count }

    public func push(type: AppEventType, name: String? = nil, userId: String? = nil, userSignature: String? = nil, userJwt: String? = nil,
                     properties: EventProperties? = nil, at: Int64, offset: Int64?) {
        events.append(QueuedEvent(id: nextId, type: type, name: name, user_id: userId, user_signature: userSignature,
                                  user_jwt: userJwt, properties: properties, at: at, offset: offset))
        nextId += 1
        trim()
        persist()
    }

    /// The oldest `n` events (not removed: they leave only when the server took them).
    public func peek(_ n: Int) -> [QueuedEvent] { Array(events.prefix(n)) }

    public func remove(ids: Set<Int>) {
        let before = events.count
        events.removeAll { ids.contains($0.id) }
        if events.count != before { persist() }
    }

    public func clear() {
        events.removeAll()
        persist()
    }

    private func persist() {
        do {
            let data = try JSONEncoder().encode(events)
            try storage.set(key, String(decoding: data, as: UTF8.self))
        } catch {
            log("the queue could not be stored")
        }
    }

    private func trim() {
        let over = events.count - max
        if over > 0 {
            events.removeFirst(over)
            log("dropped the \(over) oldest event(s): the queue is over its limit of \(max)")
        }
    }
}
