package dev.rampart.android

import android.app.Activity
import android.app.Application
import android.provider.Settings
import org.json.JSONObject
import org.junit.After
import org.junit.Assert.assertEquals
import org.junit.Assert.assertFalse
import org.junit.Assert.assertNotEquals
import org.junit.Assert.assertNull
import org.junit.Assert.assertTrue
import org.junit.Test
import org.junit.runner.RunWith
import org.robolectric.Robolectric
import org.robolectric.RobolectricTestRunner
import org.robolectric.RuntimeEnvironment
import org.robolectric.shadows.ShadowBuild
import java.io.File

class LoginActivity : Activity()
class HomeActivity : Activity()

/** The Android side: the lifecycle callbacks, the files and the Keystore fallback, the device's description and integrity. */
@RunWith(RobolectricTestRunner::class)
class AndroidPlatformTest {
    private val app: Application = RuntimeEnvironment.getApplication()

    @After
    fun tearDown() = Rampart.shutdown()

    @Test
    fun activitiesMakeOpensClosesAndScreens() {
        val lifecycle = AndroidPlatform.ActivityLifecycle(AppState.BACKGROUND)
        app.registerActivityLifecycleCallbacks(lifecycle)
        val states = ArrayList<AppState>()
        val screens = ArrayList<String>()
        lifecycle.subscribe { states.add(it) }
        lifecycle.subscribeScreens { screens.add(it) }
        val login = Robolectric.buildActivity(LoginActivity::class.java).setup()
        // Going from one activity to the next is no close.
        val home = Robolectric.buildActivity(HomeActivity::class.java).setup()
        login.pause().stop()
        assertEquals(listOf(AppState.ACTIVE), states)
        home.pause().stop()
        assertEquals(listOf(AppState.ACTIVE, AppState.BACKGROUND), states)
        home.restart().start().resume()
        assertEquals(listOf(AppState.ACTIVE, AppState.BACKGROUND, AppState.ACTIVE), states)
        assertEquals(listOf("LoginActivity", "HomeActivity", "HomeActivity"), screens)
        app.unregisterActivityLifecycleCallbacks(lifecycle)
    }

    @Test
    fun theClientTracksActivitiesAsScreensAndTheCloseFlushes() {
        val p = FakePlatform(appState = FakeAppState(AppState.BACKGROUND))
        val lifecycle = AndroidPlatform.ActivityLifecycle(AppState.BACKGROUND)
        app.registerActivityLifecycleCallbacks(lifecycle)
        val platform = object : Platform by p {
            override val appState: AppStateSource = lifecycle
            override val screens: ScreenSource = lifecycle
        }
        val client = RampartClient(platform, config())
        client.start()
        client.idle()
        val login = Robolectric.buildActivity(LoginActivity::class.java).setup()
        client.idle()
        login.pause().stop()
        client.idle()
        val sent = p.batches.flatMap { b -> (0 until b.length()).map { b.getJSONObject(it).let { e -> e.getString("type") + (e.optString("name").let { n -> if (n.isEmpty()) "" else ":$n" }) } } }
        assertEquals(listOf("app_installed", "app_opened", "screen:LoginActivity", "app_closed"), sent)
        assertEquals(0, client.queueSize())
        client.destroy()
        app.unregisterActivityLifecycleCallbacks(lifecycle)
    }

    @Test
    fun anAppUpdateIsSeenFromThePackageVersion() {
        File(app.noBackupFilesDir, "rampart").deleteRecursively()
        val info = org.robolectric.Shadows.shadowOf(app.packageManager).getInternalMutablePackageInfo(app.packageName)
        info.versionName = "3.1.0"
        info.longVersionCode = 310
        // Rampart cannot be reached (nothing listens there): the events stay in the queue file.
        val conf = RampartConfiguration.Builder().publishableKey("pk_test").baseUrl("http://127.0.0.1:9").build()
        Rampart.configure(app, conf)
        Rampart.client()!!.idle()
        Rampart.shutdown()
        info.versionName = "3.2.1"
        info.longVersionCode = 321
        Rampart.configure(app, conf)
        Rampart.client()!!.idle()
        Rampart.shutdown()
        val queued = org.json.JSONArray(File(app.noBackupFilesDir, "rampart/rampart.queue").readText())
        val types = (0 until queued.length()).map { queued.getJSONObject(it).getString("type") }
        assertEquals(listOf("app_installed", "app_updated"), types.filter { it != "app_opened" })
        val updated = queued.getJSONObject(types.indexOf("app_updated")).getJSONObject("properties")
        assertEquals("3.2.1", updated.getString("version"))
        assertEquals("321", updated.getString("build"))
        assertEquals("3.1.0", updated.getString("previous_version"))
        assertEquals("310", updated.getString("previous_build"))
    }

    @Test
    fun theQueueFileSurvivesAKilledProcess() {
        val dir = File(app.filesDir, "kill-test").apply { deleteRecursively() }
        val offline = FakePlatform(storage = FileStorage(dir), secureStorage = FileStorage(File(dir, "secure")))
        offline.accepting = false
        val first = RampartClient(offline, config())
        first.start()
        first.screen("Cart")
        first.screen("Checkout")
        first.idle()
        assertEquals(4, first.queueSize()) // install, open, two screens: nothing could be sent
        // The process dies: nothing more is written. A new process reads the files.
        first.destroy()
        val online = FakePlatform(storage = FileStorage(dir), secureStorage = FileStorage(File(dir, "secure")))
        val second = RampartClient(online, config())
        second.start()
        second.idle()
        val types = online.batches.flatMap { b -> (0 until b.length()).map { b.getJSONObject(it).getString("type") } }
        assertEquals(listOf("app_installed", "app_opened", "screen", "screen", "app_opened"), types)
        assertEquals(0, second.queueSize())
        second.destroy()
    }

    @Test
    fun fileStorageReplacesWholeValues() {
        val dir = File(app.filesDir, "storage-test").apply { deleteRecursively() }
        val s = FileStorage(dir)
        assertNull(s.get("rampart.queue"))
        s.set("rampart.queue", "[1]")
        s.set("rampart.queue", "[1,2]")
        assertEquals("[1,2]", FileStorage(dir).get("rampart.queue"))
        assertFalse(File(dir, "rampart.queue.tmp").exists())
        s.remove("rampart.queue")
        assertNull(s.get("rampart.queue"))
    }

    @Test
    fun secureStorageWithoutAKeystoreKeepsValuesReadable() {
        val dir = File(app.filesDir, "secure-test").apply { deleteRecursively() }
        val s = KeystoreStorage(FileStorage(dir), alias = "test")
        s.set("rampart.install_id", "hQy6tq2d0C1mB2nJrW8xKQ")
        assertEquals("hQy6tq2d0C1mB2nJrW8xKQ", KeystoreStorage(FileStorage(dir), alias = "test").get("rampart.install_id"))
    }

    @Test
    fun describesTheDeviceWithAHashedAndroidId() {
        Settings.Secure.putString(app.contentResolver, Settings.Secure.ANDROID_ID, "9774d56d682e549c")
        ShadowBuild.setModel("Pixel 8")
        ShadowBuild.setManufacturer("Google")
        ShadowBuild.setVersionRelease("14")
        val info = AndroidPlatform.describe(app)
        assertEquals("Pixel 8", info.model)
        assertEquals("Google", info.manufacturer)
        assertEquals("14", info.osVersion)
        assertEquals(app.packageName, info.app.id)
        assertEquals("9774d56d682e549c", info.vendorId)
        val m = Components.build(info, "hQy6tq2d0C1mB2nJrW8xKQ", Components.userAgent(info), forwardDeviceId = false, attestation = null)
        assertEquals(Crypto.sha256Hex("${app.packageName}:9774d56d682e549c"), m.getString("vendorId"))
        assertTrue(Regex("^[0-9a-f]{64}$").matches(m.getString("vendorId")))
        assertFalse("the raw ANDROID_ID stays on the phone by default", m.toString().contains("9774d56d682e549c"))
        val forwarded = Components.build(info, "hQy6tq2d0C1mB2nJrW8xKQ", "ua", forwardDeviceId = true, attestation = null)
        assertEquals("9774d56d682e549c", forwarded.getString("deviceId"))
        assertEquals("android", m.getString("platform"))
        assertTrue(m.getString("userAgent").matches(Regex("^.+/.+ \\(.+; Pixel 8; Android 14\\) rampart-android/0\\.1\\.0$")))
    }

    @Test
    fun integrityFindsEmulatorsRootAndHooks() {
        val clean = Integrity.Probe(fileExists = { false }, readText = { "7f00 r-xp /system/lib64/libc.so" }, classExists = { false }, systemProperty = { null }, debuggerConnected = { false }, path = "/system/bin")
        ShadowBuild.setFingerprint("google/husky/husky:14/AP1A/1234:user/release-keys")
        ShadowBuild.setHardware("husky")
        ShadowBuild.setProduct("husky")
        ShadowBuild.setTags("release-keys")
        assertEquals(emptyList<String>(), Integrity.check(clean))

        ShadowBuild.setFingerprint("generic/sdk_gphone64_x86_64/emu64x:14/UE1A/1:userdebug/dev-keys")
        assertEquals(listOf("emulator"), Integrity.check(clean))
        ShadowBuild.setFingerprint("google/husky/husky:14/AP1A/1234:user/release-keys")
        ShadowBuild.setHardware("ranchu")
        assertEquals(listOf("emulator"), Integrity.check(clean))
        ShadowBuild.setHardware("husky")

        ShadowBuild.setTags("test-keys")
        assertEquals(listOf("rooted"), Integrity.check(clean))
        ShadowBuild.setTags("release-keys")
        val su = Integrity.Probe(fileExists = { it == "/system/xbin/su" }, readText = { "" }, classExists = { false }, systemProperty = { null }, debuggerConnected = { false }, path = "")
        assertEquals(listOf("rooted"), Integrity.check(su))
        val magisk = Integrity.Probe(fileExists = { it == "/data/adb/magisk" }, readText = { "" }, classExists = { false }, systemProperty = { null }, debuggerConnected = { false }, path = "")
        assertEquals(listOf("rooted"), Integrity.check(magisk))

        val frida = Integrity.Probe(fileExists = { false }, readText = { "7f00 r-xp /data/local/tmp/frida-agent-64.so" }, classExists = { false }, systemProperty = { null }, debuggerConnected = { false }, path = "")
        assertEquals(listOf("hooking_framework"), Integrity.check(frida))
        val xposed = Integrity.Probe(fileExists = { false }, readText = { "" }, classExists = { it == "de.robv.android.xposed.XposedBridge" }, systemProperty = { null }, debuggerConnected = { false }, path = "")
        assertEquals(listOf("hooking_framework"), Integrity.check(xposed))
        val debugged = Integrity.Probe(fileExists = { false }, readText = { "" }, classExists = { false }, systemProperty = { if (it == "ro.kernel.qemu") "1" else null }, debuggerConnected = { true }, path = "")
        assertEquals(listOf("emulator", "debugger"), Integrity.check(debugged))
    }

    @Test
    fun rampartIsConfiguredOnceAndRefusesAWrongConfiguration() {
        try {
            RampartConfiguration.Builder().publishableKey("sk_secret").baseUrl("https://rampart.test").build()
            throw AssertionError("accepted a secret key")
        } catch (e: IllegalArgumentException) {
            assertTrue(e.message!!.contains("publishable key"))
        }
        try {
            RampartConfiguration.Builder().publishableKey("pk_x").baseUrl("https://rampart.test").baseURLAllowList(listOf("api.shop.example")).build()
            throw AssertionError("accepted a relative allow-list entry")
        } catch (e: IllegalArgumentException) {
            assertTrue(e.message!!.contains("baseURLAllowList"))
        }
        val defaults = RampartConfiguration.Builder().publishableKey("pk_x").baseUrl("https://rampart.test/").build()
        assertEquals(20, defaults.flushLimit)
        assertEquals(1000, defaults.maxQueueLimit)
        assertTrue(defaults.screenTrackingEnabled)
        assertFalse(defaults.debugLoggingEnabled)
        assertFalse(defaults.deviceIDAutoForwardingEnabled)
        assertEquals("https://rampart.test", defaults.baseUrl)
        assertEquals("X-Service-Client-Id", defaults.clientIdHeaderName)
        Rampart.configure(app, defaults)
        Rampart.configure(app, RampartConfiguration.Builder(defaults).clientIdHeaderName(RampartConfiguration.CASTLE_HEADER).build())
        assertEquals("X-Service-Client-Id", Rampart.clientIdHeaderName())
        assertNotEquals(null, Rampart.client())
    }
}
