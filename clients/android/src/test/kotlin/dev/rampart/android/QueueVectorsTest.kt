package dev.rampart.android

import okhttp3.OkHttpClient
import okhttp3.Protocol
import okhttp3.Request
import okhttp3.Response
import okhttp3.ResponseBody.Companion.toResponseBody
import org.json.JSONObject
import org.junit.Assert.assertEquals
import org.junit.Assert.assertTrue
import org.junit.Test
import org.junit.runner.RunWith
import org.robolectric.RobolectricTestRunner

/** The queue's semantics: every scenario of the shared vectors, step by step. */
@RunWith(RobolectricTestRunner::class)
class QueueVectorsTest {
    @Test
    fun everyScenario() {
        val doc = vectors("queue.json")
        val app = doc.getJSONObject("app")
        val scenarios = doc.getJSONArray("scenarios")
        assertTrue(scenarios.length() > 5)
        for (i in 0 until scenarios.length()) run(scenarios.getJSONObject(i), app)
    }

    private fun run(scenario: JSONObject, app: JSONObject) {
        val name = scenario.getString("name")
        val options = scenario.getJSONObject("options")
        val p = FakePlatform(device = PHONE.copy(app = PHONE.app.copy(version = app.getString("version"), build = app.optString("build").ifEmpty { null })))
        val conf = config {
            if (options.has("flushLimit")) flushLimit(options.getInt("flushLimit"))
            if (options.has("maxQueueLimit")) maxQueueLimit(options.getInt("maxQueueLimit"))
            options.optJSONArray("baseURLAllowList")?.let { a -> baseURLAllowList((0 until a.length()).map { a.getString(it) }) }
            screenTrackingEnabled(false)
        }
        var client: RampartClient? = null
        var seen = 0
        val steps = scenario.getJSONArray("steps")
        try {
            for (j in 0 until steps.length()) {
                val step = steps.getJSONObject(j)
                val c = client
                when (val op = step.getString("op")) {
                    "launch" -> {
                        if (!step.isNull("installed")) p.storage.set(RampartClient.KEYS_APP, step.getJSONObject("installed").toString())
                        p.appState.state = if (step.getBoolean("foreground")) AppState.ACTIVE else AppState.BACKGROUND
                        client = RampartClient(p, conf).also { it.start() }
                    }
                    "screen" -> {
                        val n = step.optInt("repeat", 1)
                        for (k in 1..n) c!!.screen(step.getString("name").replace("{i}", k.toString()))
                    }
                    "identify" -> c!!.identify(step.getString("user_id"))
                    "user_jwt" -> c!!.userJwt(step.getString("jwt"))
                    "custom" -> c!!.custom(step.getString("name"), step.optJSONObject("properties")?.let { p -> p.keys().asSequence().associateWith { p.get(it) } })
                    "request" -> {
                        // The app's OkHttp client with the interceptor; the request is answered without a network.
                        val http = OkHttpClient.Builder()
                            .addInterceptor(c!!.interceptor())
                            .addInterceptor { chain -> Response.Builder().request(chain.request()).protocol(Protocol.HTTP_1_1).code(200).message("OK").body("{}".toResponseBody()).build() }
                            .build()
                        http.newCall(Request.Builder().url(step.getString("url")).build()).execute().close()
                    }
                    "reset" -> c!!.reset()
                    "background" -> p.appState.emit(AppState.BACKGROUND)
                    "foreground" -> p.appState.emit(AppState.ACTIVE)
                    "flush" -> c!!.flush()
                    "server" -> p.accepting = step.getBoolean("accepting")
                    "expect" -> {
                        val want = plain(step.getJSONArray("batches"))
                        val got = p.batches.drop(seen).map { batch -> (plain(batch) as List<*>).map { e -> (e as Map<*, *>).filterKeys { it != "timestamp" } } }
                        seen = p.batches.size
                        assertEquals("$name, step $j: batches", want, got)
                        assertEquals("$name, step $j: queue size", step.getInt("queue_size"), c!!.queueSize())
                    }
                    else -> throw AssertionError("$name: unknown op $op")
                }
                client?.idle()
            }
        } finally {
            client?.destroy()
        }
    }
}
