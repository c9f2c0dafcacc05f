package dev.rampart.android

import android.content.Context
import android.os.Build
import android.os.Debug
import java.io.File

/**
 * The device's own checks (docs/mobile.md, `integrity`): evidence, never proof. Each check is
 * cheap and local; a determined attacker hides from all of them, which is why Rampart weighs
 * what they find and never trusts their silence.
 */
object Integrity {
    /** Where the checks look; replaced in tests. */
    internal class Probe(
        val fileExists: (String) -> Boolean = { File(it).exists() },
        val readText: (String) -> String? = { p -> try { File(p).takeIf { it.canRead() }?.readText() } catch (e: Exception) { null } },
        val classExists: (String) -> Boolean = { n -> try { Class.forName(n, false, Integrity::class.java.classLoader); true } catch (e: Throwable) { false } },
        val systemProperty: (String) -> String? = { n -> try { Class.forName("android.os.SystemProperties").getMethod("get", String::class.java).invoke(null, n) as? String } catch (e: Throwable) { null } },
        val debuggerConnected: () -> Boolean = { Debug.isDebuggerConnected() },
        val path: String? = System.getenv("PATH"),
    )

    private val SU_PATHS = listOf("/system/bin/su", "/system/xbin/su", "/sbin/su", "/su/bin/su", "/system/sd/xbin/su", "/data/local/xbin/su", "/data/local/bin/su")
    private val MAGISK_PATHS = listOf("/data/adb/magisk", "/sbin/.magisk", "/data/adb/modules", "/cache/.disable_magisk")
    private val HOOK_LIBRARIES = listOf("frida", "gum-js-loop", "gmain", "xposed", "lsposed", "libsubstrate", "edxp", "riru")
    private val HOOK_CLASSES = listOf("de.robv.android.xposed.XposedBridge", "de.robv.android.xposed.XposedHelpers", "com.saurik.substrate.MS")

    fun check(@Suppress("UNUSED_PARAMETER") context: Context): List<String> = check(Probe())

    internal fun check(p: Probe): List<String> {
        val found = ArrayList<String>()
        if (emulator(p)) found.add("emulator")
        if (rooted(p)) found.add("rooted")
        if (try { p.debuggerConnected() } catch (e: Throwable) { false }) found.add("debugger")
        if (hooked(p)) found.add("hooking_framework")
        return found
    }

    private fun emulator(p: Probe): Boolean {
        val fingerprint = Build.FINGERPRINT ?: ""
        val hardware = Build.HARDWARE ?: ""
        val product = Build.PRODUCT ?: ""
        return fingerprint.startsWith("generic") || fingerprint.contains("emulator") ||
            hardware == "goldfish" || hardware == "ranchu" ||
            product.startsWith("sdk_gphone") || product == "sdk" || product.startsWith("sdk_") ||
            p.systemProperty("ro.kernel.qemu") == "1"
    }

    private fun rooted(p: Probe): Boolean {
        if ((Build.TAGS ?: "").contains("test-keys")) return true
        if (SU_PATHS.any(p.fileExists) || MAGISK_PATHS.any(p.fileExists)) return true
        return (p.path ?: "").split(':').filter { it.isNotEmpty() }.any { p.fileExists("$it/su") }
    }

    private fun hooked(p: Probe): Boolean {
        if (HOOK_CLASSES.any(p.classExists)) return true
        val maps = p.readText("/proc/self/maps")?.lowercase() ?: return false
        return HOOK_LIBRARIES.any { maps.contains(it) }
    }
}
