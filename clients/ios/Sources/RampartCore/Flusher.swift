// Sends the queue to `POST /v1/client/events` (docs/mobile.md §3), one request at a time, in
// batches of at most 100, oldest first, until the queue is empty or a request fails. What the
// answer means for the batch:
//
// - 202: the events leave the queue;
// - no answer (offline, or none within 30 s) or 5xx: they stay, for the next trigger;
// - 429: they stay, and nothing is sent before `Retry-After` (a timer flushes then);
// - 422 `invalid_request_token` (the session expired or does not verify): one new session and
//   one retry; if that is refused too, they stay;
// - 422 naming events (`events.3.type`): those events are dropped (resending them unchanged can
//   never succeed, e.g. a `custom` event on a Rampart that does not take them) and the rest goes on;
// - any other 4xx: the batch is dropped, since a batch that blocks the head of the queue would
//   block every event behind it.
//
// The flusher decides nothing about when to flush: the client calls `flush` on its triggers.
// Not thread-safe: used on the client's serial queue.
import Foundation

/// Without a usable Retry-After, wait this long after a 429; and never longer than the maximum.
let defaultRetryAfterMs: Int64 = 60_000
let maxRetryAfterMs: Int64 = 3_600_000

func retryAfterMs(_ header: String?, now: Int64) -> Int64 {
    if let h = header?.trimmingCharacters(in: .whitespaces), !h.isEmpty {
        if let seconds = Double(h), seconds.isFinite, seconds >= 0 { return min(Int64(seconds * 1000), maxRetryAfterMs) }
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "GMT")
        f.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        if let d = f.date(from: h) { return min(max(Int64(d.timeIntervalSince1970 * 1000) - now, 0), maxRetryAfterMs) }
    }
    return defaultRetryAfterMs
}

final class Flusher {
    private enum Outcome {
        case accepted, retryLater, rateLimited, sessionRefused, rejected
        /// Only these events were refused.
        case rejectedEvents(Set<Int>)
    }

    private let platform: RampartPlatform
    private let queue: DispatchQueue
    private let events: EventQueue
    private let sessions: SessionKeeper
    private let endpoint: URL
    private let publishableKey: String
    private let log: (String) -> Void
    private var waiters: [() -> Void] = []
    private(set) var running = false
    private var blockedUntil: Int64 = 0
    private var timer: Cancellable?
    private var stopped = false
    /// Entered while a flush runs (idle() waits on it).
    private let work: DispatchGroup

    init(platform: RampartPlatform, queue: DispatchQueue, events: EventQueue, sessions: SessionKeeper, endpoint: URL,
         publishableKey: String, work: DispatchGroup, log: @escaping (String) -> Void) {
        self.platform = platform
        self.queue = queue
        self.events = events
        self.sessions = sessions
        self.endpoint = endpoint
        self.publishableKey = publishableKey
        self.work = work
        self.log = log
    }

    /// Sends what is queued; while a flush runs, a call joins it (it sends what was queued meanwhile too).
    func flush(_ done: (() -> Void)? = nil) {
        if stopped {
            done?()
            return
        }
        if let done { waiters.append(done) }
        if running { return }
        running = true
        work.enter()
        drain()
    }

    func stop() {
        stopped = true
        timer?.cancel()
        timer = nil
    }

    private func finish() {
        running = false
        let ws = waiters
        waiters = []
        ws.forEach { $0() }
        work.leave()
    }

    private func drain() {
        guard !stopped, platform.clock.now() >= blockedUntil else { return finish() }
        let batch = events.peek(Limits.eventsPerRequest)
        if batch.isEmpty { return finish() }
        sendBatch(batch) { [weak self] goOn in
            guard let self else { return }
            if goOn { self.drain() } else { self.finish() }
        }
    }

    /// Sends one batch; calls back with true when the flush may go on with the next.
    private func sendBatch(_ batch: [QueuedEvent], _ done: @escaping (Bool) -> Void) {
        sessions.ensure { [weak self] result in
            guard let self else { return }
            guard case .success(let session) = result else {
                self.log("no session: \(batch.count) event(s) kept for the next flush")
                return done(false)
            }
            self.post(session, batch) { outcome in
                guard case .sessionRefused = outcome else { return done(self.settle(batch, outcome)) }
                self.log("the session was refused (invalid_request_token): registering again and retrying once")
                self.sessions.renew(session) { renewed in
                    guard case .success(let fresh) = renewed else {
                        self.log("no new session: \(batch.count) event(s) kept for the next flush")
                        return done(false)
                    }
                    self.post(fresh, batch) { done(self.settle(batch, $0)) }
                }
            }
        }
    }

    private func settle(_ batch: [QueuedEvent], _ outcome: Outcome) -> Bool {
        switch outcome {
        case .accepted:
            events.remove(ids: Set(batch.map(\.id)))
            log("sent \(batch.count) event(s)")
            return true
        case .rejected:
            events.remove(ids: Set(batch.map(\.id)))
            return true
        case .rejectedEvents(let ids):
            events.remove(ids: ids)
            return true
        case .sessionRefused:
            log("the new session was refused too: \(batch.count) event(s) kept for the next flush")
            return false
        case .rateLimited, .retryLater:
            return false
        }
    }

    private func post(_ session: Session, _ batch: [QueuedEvent], _ done: @escaping (Outcome) -> Void) {
        let body = EventsRequest(publishable_key: publishableKey, session: session.session, events: batch.map { $0.wire(currentOffset: session.offset) })
        postJSON(platform, endpoint.appendingPathComponent("v1/client/events"), body) { [weak self] result in
            guard let self else { return }
            self.queue.async { done(self.outcome(result, batch)) }
        }
    }

    private func outcome(_ result: Result<HTTPResponse, Error>, _ batch: [QueuedEvent]) -> Outcome {
        guard case .success(let res) = result else {
            log("network error or no answer: \(batch.count) event(s) kept for the next flush")
            return .retryLater
        }
        if res.status == 202 || res.status == 200 { return .accepted }
        if res.status >= 500 {
            log("Rampart answered \(res.status): \(batch.count) event(s) kept for the next flush")
            return .retryLater
        }
        if res.status == 429 {
            let wait = retryAfterMs(res.headers["retry-after"], now: platform.clock.now())
            block(wait)
            log("rate limited: \(batch.count) event(s) kept, next flush in \(wait / 1000) s")
            return .rateLimited
        }
        let e = describeError(status: res.status, body: res.body)
        if res.status == 422 && e.type == "invalid_request_token" { return .sessionRefused }
        if res.status == 422, !e.fields.isEmpty {
            // `events.<i>.<member>`: only those events are at fault.
            var indexes = Set<Int>()
            for f in e.fields {
                let parts = f.split(separator: ".")
                guard parts.count >= 2, parts[0] == "events", let i = Int(parts[1]), batch.indices.contains(i) else { indexes = []; break }
                indexes.insert(i)
            }
            if !indexes.isEmpty {
                log("\(e.description): \(indexes.count) event(s) dropped (the server will never accept them)")
                return .rejectedEvents(Set(indexes.map { batch[$0].id }))
            }
        }
        log("\(e.description): \(batch.count) event(s) dropped (the server will never accept them)")
        return .rejected
    }

    /// No flush before `ms` from now; one flush then.
    private func block(_ ms: Int64) {
        blockedUntil = platform.clock.now() + ms
        timer?.cancel()
        timer = platform.clock.schedule(afterMs: ms) { [weak self] in
            guard let self else { return }
            self.queue.async {
                self.timer = nil
                self.flush()
            }
        }
    }
}
