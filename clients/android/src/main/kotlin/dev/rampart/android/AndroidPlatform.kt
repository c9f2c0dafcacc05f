package dev.rampart.android

import android.annotation.SuppressLint
import android.app.Activity
import android.app.ActivityManager
import android.app.Application
import android.content.Context
import android.content.pm.PackageManager
import android.os.Build
import android.os.Bundle
import android.provider.Settings
import android.util.Log
import okhttp3.MediaType.Companion.toMediaType
import okhttp3.OkHttpClient
import okhttp3.Request
import okhttp3.RequestBody.Companion.toRequestBody
import java.io.File
import java.security.SecureRandom
import java.util.Locale
import java.util.TimeZone
import java.util.concurrent.CopyOnWriteArrayList
import java.util.concurrent.TimeUnit

/**
 * The [Platform] over the Android SDK: files in the app's private storage, excluded from Auto
 * Backup (the queue survives the process being killed, and everything survives an app update), Keystore-encrypted files for
 * the install id and the session, the activities' lifecycle for opens, closes and screens, the
 * device's description and integrity checks, and OkHttp for the two calls to Rampart.
 */
class AndroidPlatform(private val application: Application, private val http: OkHttpClient = defaultHttp()) : Platform {
    /** Outside Auto Backup: a session key or install id restored onto another phone would make it this one. */
    private val dir = File(application.noBackupFilesDir, "rampart")
    private val random = SecureRandom()
    private val lifecycle = ActivityLifecycle(initialState(application))

    init {
        application.registerActivityLifecycleCallbacks(lifecycle)
    }

    override val storage: KeyValueStorage = FileStorage(dir)
    override val secureStorage: KeyValueStorage = KeystoreStorage(FileStorage(File(dir, "secure")))
    override val appState: AppStateSource get() = lifecycle
    override val screens: ScreenSource get() = lifecycle

    override fun deviceInfo(): DeviceInfo = describe(application)

    override fun postJson(url: String, body: String): HttpResponse {
        val request = Request.Builder().url(url).post(body.toRequestBody(JSON)).build()
        http.newCall(request).execute().use { res ->
            return HttpResponse(res.code, res.body.string(), res.headers.toMap())
        }
    }

    override fun now(): Long = System.currentTimeMillis()

    override fun randomBytes(length: Int): ByteArray = ByteArray(length).also { random.nextBytes(it) }

    override fun log(message: String) {
        Log.d("Rampart", message)
    }

    override fun close() {
        application.unregisterActivityLifecycleCallbacks(lifecycle)
    }

    /** Opens and closes from the count of started activities; a screen for each activity resumed. */
    internal class ActivityLifecycle(initial: AppState) : Application.ActivityLifecycleCallbacks, AppStateSource, ScreenSource {
        @Volatile private var state = initial
        private var started = 0
        private val stateListeners = CopyOnWriteArrayList<(AppState) -> Unit>()
        private val screenListeners = CopyOnWriteArrayList<(String) -> Unit>()

        override fun current(): AppState = state
        override fun subscribe(listener: (AppState) -> Unit): () -> Unit {
            stateListeners.add(listener)
            return { stateListeners.remove(listener) }
        }

        override fun subscribeScreens(listener: (String) -> Unit): () -> Unit {
            screenListeners.add(listener)
            return { screenListeners.remove(listener) }
        }

        private fun move(to: AppState) {
            if (state == to) return
            state = to
            stateListeners.forEach { it(to) }
        }

        override fun onActivityStarted(activity: Activity) {
            started++
            if (started == 1) move(AppState.ACTIVE)
        }

        override fun onActivityStopped(activity: Activity) {
            if (started > 0) started--
            // A rotation stops and restarts the activity: not a close.
            if (started == 0 && !activity.isChangingConfigurations) move(AppState.BACKGROUND)
        }

        override fun onActivityResumed(activity: Activity) {
            val name = screenName(activity)
            screenListeners.forEach { it(name) }
        }

        override fun onActivityCreated(activity: Activity, savedInstanceState: Bundle?) {}
        override fun onActivityPaused(activity: Activity) {}
        override fun onActivitySaveInstanceState(activity: Activity, outState: Bundle) {}
        override fun onActivityDestroyed(activity: Activity) {}
    }

    companion object {
        private val JSON = "application/json; charset=utf-8".toMediaType()

        /** The client's own HTTP client for Rampart: 30 s limits, no interceptor. */
        fun defaultHttp(): OkHttpClient = OkHttpClient.Builder()
            .callTimeout(30, TimeUnit.SECONDS)
            .connectTimeout(15, TimeUnit.SECONDS)
            .build()

        /** An activity's screen name: its class's simple name (`LoginActivity`). */
        fun screenName(activity: Activity): String = activity.javaClass.simpleName.ifEmpty { activity.javaClass.name }

        /** Whether the app is in the foreground as the client starts (a launch from the launcher is). */
        private fun initialState(context: Context): AppState {
            val info = ActivityManager.RunningAppProcessInfo()
            return try {
                ActivityManager.getMyMemoryState(info)
                if (info.importance == ActivityManager.RunningAppProcessInfo.IMPORTANCE_FOREGROUND) AppState.ACTIVE else AppState.BACKGROUND
            } catch (e: Exception) {
                AppState.BACKGROUND
            }
        }

        /** The device and app as the registration describes them (docs/mobile.md, "What to collect"). */
        @SuppressLint("HardwareIds")
        fun describe(context: Context): DeviceInfo {
            val pm = context.packageManager
            val pkg = context.packageName
            val info = try { pm.getPackageInfo(pkg, 0) } catch (e: PackageManager.NameNotFoundException) { null }
            val build = info?.let { if (Build.VERSION.SDK_INT >= 28) it.longVersionCode.toString() else @Suppress("DEPRECATION") it.versionCode.toString() }
            val label = try { context.applicationInfo.loadLabel(pm).toString() } catch (e: Exception) { pkg }
            val metrics = context.resources.displayMetrics
            val tz = TimeZone.getDefault()
            val androidId = try { Settings.Secure.getString(context.contentResolver, Settings.Secure.ANDROID_ID) } catch (e: Exception) { null }
            return DeviceInfo(
                osVersion = Build.VERSION.RELEASE ?: "unknown",
                model = Build.MODEL ?: "unknown",
                manufacturer = Build.MANUFACTURER,
                app = AppInfo(id = pkg, name = label, version = info?.versionName ?: "0", build = build),
                locale = Locale.getDefault().toLanguageTag(),
                timezone = tz.id,
                timezoneOffset = -tz.getOffset(System.currentTimeMillis()) / 60_000,
                screen = ScreenInfo(metrics.widthPixels, metrics.heightPixels, metrics.density.toDouble()),
                vendorId = androidId,
                integrity = Integrity.check(context),
            )
        }
    }
}

/** A store of one file per key in [dir], each written whole to a temporary file and renamed over the old one: a kill mid-write leaves the old value. */
internal class FileStorage(private val dir: File) : KeyValueStorage {
    private fun file(key: String): File {
        require(Regex("^[A-Za-z0-9._-]+$").matches(key)) { "bad storage key" }
        return File(dir, key)
    }

    @Synchronized
    override fun get(key: String): String? = file(key).let { if (it.isFile) it.readText(Charsets.UTF_8) else null }

    @Synchronized
    override fun set(key: String, value: String) {
        dir.mkdirs()
        val target = file(key)
        val tmp = File(dir, "$key.tmp")
        java.io.FileOutputStream(tmp).use { out ->
            out.write(value.toByteArray(Charsets.UTF_8))
            out.fd.sync()
        }
        if (!tmp.renameTo(target)) throw java.io.IOException("could not replace $key")
    }

    @Synchronized
    override fun remove(key: String) {
        file(key).delete()
    }
}
