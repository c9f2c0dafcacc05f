package rampart.compat;

import com.google.common.collect.ImmutableList;
import com.google.common.collect.ImmutableMap;
import com.google.gson.Gson;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import io.castle.client.Castle;
import io.castle.client.api.CastleApi;
import io.castle.client.model.AsyncCallbackHandler;
import io.castle.client.model.CastleContext;
import io.castle.client.model.CastleMessage;
import io.castle.client.model.CastleResponse;
import io.castle.client.model.CastleServerErrorException;
import io.castle.client.model.CastleSuccess;
import io.castle.client.model.CastleUserDevice;
import io.castle.client.model.CastleUserDevices;
import io.castle.client.model.Verdict;
import io.castle.client.model.generated.Context;
import io.castle.client.model.generated.Filter;
import io.castle.client.model.generated.FilterRequestParams;
import io.castle.client.model.generated.FilterResponse;
import io.castle.client.model.generated.Log;
import io.castle.client.model.generated.Risk;
import io.castle.client.model.generated.RiskResponse;
import io.castle.client.model.generated.User;

import javax.servlet.http.Cookie;
import javax.servlet.http.HttpServletRequest;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * Drives Castle's Java SDK (io.castle:castle-java, unmodified) against Rampart, the way an
 * application does: configured with {@code withApiBaseUrl}, a context built from the
 * application's own HttpServletRequest, and every call the SDK offers.
 *
 * <pre>
 * RAMPART_URL=http://127.0.0.1:PORT RAMPART_SECRET=... java -cp ... rampart.compat.DriveCastle scenario...
 * </pre>
 *
 * Each scenario prints one JSON line: {sdk, sdk_version, scenario, ok:true, result} or
 * {..., ok:false, error:{class, message, status}}. Scenario {@code list} prints the names.
 * Each scenario has a user ({@code RAMPART_USER_ID}-scenario) and an address of its own
 * ({@code RAMPART_IP_PREFIX} + a number): many accounts from one address within the hour is what
 * Rampart's velocity evidence is for, and not what these scenarios are about.
 */
public final class DriveCastle {
    private static final Gson GSON = new Gson();
    private static final String UA = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36";
    private static final Map<String, Scenario> SCENARIOS = new LinkedHashMap<>();

    private interface Scenario {
        Object run(Run r) throws Exception;
    }

    /** What one scenario works with. */
    private static final class Run {
        final String name;
        final String user;
        final String email;
        final String ip;
        final Castle castle;

        Run(String name, int index) {
            this.name = name;
            this.user = env("RAMPART_USER_ID", "java-compat") + "-" + name;
            this.email = user + "@example.com";
            this.ip = env("RAMPART_IP_PREFIX", "81.2.69.") + (20 + index);
            this.castle = castle(env("RAMPART_SECRET", ""));
        }

        /** The application's request: a browser's headers, the fingerprint cookie, the client address. */
        HttpServletRequest request() {
            Map<String, String> headers = new LinkedHashMap<>();
            headers.put("User-Agent", UA);
            headers.put("Accept", "text/html,application/xhtml+xml");
            headers.put("Accept-Language", "en-GB,en;q=0.9");
            headers.put("Host", "app.example.com");
            headers.put("Cookie", "__cid=" + env("RAMPART_CLIENT_ID", "cid-" + user) + "; session=s3cr3t");
            String token = System.getenv("RAMPART_CLIENT_ID_HEADER");
            if (token != null) headers.put("X-Castle-Client-Id", token);
            return servletRequest(headers, ip);
        }

        /** The context an application builds for the newer calls (risk, filter, log). */
        CastleContext context() {
            return castle.contextBuilder().fromHttpServletRequest(request()).build();
        }

        Context typedContext(String ipAddress) {
            return new Context().ip(ipAddress).headers(ImmutableList.of(
                    ImmutableList.of("User-Agent", UA),
                    ImmutableList.of("Accept-Language", "en-GB,en;q=0.9"),
                    ImmutableList.of("Cookie", "true")));
        }

        String requestToken() {
            return env("RAMPART_REQUEST_TOKEN", "tok-" + user);
        }
    }

    static Castle castle(String secret) {
        try {
            return Castle.initialize(Castle.configurationBuilder()
                    .apiSecret(secret)
                    .withApiBaseUrl(env("RAMPART_URL", "http://127.0.0.1:3000"))
                    .withTimeout(Integer.parseInt(env("RAMPART_TIMEOUT_MS", "5000")))
                    .build());
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    static String env(String name, String fallback) {
        String v = System.getenv(name);
        return v == null || v.isEmpty() ? fallback : v;
    }

    /** An HttpServletRequest as a servlet container would hand it to the application (only what the SDK reads). */
    static HttpServletRequest servletRequest(Map<String, String> headers, String remoteAddr) {
        return (HttpServletRequest) Proxy.newProxyInstance(DriveCastle.class.getClassLoader(), new Class<?>[]{HttpServletRequest.class}, (proxy, method, args) -> {
            switch (method.getName()) {
                case "getHeaderNames":
                    return Collections.enumeration(headers.keySet());
                case "getHeader": {
                    String wanted = ((String) args[0]).toLowerCase(Locale.ROOT);
                    for (Map.Entry<String, String> h : headers.entrySet()) if (h.getKey().toLowerCase(Locale.ROOT).equals(wanted)) return h.getValue();
                    return null;
                }
                case "getCookies": {
                    String raw = headers.get("Cookie");
                    if (raw == null) return null;
                    List<Cookie> cookies = new ArrayList<>();
                    for (String part : raw.split(";\\s*")) {
                        int eq = part.indexOf('=');
                        if (eq > 0) cookies.add(new Cookie(part.substring(0, eq), part.substring(eq + 1)));
                    }
                    return cookies.toArray(new Cookie[0]);
                }
                case "getRemoteAddr":
                    return remoteAddr;
                case "toString":
                    return "HttpServletRequest(" + remoteAddr + ")";
                case "hashCode":
                    return System.identityHashCode(proxy);
                case "equals":
                    return proxy == args[0];
                default:
                    throw new UnsupportedOperationException("the driver's request does not offer " + method.getName());
            }
        });
    }

    // ---------------------------------------------------------------- results

    static Map<String, Object> verdict(Verdict v) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("action", v.getAction() == null ? null : v.getAction().name().toLowerCase(Locale.ROOT));
        m.put("user_id", v.getUserId());
        m.put("device_token", v.getDeviceToken());
        m.put("risk", v.getRisk());
        m.put("failover", v.isFailover());
        m.put("failover_reason", v.getFailoverReason());
        m.put("internal", v.getInternal());
        return m;
    }

    static Map<String, Object> device(CastleUserDevice d) {
        if (d == null) return null;
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("token", d.getToken());
        m.put("risk", d.getRisk());
        m.put("created_at", d.getCreatedAt());
        m.put("last_seen_at", d.getLastSeenAt());
        m.put("approved_at", d.getApprovedAt());
        m.put("escalated_at", d.getEscalatedAt());
        m.put("mitigated_at", d.getMitigatedAt());
        if (d.getContext() != null) {
            m.put("ip", d.getContext().getIp());
            m.put("type", d.getContext().getType());
            m.put("browser", d.getContext().getUserAgent() == null ? null : d.getContext().getUserAgent().getBrowser());
        }
        return m;
    }

    static Map<String, Object> devices(CastleUserDevices list) {
        if (list == null) return null;
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("total_count", list.getTotalCount());
        List<Object> data = new ArrayList<>();
        if (list.getDevices() != null) for (CastleUserDevice d : list.getDevices()) data.add(device(d));
        m.put("data", data);
        return m;
    }

    static Map<String, Object> typed(Double risk, Map<String, Object> signals, io.castle.client.model.generated.Policy policy, String deviceToken) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("risk", risk);
        m.put("signals", signals == null ? null : new ArrayList<>(signals.keySet()));
        Map<String, Object> p = new LinkedHashMap<>();
        if (policy != null) {
            p.put("action", policy.getAction() == null ? null : policy.getAction().getValue());
            p.put("id", policy.getId());
            p.put("name", policy.getName());
        }
        m.put("policy", p);
        m.put("device_token", deviceToken);
        return m;
    }

    static JsonElement json(CastleResponse r) {
        JsonObject m = new JsonObject();
        m.addProperty("successful", r.isSuccessful());
        m.add("json", r.json());
        return m;
    }

    /** Waits for an async call's handler, as an application would join it. */
    static <T> AsyncCallbackHandler<T> handler(CompletableFuture<T> done) {
        return new AsyncCallbackHandler<T>() {
            @Override
            public void onResponse(T response) {
                done.complete(response);
            }

            @Override
            public void onException(Exception exception) {
                done.completeExceptionally(exception);
            }
        };
    }

    static <T> T await(CompletableFuture<T> done) throws Exception {
        try {
            return done.get(20, TimeUnit.SECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
            throw e.getCause() instanceof Exception ? (Exception) e.getCause() : e;
        }
    }

    /** Runs one step of a flow, recording its result or its error instead of stopping the flow. */
    static Object step(Supplier<Object> call) {
        try {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("ok", true);
            m.put("result", call.get());
            return m;
        } catch (RuntimeException e) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("ok", false);
            m.put("error", error(e));
            return m;
        }
    }

    static Map<String, Object> error(Throwable e) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("class", e.getClass().getSimpleName());
        m.put("message", e.getMessage());
        if (e instanceof CastleServerErrorException) {
            m.put("status", ((CastleServerErrorException) e).getResponseCode());
            m.put("body", ((CastleServerErrorException) e).getResponse());
        }
        return m;
    }

    // ---------------------------------------------------------------- scenarios

    static {
        // authenticate: every form, with the context taken from the application's request.
        SCENARIOS.put("authenticate_login", r -> verdict(r.castle.onRequest(r.request()).authenticate("$login.succeeded", r.user, null, ImmutableMap.of("email", r.email))));
        // Like the Go SDK's headline AuthenticateSimple: no traits at all.
        SCENARIOS.put("authenticate_simple", r -> verdict(r.castle.onRequest(r.request()).authenticate("$login.succeeded", r.user)));
        SCENARIOS.put("authenticate_message", r -> verdict(r.castle.onRequest(r.request()).authenticate(CastleMessage.builder("$login.succeeded")
                .userId(r.user).userTraits(ImmutableMap.of("email", r.email, "username", r.user)).properties(ImmutableMap.of("plan", "pro")).build())));
        SCENARIOS.put("authenticate_registration", r -> verdict(r.castle.onRequest(r.request()).authenticate("$registration.attempted", null, null, ImmutableMap.of("email", r.email))));
        SCENARIOS.put("authenticate_async", r -> {
            CompletableFuture<Verdict> done = new CompletableFuture<>();
            r.castle.onRequest(r.request()).authenticateAsync("$login.succeeded", r.user, null, ImmutableMap.of("email", r.email), handler(done));
            return verdict(await(done));
        });
        SCENARIOS.put("authenticate_build_send", r -> {
            CastleApi api = r.castle.onRequest(r.request());
            JsonElement request = api.buildAuthenticateRequest(CastleMessage.builder("$login.succeeded").userId(r.user).userTraits(ImmutableMap.of("email", r.email)).build());
            Map<String, Object> m = verdict(api.sendAuthenticateRequest(request));
            CompletableFuture<Verdict> done = new CompletableFuture<>();
            api.sendAuthenticateRequest(request, handler(done));
            m.put("async", verdict(await(done)));
            return m;
        });
        SCENARIOS.put("authenticate_merged_context", r -> verdict(r.castle.onRequest(r.request())
                .mergeContext(ImmutableMap.of("ip", env("RAMPART_MERGED_IP", "81.2.69.160")))
                .authenticate("$login.succeeded", r.user, null, ImmutableMap.of("email", r.email))));
        SCENARIOS.put("authenticate_do_not_track", r -> verdict(r.castle.onRequest(r.request(), true).authenticate("$login.succeeded", r.user)));

        // track: answered 204 whatever the body; the handler says whether the answer was a success.
        SCENARIOS.put("track_login_failed", r -> {
            CompletableFuture<Boolean> done = new CompletableFuture<>();
            r.castle.onRequest(r.request()).track("$login.failed", r.user, null, ImmutableMap.of("email", r.email), null, handler(done));
            return ImmutableMap.of("successful", await(done));
        });
        SCENARIOS.put("track_message", r -> {
            CompletableFuture<Boolean> done = new CompletableFuture<>();
            CastleApi api = r.castle.onRequest(r.request());
            api.track(CastleMessage.builder(env("RAMPART_TRACK_EVENT", "$challenge.succeeded")).userId(r.user).deviceToken(System.getenv("RAMPART_DEVICE_TOKEN")).build(), handler(done));
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("successful", await(done));
            CompletableFuture<Boolean> again = new CompletableFuture<>();
            api.sendTrackRequest(api.buildTrackRequest(CastleMessage.builder("$logout.succeeded").userId(r.user).build()), handler(again));
            m.put("build_send_successful", await(again));
            return m;
        });
        // The fire-and-forget forms: the driver waits for the SDK's calls in flight before it exits.
        SCENARIOS.put("track_fire_and_forget", r -> {
            CastleApi api = r.castle.onRequest(r.request());
            api.track("$profile_update.succeeded", r.user);
            api.track("$password_reset_request.failed", null, null, ImmutableMap.of("email", r.email));
            api.track("$review.resolved", r.user, "review-1");
            return ImmutableMap.of("sent", 3);
        });

        // The newer calls: maps as the application builds them, and the SDK's typed models.
        SCENARIOS.put("risk_map", r -> json(r.castle.client().risk(ImmutableMap.builder()
                .put("type", "$login").put("status", "$succeeded")
                .put("user", ImmutableMap.of("id", r.user, "email", r.email))
                .put("request_token", r.requestToken())
                .put("context", r.context()).build())));
        SCENARIOS.put("risk_typed", r -> {
            RiskResponse v = r.castle.client().risk(new Risk().type(Risk.TypeEnum.LOGIN).status(Risk.StatusEnum.SUCCEEDED)
                    .user(new User().id(r.user).email(r.email)).requestToken(r.requestToken()).context(r.typedContext(r.ip)));
            return typed(v.getRisk(), v.getSignals(), v.getPolicy(), v.getDevice() == null ? null : v.getDevice().getToken());
        });
        SCENARIOS.put("filter_map", r -> json(r.castle.client().filter(ImmutableMap.builder()
                .put("type", "$registration").put("status", "$attempted")
                .put("params", ImmutableMap.of("email", r.email))
                .put("request_token", r.requestToken())
                .put("context", r.context()).build())));
        SCENARIOS.put("filter_typed", r -> {
            FilterResponse v = r.castle.client().filter(new Filter().type(Filter.TypeEnum.REGISTRATION)
                    .params(new FilterRequestParams().email(r.email)).requestToken(r.requestToken()).context(r.typedContext(r.ip)));
            return typed(v.getRisk(), v.getSignals(), v.getPolicy(), null);
        });
        SCENARIOS.put("log_map", r -> json(r.castle.client().log(ImmutableMap.builder()
                .put("type", "$login").put("status", "$failed")
                .put("user", ImmutableMap.of("id", r.user, "email", r.email))
                .put("context", r.context()).build())));
        SCENARIOS.put("log_typed", r -> json(r.castle.client().log(new Log().type(Log.TypeEnum.LOGIN).status(Log.StatusEnum.FAILED)
                .user(new User().id(r.user).email(r.email)).requestToken(r.requestToken()).context(r.typedContext(r.ip)))));

        // The device API, on the device a login of this scenario's user created.
        SCENARIOS.put("devices", r -> {
            Verdict login = r.castle.onRequest(r.request()).authenticate("$login.succeeded", r.user, null, ImmutableMap.of("email", r.email));
            CastleApi api = r.castle.client();
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("login", verdict(login));
            CastleUserDevices list = api.userDevices(r.user);
            m.put("list", devices(list));
            String token = list != null && list.getDevices() != null && !list.getDevices().isEmpty() ? list.getDevices().get(0).getToken() : login.getDeviceToken();
            m.put("get", device(api.device(token)));
            m.put("approve", device(api.approve(token)));
            m.put("report", device(api.report(token)));
            return m;
        });
        // 404 answers: the SDK returns null for devices and users it does not find.
        SCENARIOS.put("devices_unknown", r -> {
            CastleApi api = r.castle.client();
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("device", step(() -> device(api.device("no-such-device-token"))));
            m.put("approve", step(() -> device(api.approve("no-such-device-token"))));
            m.put("report", step(() -> device(api.report("no-such-device-token"))));
            m.put("user_devices", step(() -> devices(api.userDevices(r.user + "-never-seen"))));
            return m;
        });
        // Privacy: the SDK's removeUser is Rampart's purge; the user is gone afterwards.
        SCENARIOS.put("remove_user", r -> {
            r.castle.onRequest(r.request()).authenticate("$login.succeeded", r.user, null, ImmutableMap.of("email", r.email));
            CastleApi api = r.castle.client();
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("before", devices(api.userDevices(r.user)));
            m.put("removed", api.removeUser(r.user));
            m.put("after", step(() -> devices(api.userDevices(r.user))));
            return m;
        });
        // The generic calls an application can make on any path.
        SCENARIOS.put("generic", r -> {
            Verdict login = r.castle.onRequest(r.request()).authenticate("$login.succeeded", r.user, null, ImmutableMap.of("email", r.email));
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("get", step(() -> json(r.castle.get("/v1/users/" + r.user + "/devices"))));
            m.put("post", step(() -> json(r.castle.post("/v1/filter", ImmutableMap.builder().put("event", "$registration").put("user", ImmutableMap.of("email", r.email)).put("context", r.context()).build()))));
            m.put("put", step(() -> json(r.castle.put("/v1/devices/" + login.getDeviceToken() + "/approve"))));
            m.put("put_body", step(() -> json(r.castle.put("/v1/devices/" + login.getDeviceToken() + "/report", ImmutableMap.of()))));
            m.put("delete_body", step(() -> json(r.castle.delete("/v1/privacy/users", ImmutableMap.builder().put("identifier", r.email).put("identifier_type", "$email").build()))));
            m.put("delete", step(() -> json(r.castle.delete("/v1/privacy/users/" + r.user))));
            return m;
        });
        // Calls Castle offers that Rampart does not: they answer 404 and the SDK raises its not-found error.
        SCENARIOS.put("unsupported", r -> {
            CastleApi api = r.castle.onRequest(r.request());
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("impersonate_start", step(() -> api.impersonateStart(r.user, "admin@example.com")));
            m.put("impersonate_end", step(() -> api.impersonateEnd(r.user, "admin@example.com")));
            m.put("recover", step(() -> json(api.recover(r.user))));
            return m;
        });
        SCENARIOS.put("secure_user_id", r -> ImmutableMap.of("user_id", r.user, "signature", r.castle.secureUserID(r.user)));

        // Errors, as the application sees them.
        SCENARIOS.put("bad_secret_authenticate", r -> verdict(castle(env("RAMPART_BAD_SECRET", "sk_wrong_secret_000000000000")).onRequest(r.request()).authenticate("$login.succeeded", r.user, null, ImmutableMap.of("email", r.email))));
        SCENARIOS.put("bad_secret_risk", r -> json(castle(env("RAMPART_BAD_SECRET", "sk_wrong_secret_000000000000")).client().risk(ImmutableMap.builder()
                .put("event", "$login").put("user", ImmutableMap.of("id", r.user)).put("context", r.context()).build())));
        SCENARIOS.put("bad_secret_devices", r -> devices(castle(env("RAMPART_BAD_SECRET", "sk_wrong_secret_000000000000")).client().userDevices(r.user)));
        SCENARIOS.put("invalid_ip_risk", r -> typed(null, null, r.castle.client().risk(new Risk().type(Risk.TypeEnum.LOGIN).user(new User().id(r.user)).context(r.typedContext("999.1.1.1"))).getPolicy(), null));
        SCENARIOS.put("invalid_request_token_risk", r -> typed(null, null, r.castle.client().risk(new Risk().type(Risk.TypeEnum.LOGIN).user(new User().id(r.user))
                .requestToken(env("RAMPART_BAD_REQUEST_TOKEN", "test|risk:nine")).context(r.typedContext(r.ip))).getPolicy(), null));
        SCENARIOS.put("invalid_ip_authenticate", r -> verdict(r.castle.onRequest(servletRequest(ImmutableMap.of("User-Agent", UA), "999.1.1.1")).authenticate("$login.succeeded", r.user)));
        SCENARIOS.put("missing_user_authenticate", r -> verdict(r.castle.onRequest(r.request()).authenticate("$login.succeeded", null, null, ImmutableMap.of("email", r.email))));
    }

    public static void main(String[] args) {
        if (args.length == 0) {
            System.err.println("usage: DriveCastle <scenario>... | list");
            System.exit(2);
        }
        if (args.length == 1 && args[0].equals("list")) {
            System.out.println(GSON.toJson(SCENARIOS.keySet()));
            System.exit(0);
        }
        int index = Integer.parseInt(env("RAMPART_IP_INDEX", "0"));
        for (String name : args) {
            Scenario scenario = SCENARIOS.get(name);
            if (scenario == null) {
                System.err.println("unknown scenario " + name);
                System.exit(2);
            }
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("sdk", "castle-java");
            out.put("sdk_version", new CastleContext().getLibrary().getVersion());
            out.put("scenario", name);
            try {
                Object result = scenario.run(new Run(name, index++));
                out.put("ok", true);
                out.put("result", result);
            } catch (Exception e) {
                out.put("ok", false);
                out.put("error", error(e));
            }
            System.out.println(GSON.toJson(out));
        }
        awaitCallsInFlight();
        // OkHttp's dispatcher threads outlive the calls by a minute; the driver is done now.
        System.exit(0);
    }

    /**
     * Fire-and-forget calls (track without a handler) run on OkHttp's dispatcher threads, named
     * "OkHttp <url>" while a call runs. Wait (at most 20 s) until none is, as an application's
     * graceful shutdown would.
     */
    static void awaitCallsInFlight() {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (System.nanoTime() < until) {
            boolean busy = Thread.getAllStackTraces().keySet().stream().anyMatch(t -> t.getName().startsWith("OkHttp http"));
            if (!busy) return;
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                return;
            }
        }
    }
}
