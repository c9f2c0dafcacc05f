package dev.rampart.android

import android.app.Application
import android.provider.Settings
import okhttp3.MediaType.Companion.toMediaType
import okhttp3.OkHttpClient
import okhttp3.Request
import okhttp3.RequestBody.Companion.toRequestBody
import org.json.JSONObject
import org.junit.After
import org.junit.Assert.assertEquals
import org.junit.Assert.assertFalse
import org.junit.Assert.assertTrue
import org.junit.Assume.assumeTrue
import org.junit.Test
import org.junit.runner.RunWith
import org.robolectric.Robolectric
import org.robolectric.RobolectricTestRunner
import org.robolectric.RuntimeEnvironment
import org.robolectric.Shadows.shadowOf
import org.robolectric.shadows.ShadowBuild
import java.io.File
import java.util.concurrent.TimeUnit

/**
 * The library against a real Rampart, over loopback: Rampart.configure in a Robolectric app with
 * the real AndroidPlatform (files, lifecycle callbacks, device description, OkHttp). The app is
 * installed and opened, shows screens, logs in to its backend through the interceptor (the
 * backend forwards the header to Rampart and answers the verdict), identifies the user, closes;
 * then it is uninstalled and installed again: a new install id, the same ANDROID_ID, the same
 * device. Run by test/e2e/android.test.ts, which starts Rampart and the backend and passes their
 * addresses (`rampart.url`, `rampart.key`, `rampart.backend`, `rampart.other`, `rampart.user`,
 * `rampart.jwt`, `rampart.android_id`, `rampart.result`); skipped without them.
 */
@RunWith(RobolectricTestRunner::class)
class EndToEndTest {
    private val app: Application = RuntimeEnvironment.getApplication()
    private val json = "application/json".toMediaType()

    @After
    fun tearDown() = Rampart.shutdown()

    private fun prop(name: String): String = System.getProperty(name) ?: throw AssertionError("missing -D$name")

    private fun launch(allow: String): RampartClient {
        Rampart.configure(
            app,
            RampartConfiguration.Builder()
                .publishableKey(prop("rampart.key"))
                .baseUrl(prop("rampart.url"))
                .baseURLAllowList(listOf(allow))
                .build(),
        )
        return Rampart.client()!!
    }

    private fun post(http: OkHttpClient, url: String, body: JSONObject, header: Pair<String, String>? = null): JSONObject {
        val b = Request.Builder().url(url).post(body.toString().toRequestBody(json))
        header?.let { b.header(it.first, it.second) }
        http.newCall(b.build()).execute().use { res ->
            assertEquals("$url answered ${res.code}", 200, res.code)
            return JSONObject(res.body.string())
        }
    }

    @Test
    fun installLoginIdentifyReinstall() {
        assumeTrue("run by test/e2e/android.test.ts", System.getProperty("rampart.url") != null)
        val backend = prop("rampart.backend")
        val user = prop("rampart.user")
        val androidId = prop("rampart.android_id")
        Settings.Secure.putString(app.contentResolver, Settings.Secure.ANDROID_ID, androidId)
        ShadowBuild.setModel("Pixel 8")
        ShadowBuild.setManufacturer("Google")
        ShadowBuild.setVersionRelease("14")
        val info = shadowOf(app.packageManager).getInternalMutablePackageInfo(app.packageName)
        info.versionName = "3.2.1"
        info.longVersionCode = 321
        File(app.noBackupFilesDir, "rampart").deleteRecursively()

        // Install and open: the launcher starts the first activity.
        val client = launch("$backend/api/")
        val login = Robolectric.buildActivity(LoginActivity::class.java).setup()
        client.idle()
        Rampart.screen("Welcome")
        client.idle()
        assertEquals("ShopApp/3.2.1 (321; Pixel 8; Android 14) rampart-android/0.1.0".substringAfter("("), Rampart.userAgent()!!.substringAfter("("))

        // The app's HTTP client, with the interceptor: the login carries a fresh token, and the backend gets the verdict.
        val http = OkHttpClient.Builder().addInterceptor(Rampart.interceptor()).callTimeout(60, TimeUnit.SECONDS).build()
        val verdict = post(http, "$backend/api/login", JSONObject().put("user", user).put("password", "right"))
        assertEquals(verdict.toString(), "allow", verdict.getJSONObject("policy").getString("action"))
        val signals = verdict.getJSONObject("signals")
        for (s in listOf("invalid_token", "replayed_token", "bot_behavior", "spoofed_device", "emulator")) assertFalse("$s in $signals", signals.has(s))
        val device = verdict.getJSONObject("device").getString("token")
        post(http, "$backend/api/profile", JSONObject())
        post(http, "${prop("rampart.other")}/api/profile", JSONObject())

        // A token altered on the way, and one used beyond its login flow, are refused.
        val plain = OkHttpClient.Builder().callTimeout(60, TimeUnit.SECONDS).build()
        val token = Rampart.createRequestToken()
        val forged = token.dropLast(2) + (if (token.endsWith("AA")) "BB" else "AA")
        val forgedVerdict = post(plain, "$backend/api/login", JSONObject().put("user", "$user-forged").put("password", "right"), Rampart.clientIdHeaderName() to forged)
        assertTrue(forgedVerdict.toString(), forgedVerdict.getJSONObject("signals").has("invalid_token"))
        var last = JSONObject()
        repeat(4) { last = post(plain, "$backend/api/login", JSONObject().put("user", user).put("password", "right"), Rampart.clientIdHeaderName() to token) }
        assertTrue(last.toString(), last.getJSONObject("signals").has("replayed_token"))

        Rampart.custom("Added to cart", mapOf("sku" to "A-1", "qty" to 2))
        Rampart.identify(user, mapOf("plan" to "pro"))
        client.idle()
        assertEquals(0, Rampart.queueSize())
        // The signed-user form: a JWT the backend signed with the API secret, which Rampart verifies.
        Rampart.userJwt(prop("rampart.jwt"))
        client.idle()
        assertEquals(0, Rampart.queueSize())

        // The app goes to the background: the close is flushed.
        Rampart.screen("Home")
        login.pause().stop()
        client.idle()
        assertEquals(0, Rampart.queueSize())

        // Uninstalled and installed again: the app's files are gone; ANDROID_ID is the same.
        Rampart.shutdown()
        File(app.noBackupFilesDir, "rampart").deleteRecursively()
        val again = launch("$backend/api/")
        Robolectric.buildActivity(LoginActivity::class.java).setup()
        again.idle()
        val http2 = OkHttpClient.Builder().addInterceptor(Rampart.interceptor()).callTimeout(60, TimeUnit.SECONDS).build()
        val second = post(http2, "$backend/api/login", JSONObject().put("user", user).put("password", "right"))
        assertEquals(second.toString(), "allow", second.getJSONObject("policy").getString("action"))
        assertEquals("a reinstall is the same device", device, second.getJSONObject("device").getString("token"))
        Rampart.flush()
        again.idle()
        assertEquals(0, Rampart.queueSize())

        File(prop("rampart.result")).writeText(JSONObject().put("device", device).put("package", app.packageName).toString())
    }
}
