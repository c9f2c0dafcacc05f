package dev.rampart.android

import org.json.JSONArray
import org.json.JSONObject
import java.time.Instant

/** One queued app event, with the device time it happened at and the clock offset known then. */
internal data class QueuedEvent(
    /** Unique within the queue: events leave it by id. */
    val id: Long,
    val type: String,
    val name: String? = null,
    val userId: String? = null,
    val userSignature: String? = null,
    /** `identify` after `userJwt`: the signed-user JWT, which Rampart verifies. */
    val userJwt: String? = null,
    val properties: Map<String, Any>? = null,
    /** Device time, ms since the epoch. */
    val at: Long,
    /** Rampart's clock minus the device's when queued, or null when not yet known. */
    val offset: Long?,
) {
    fun toJson(): JSONObject {
        val o = JSONObject().put("id", id).put("type", type).put("at", at)
        if (offset != null) o.put("offset", offset)
        name?.let { o.put("name", it) }
        userId?.let { o.put("user_id", it) }
        userSignature?.let { o.put("user_signature", it) }
        userJwt?.let { o.put("user_jwt", it) }
        properties?.let { o.put("properties", JSONObject(it)) }
        return o
    }

    /** The wire form, stamped in Rampart's clock (the offset known now when none was known then). */
    fun toWire(currentOffset: Long?): JSONObject {
        val o = JSONObject().put("type", type).put("timestamp", Instant.ofEpochMilli(at + (offset ?: currentOffset ?: 0L)).toString())
        name?.let { o.put("name", it) }
        userId?.let { o.put("user_id", it) }
        userSignature?.let { o.put("user_signature", it) }
        userJwt?.let { o.put("user_jwt", it) }
        properties?.let { o.put("properties", JSONObject(it)) }
        return o
    }

    companion object {
        fun fromJson(o: JSONObject): QueuedEvent? = try {
            val props = o.optJSONObject("properties")?.let { p -> p.keys().asSequence().associateWith { p.get(it) } }
            QueuedEvent(
                id = o.getLong("id"),
                type = o.getString("type"),
                name = o.optString("name").ifEmpty { null },
                userId = o.optString("user_id").ifEmpty { null },
                userSignature = o.optString("user_signature").ifEmpty { null },
                userJwt = o.optString("user_jwt").ifEmpty { null },
                properties = props,
                at = o.getLong("at"),
                offset = if (o.has("offset")) o.getLong("offset") else null,
            )
        } catch (e: Exception) {
            null
        }
    }
}

/**
 * The event queue: bounded, oldest dropped first, written to the app's storage at every change
 * so that events survive the process being killed (an `app_closed` is often the last thing an
 * app does). It knows nothing of when or how events are sent: [Flusher] does that. Used from
 * the client's one worker thread only; [size] may be read from any thread.
 */
internal class EventQueue(
    private val storage: KeyValueStorage,
    private val key: String,
    private val max: Int,
    private val log: (String) -> Unit,
) {
    private var events = ArrayList<QueuedEvent>()
    private var nextId = 1L

    @Volatile
    private var count = 0

    /** Reads what an earlier run left. */
    fun load() {
        val stored = ArrayList<QueuedEvent>()
        try {
            val raw = storage.get(key)
            if (raw != null) {
                val a = JSONArray(raw)
                for (i in 0 until a.length()) a.optJSONObject(i)?.let { QueuedEvent.fromJson(it) }?.let { stored.add(it) }
            }
        } catch (e: Exception) {
            log("the stored queue could not be read; starting empty")
        }
        val base = stored.maxOfOrNull { it.id } ?: 0L
        // What was queued before loading goes behind the stored events, renumbered.
        val fresh = events.mapIndexed { i, e -> e.copy(id = base + i + 1) }
        events = ArrayList(stored + fresh)
        nextId = base + fresh.size + 1
        trim()
        count = events.size
        if (fresh.isNotEmpty()) persist()
    }

    fun size(): Int = count

    fun push(event: QueuedEvent) {
        events.add(event.copy(id = nextId++))
        trim()
        count = events.size
        persist()
    }

    /** The oldest [n] events (they leave only when the server took them). */
    fun peek(n: Int): List<QueuedEvent> = events.take(n)

    fun remove(ids: Set<Long>) {
        val before = events.size
        events.removeAll { it.id in ids }
        count = events.size
        if (events.size != before) persist()
    }

    private fun persist() {
        try {
            storage.set(key, JSONArray(events.map { it.toJson() }).toString())
        } catch (e: Exception) {
            log("the queue could not be stored")
        }
    }

    private fun trim() {
        val over = events.size - max
        if (over > 0) {
            events.subList(0, over).clear()
            log("dropped the $over oldest event(s): the queue is over its limit of $max")
        }
    }
}
