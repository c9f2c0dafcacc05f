package dev.rampart.android

import org.junit.Assert.assertEquals
import org.junit.Assert.assertTrue
import org.junit.Assert.fail
import org.junit.Test
import org.junit.runner.RunWith
import org.robolectric.RobolectricTestRunner

/** Token minting and the allow list, table by table over the shared vectors. */
@RunWith(RobolectricTestRunner::class)
class VectorsTest {
    @Test
    fun mintsTheVectorsTokensByteForByte() {
        val mint = vectors("tokens.json").getJSONObject("rpm1").getJSONArray("mint")
        assertTrue(mint.length() > 0)
        for (i in 0 until mint.length()) {
            val v = mint.getJSONObject(i)
            // t = floor(device_time + offset): the device clock may be fractional in the vector.
            val t = Math.floor(v.getDouble("device_time") + v.getDouble("offset")).toLong()
            assertEquals(v.getString("name"), v.getLong("t"), t)
            assertEquals(v.getString("name"), v.getString("token"), SessionKeeper.mint(v.getString("session"), v.getString("session_key"), t, v.getString("nonce")))
        }
    }

    @Test
    fun aSessionMintsWithItsOffsetAndAFreshNonce() {
        val v = vectors("tokens.json").getJSONObject("rpm1").getJSONArray("mint").getJSONObject(0)
        val p = FakePlatform()
        p.clock.set(v.getLong("device_time"))
        val keeper = SessionKeeper(p, "https://rampart.test", "pk_test", "s", {}) { org.json.JSONObject() }
        val s = SessionKeeper.Session(v.getString("session"), v.getString("session_key"), 0, Long.MAX_VALUE / 2, v.getLong("offset"))
        val a = keeper.mintFrom(s)
        val parts = a.split('.')
        assertEquals(v.getLong("t").toString(), parts[parts.size - 3])
        assertTrue(Regex("^[A-Za-z0-9_-]{22}$").matches(parts[parts.size - 2]))
        assertEquals(a, SessionKeeper.mint(v.getString("session"), v.getString("session_key"), v.getLong("t"), parts[parts.size - 2]))
    }

    @Test
    fun allowListCases() {
        val doc = vectors("allow-list.json")
        val cases = doc.getJSONArray("cases")
        assertTrue(cases.length() > 20)
        for (i in 0 until cases.length()) {
            val c = cases.getJSONObject(i)
            val allow = (0 until c.getJSONArray("allow").length()).map { c.getJSONArray("allow").getString(it) }
            assertEquals("${c.getString("url")}: ${c.getString("why")}", c.getBoolean("sent"), AllowList(allow).allows(c.getString("url")))
        }
        val invalid = doc.getJSONArray("invalid_entries")
        for (i in 0 until invalid.length()) {
            try {
                AllowList(listOf(invalid.getString(i)))
                fail("accepted the allow-list entry ${invalid.getString(i)}")
            } catch (e: IllegalArgumentException) {
                // refused, as it must be
            }
        }
    }
}
