package dev.rampart.android

import org.json.JSONArray
import org.json.JSONObject

/**
 * Sends the queue to `POST /v1/client/events` (docs/mobile.md §3) in batches of at most 100,
 * oldest first, until the queue is empty or a request fails. Runs on the client's one worker
 * thread, so one flush runs at a time. What the answer means for the batch:
 *
 * - 202: the events leave the queue;
 * - no answer (offline, or none in time) or 5xx: they stay, for the next trigger;
 * - 429: they stay, and nothing is sent before `Retry-After` (the client flushes then);
 * - 422 `invalid_request_token` (the session expired or does not verify): one new session and
 *   one retry; if that is refused too, they stay;
 * - 422 naming events (`events.3.type`): those events are dropped and the rest sent again, so
 *   that one event the server cannot take (a newer event type, say) never costs the others;
 * - any other 4xx: the batch is dropped, since resending it unchanged can never succeed.
 */
internal class Flusher(
    private val platform: Platform,
    private val queue: EventQueue,
    private val sessions: SessionKeeper,
    private val endpoint: String,
    private val publishableKey: String,
    private val log: (String) -> Unit,
    /** Called with the delay after a 429, so that the client flushes again then. */
    private val retryAt: (Long) -> Unit,
) {
    private var blockedUntil = 0L

    private sealed class Outcome {
        object Accepted : Outcome()
        object RetryLater : Outcome()
        object SessionRefused : Outcome()
        object Rejected : Outcome()
        class BadEvents(val indexes: Set<Int>) : Outcome()
    }

    fun flush() {
        while (platform.now() >= blockedUntil) {
            val batch = queue.peek(Wire.EVENTS_PER_REQUEST)
            if (batch.isEmpty() || !sendBatch(batch)) return
        }
    }

    /** Sends one batch; true when the flush may go on with the next. */
    private fun sendBatch(first: List<QueuedEvent>): Boolean {
        var batch = first
        var session = try {
            sessions.ensure()
        } catch (e: Exception) {
            log("no session: ${batch.size} event(s) kept for the next flush")
            return false
        }
        var renewed = false
        // A batch is sent at most a few times: after a new session, and after dropping bad events.
        repeat(4) {
            when (val outcome = post(session, batch)) {
                Outcome.Accepted -> {
                    queue.remove(batch.map { it.id }.toSet())
                    log("sent ${batch.size} event(s)")
                    return true
                }
                Outcome.Rejected -> {
                    queue.remove(batch.map { it.id }.toSet())
                    return true
                }
                Outcome.RetryLater -> return false
                Outcome.SessionRefused -> {
                    if (renewed) {
                        log("the new session was refused too: ${batch.size} event(s) kept for the next flush")
                        return false
                    }
                    renewed = true
                    log("the session was refused (invalid_request_token): registering again and retrying once")
                    session = try {
                        sessions.renew(session)
                    } catch (e: Exception) {
                        log("no new session: ${batch.size} event(s) kept for the next flush")
                        return false
                    }
                }
                is Outcome.BadEvents -> {
                    val bad = batch.filterIndexed { i, _ -> i in outcome.indexes }
                    queue.remove(bad.map { it.id }.toSet())
                    log("dropped ${bad.size} event(s) the server refused (${bad.joinToString { it.type }})")
                    batch = batch.filterIndexed { i, _ -> i !in outcome.indexes }
                    if (batch.isEmpty()) return true
                }
            }
        }
        return false
    }

    private fun post(session: SessionKeeper.Session, batch: List<QueuedEvent>): Outcome {
        val body = JSONObject()
            .put("publishable_key", publishableKey)
            .put("session", session.session)
            .put("events", JSONArray(batch.map { it.toWire(session.offset) }))
        val res = try {
            platform.postJson("$endpoint${Wire.EVENTS_PATH}", body.toString())
        } catch (e: Exception) {
            log("network error or no answer: ${batch.size} event(s) kept for the next flush")
            return Outcome.RetryLater
        }
        if (res.status == 202 || res.status == 200) return Outcome.Accepted
        if (res.status >= 500) {
            log("Rampart answered ${res.status}: ${batch.size} event(s) kept for the next flush")
            return Outcome.RetryLater
        }
        if (res.status == 429) {
            val wait = retryAfterMs(res.header("Retry-After"))
            blockedUntil = platform.now() + wait
            retryAt(wait)
            log("rate limited: ${batch.size} event(s) kept, next flush in ${wait / 1000} s")
            return Outcome.RetryLater
        }
        val answer = try { JSONObject(res.body) } catch (e: Exception) { null }
        val (type, message) = SessionKeeper.describeError(res.status, answer)
        if (res.status == 422 && type == "invalid_request_token") return Outcome.SessionRefused
        if (res.status == 422) {
            val indexes = badEventIndexes(answer, batch.size)
            if (indexes.isNotEmpty()) return Outcome.BadEvents(indexes)
        }
        log("$message: ${batch.size} event(s) dropped (the server will never accept them)")
        return Outcome.Rejected
    }

    /** The events a 422 names (`events.<i>…`); empty when it names anything else too. */
    private fun badEventIndexes(answer: JSONObject?, size: Int): Set<Int> {
        val fields = answer?.optJSONArray("fields") ?: return emptySet()
        val out = HashSet<Int>()
        for (i in 0 until fields.length()) {
            val field = fields.optJSONObject(i)?.optString("field") ?: return emptySet()
            val m = EVENT_FIELD.find(field) ?: return emptySet()
            val index = m.groupValues[1].toInt()
            if (index >= size) return emptySet()
            out.add(index)
        }
        return out
    }

    private fun retryAfterMs(header: String?): Long {
        val seconds = header?.trim()?.toLongOrNull()
        if (seconds != null && seconds >= 0) return minOf(seconds * 1000, MAX_RETRY_AFTER_MS)
        return DEFAULT_RETRY_AFTER_MS
    }

    companion object {
        private val EVENT_FIELD = Regex("^events\\.(\\d+)(?:\\.|$)")
        private const val DEFAULT_RETRY_AFTER_MS = 60_000L
        private const val MAX_RETRY_AFTER_MS = 3_600_000L
    }
}
