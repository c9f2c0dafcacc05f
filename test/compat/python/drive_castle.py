#!/usr/bin/env python3
"""Drives Castle's official Python SDK (PyPI package `castle`, 6.x or 7.x) against Rampart.

Run with the python of .venv/castle6 or .venv/castle7 (see scripts/setup-compat.sh):

    RAMPART_URL=http://127.0.0.1:3000 RAMPART_SECRET=... .venv/castle7/bin/python \
        test/compat/python/drive_castle.py risk_login

Only the SDK's public API is used (configuration, Client, castle.api.*, webhooks.verify).
Exactly ONE JSON object is printed on stdout:

    {"sdk": "castle-python", "sdk_version": "7.3.0", "scenario": "...", "ok": true, "result": ...}
    {"sdk": ..., "scenario": ..., "ok": false, "error": {"class": "UnauthorizedError", "module": ...,
     "message": "...", "castle_error": true}}
    {"sdk": ..., "scenario": ..., "skipped": "reason"}

Multi-step scenarios (devices) put one {"ok", "result"|"error"} object per step in `result`.
Exit status: 0 when a JSON object was printed for a known scenario, 2 for usage errors.

Environment (all optional except RAMPART_URL / RAMPART_SECRET):
  RAMPART_URL          base URL, with or without the /v1 suffix (the Python SDK needs /v1; added)
  RAMPART_SECRET       API secret
  RAMPART_BAD_SECRET   secret used by bad_secret_* (default: RAMPART_SECRET + "-wrong")
  RAMPART_TIMEOUT_MS   SDK request_timeout in ms (default 5000; the SDK default is 1000)
  RAMPART_FAILOVER     SDK failover_strategy: allow (SDK default) | deny | challenge | throw
  RAMPART_EVENT_FORM   body form of risk/filter/log: "type" (type+status, default for 7.x),
                       "event" (event+status, default for 6.x), "dotted" (event "$login.succeeded")
  RAMPART_FILTER_FORM  identifier object of filter: "params" (default 7.x) or "user" (default 6.x)
  RAMPART_USER_ID, RAMPART_EMAIL, RAMPART_IP, RAMPART_USER_AGENT, RAMPART_CLIENT_ID,
  RAMPART_REQUEST_TOKEN, RAMPART_BAD_REQUEST_TOKEN, RAMPART_TIMESTAMP (sent as `timestamp`),
  RAMPART_DEVICE_TOKEN (devices / track_* scenarios), RAMPART_LIST_ID (list_items), RAMPART_PRIVACY_IDENTIFIER_TYPE ($id|$email)
  WEBHOOK_BODY (raw body) or WEBHOOK_BODY_B64 (base64 of the raw bytes), WEBHOOK_SIGNATURE
"""

import base64
import json
import os
import sys


def _sdk_version():
    try:
        from importlib.metadata import version

        return version("castle")
    except Exception:  # pragma: no cover - fallback for odd installs
        from castle.version import VERSION

        return VERSION


SDK_VERSION = _sdk_version()
MAJOR = int(SDK_VERSION.split(".")[0])

ENV = os.environ.get
USER_ID = ENV("RAMPART_USER_ID", "compat-user-1")
EMAIL = ENV("RAMPART_EMAIL", "compat-user-1@example.com")
IP = ENV("RAMPART_IP", "203.0.113.7")
USER_AGENT = ENV(
    "RAMPART_USER_AGENT",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 "
    "(KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
)
CLIENT_ID = ENV("RAMPART_CLIENT_ID", "")
REQUEST_TOKEN = ENV(
    "RAMPART_REQUEST_TOKEN", "test|device:chrome_on_mac|ip:us-ca|policy.action:allow|risk:0.1"
)
BAD_REQUEST_TOKEN = ENV("RAMPART_BAD_REQUEST_TOKEN", "invalid-request-token")
EVENT_FORM = ENV("RAMPART_EVENT_FORM", "type" if MAJOR >= 7 else "event")
FILTER_FORM = ENV("RAMPART_FILTER_FORM", "params" if MAJOR >= 7 else "user")


def emit(payload, code=0):
    out = {"sdk": "castle-python", "sdk_version": SDK_VERSION, "scenario": SCENARIO}
    out.update(payload)
    sys.stdout.write(json.dumps(out, default=str) + "\n")
    sys.stdout.flush()
    sys.exit(code)


def error_info(exc):
    try:
        from castle.errors import CastleError

        is_castle = isinstance(exc, CastleError)
    except Exception:  # pragma: no cover
        is_castle = False
    return {
        "class": exc.__class__.__name__,
        "module": exc.__class__.__module__,
        "message": str(exc),
        "castle_error": is_castle,
    }


def attempt(fn):
    """Runs one SDK call; returns {"ok": True, "result": ...} or {"ok": False, "error": ...}."""
    try:
        return {"ok": True, "result": fn()}
    except Exception as exc:  # noqa: BLE001 - we report whatever the SDK raised
        return {"ok": False, "error": error_info(exc)}


class Skip(Exception):
    pass


def configure(secret=None):
    # base_url is read from the global configuration when a Client / APIRequest is built, so it
    # must be set before constructing them.
    from castle.configuration import configuration

    url = ENV("RAMPART_URL")
    api_secret = secret if secret is not None else ENV("RAMPART_SECRET")
    if not url or not api_secret:
        emit({"ok": False, "error": {"class": "UsageError", "message": "RAMPART_URL and RAMPART_SECRET are required"}}, 2)
    base = url.rstrip("/")
    if not base.endswith("/v1"):
        base += "/v1"
    configuration.base_url = base
    configuration.api_secret = api_secret
    configuration.request_timeout = int(ENV("RAMPART_TIMEOUT_MS", "5000"))
    if ENV("RAMPART_FAILOVER"):
        configuration.failover_strategy = ENV("RAMPART_FAILOVER")
    return configuration


class FakeRequest(object):
    """Minimal WSGI-like request, as Client.from_request expects (environ + COOKIES)."""

    def __init__(self, ip):
        self.environ = {
            "REQUEST_METHOD": "POST",
            "PATH_INFO": "/login",
            "REMOTE_ADDR": "127.0.0.1",
            "HTTP_HOST": "app.example.com",
            "HTTP_USER_AGENT": USER_AGENT,
            "HTTP_ACCEPT": "text/html,application/xhtml+xml",
            "HTTP_ACCEPT_LANGUAGE": "en-US,en;q=0.9",
            "HTTP_X_FORWARDED_FOR": ip,
            "HTTP_COOKIE": "session=abc",
        }
        self.COOKIES = {"session": "abc"}
        if CLIENT_ID:
            self.environ["HTTP_X_CASTLE_CLIENT_ID"] = CLIENT_ID
            self.COOKIES["__cid"] = CLIENT_ID


def client(ip=None, secret=None):
    configure(secret)
    from castle.client import Client

    options = {}
    if ENV("RAMPART_TIMESTAMP"):
        options["timestamp"] = ENV("RAMPART_TIMESTAMP")
    if ip is not None:
        # also override explicitly, so the value does not depend on proxy-stripping rules
        options["context"] = {"ip": ip}
    return Client.from_request(FakeRequest(ip or IP), options)


def event_fields(kind, status):
    if EVENT_FORM == "type":
        return {"type": kind, "status": status}
    if EVENT_FORM == "event":
        return {"event": kind, "status": status}
    if EVENT_FORM == "dotted":
        return {"event": kind + "." + status.lstrip("$")}
    raise Skip("unknown RAMPART_EVENT_FORM " + EVENT_FORM)


def need(major, what):
    if MAJOR != major:
        raise Skip("%s is not offered by castle %s (only by %d.x)" % (what, SDK_VERSION, major))


def risk_options(token=None):
    opts = event_fields("$login", "$succeeded")
    opts.update({"user": {"id": USER_ID, "email": EMAIL}, "request_token": token or REQUEST_TOKEN})
    return opts


# ---------------------------------------------------------------- scenarios


def s_authenticate_login():
    need(6, "authenticate()")
    c = client()
    return attempt(lambda: c.authenticate({
        "event": "$login.succeeded",
        "user_id": USER_ID,
        "user_traits": {"email": EMAIL},
    }))


def s_bad_secret_authenticate():
    need(6, "authenticate()")
    c = client(secret=ENV("RAMPART_BAD_SECRET", (ENV("RAMPART_SECRET") or "") + "-wrong"))
    return attempt(lambda: c.authenticate({
        "event": "$login.succeeded", "user_id": USER_ID, "user_traits": {"email": EMAIL},
    }))


def s_invalid_ip_authenticate():
    need(6, "authenticate()")
    c = client(ip="999.1.1.1")
    return attempt(lambda: c.authenticate({
        "event": "$login.succeeded", "user_id": USER_ID, "user_traits": {"email": EMAIL},
    }))


def s_track_login_failed():
    need(6, "track() (7.x replaced it with log())")
    c = client()
    return attempt(lambda: c.track({
        "event": "$login.failed",
        "user_id": USER_ID,
        "properties": {"email": EMAIL},
    }))


def _track_device(event):
    need(6, "track()")
    token = ENV("RAMPART_DEVICE_TOKEN")
    if not token:
        raise Skip("RAMPART_DEVICE_TOKEN is required")
    c = client()
    return attempt(lambda: c.track({"event": event, "device_token": token}))


def s_track_challenge_succeeded():
    return _track_device("$challenge.succeeded")


def s_track_review_escalated():
    return _track_device("$review.escalated")


def s_risk_login():
    c = client()
    return attempt(lambda: c.risk(risk_options()))


def s_filter_registration():
    c = client()
    opts = event_fields("$registration", "$attempted")
    opts["request_token"] = REQUEST_TOKEN
    opts[FILTER_FORM] = {"email": EMAIL}
    return attempt(lambda: c.filter(opts))


def s_log_event():
    c = client()
    opts = event_fields("$login", "$failed")
    opts.update({"user": {"id": USER_ID, "email": EMAIL}, "request_token": REQUEST_TOKEN})
    return attempt(lambda: c.log(opts))


def s_devices():
    need(6, "the device API")
    configure()
    from castle.api.get_devices_for_user import APIGetDevicesForUser
    from castle.api.get_device import APIGetDevice
    from castle.api.approve_device import APIApproveDevice
    from castle.api.report_device import APIReportDevice

    steps = {"list": attempt(lambda: APIGetDevicesForUser.call(USER_ID))}
    token = ENV("RAMPART_DEVICE_TOKEN")
    if not token and steps["list"]["ok"]:
        data = (steps["list"]["result"] or {}).get("data") or []
        token = data[0].get("token") if data else None
    steps["device_token"] = token
    if token:
        steps["get"] = attempt(lambda: APIGetDevice.call(token))
        steps["approve"] = attempt(lambda: APIApproveDevice.call(token))
        steps["report"] = attempt(lambda: APIReportDevice.call(token))
    ok = all(v.get("ok") for k, v in steps.items() if isinstance(v, dict))
    return {"ok": ok and bool(token), "result": steps}


def _privacy(method):
    need(7, "the privacy API")
    configure()
    from castle.client import Client

    id_type = ENV("RAMPART_PRIVACY_IDENTIFIER_TYPE", "$id")
    ident = EMAIL if id_type == "$email" else USER_ID
    c = Client()
    return attempt(lambda: getattr(c, method)({"identifier": ident, "identifier_type": id_type}))


def s_privacy_purge():
    return _privacy("delete_user_data")


def s_privacy_request():
    return _privacy("request_user_data")


def _steps_ok(steps):
    return all(v.get("ok") for v in steps.values() if isinstance(v, dict))


def s_lists():
    """Every lists command of the SDK, in order, on one list: create, get all, get, query, update, delete."""
    need(7, "the lists API")
    configure()
    from castle.client import Client

    c = Client()
    name = "compat list " + USER_ID
    steps = {"create": attempt(lambda: c.create_list({"name": name, "color": "$red", "primary_field": "ip", "description": "made by the SDK"}))}
    if not steps["create"]["ok"]:
        return {"ok": False, "result": steps}
    list_id = steps["create"]["result"]["id"]
    steps["get_all"] = attempt(lambda: c.get_all_lists())
    steps["get"] = attempt(lambda: c.get_list({"list_id": list_id}))
    steps["query"] = attempt(lambda: c.query_lists({"filters": [{"field": "name", "op": "$eq", "value": name}], "sort": {"field": "created_at", "order": "desc"}}))
    steps["update"] = attempt(lambda: c.update_list({"list_id": list_id, "name": name + " (renamed)", "color": "$blue"}))
    steps["delete"] = attempt(lambda: c.delete_list({"list_id": list_id}))
    steps["get_deleted"] = attempt(lambda: c.get_list({"list_id": list_id}))
    return {"ok": _steps_ok({k: v for k, v in steps.items() if k != "get_deleted"}), "result": steps}


def s_list_items():
    """Every list-items command of the SDK on RAMPART_LIST_ID (an IP list), then a risk call from RAMPART_IP."""
    need(7, "the list items API")
    configure()
    from castle.client import Client

    c = Client()
    list_id = ENV("RAMPART_LIST_ID")
    author = {"type": "$analyst_email", "identifier": "analyst@example.com"}
    steps = {"create": attempt(lambda: c.create_list_item({"list_id": list_id, "author": author, "primary_value": IP, "comment": "seen in an incident"}))}
    if not steps["create"]["ok"]:
        return {"ok": False, "result": steps}
    item_id = steps["create"]["result"]["id"]
    steps["create_batch"] = attempt(lambda: c.create_batch_list_items({"list_id": list_id, "items": [{"author": author, "primary_value": "203.0.113.0/24"}, {"author": author, "primary_value": "2001:db8::/32"}]}))
    steps["get"] = attempt(lambda: c.get_list_item({"list_id": list_id, "list_item_id": item_id}))
    steps["query"] = attempt(lambda: c.query_list_items({"list_id": list_id, "filters": [{"field": "primary_value", "op": "$eq", "value": IP}], "sort": {"field": "created_at", "order": "asc"}}))
    steps["count"] = attempt(lambda: c.count_list_items({"list_id": list_id}))
    steps["update"] = attempt(lambda: c.update_list_item({"list_id": list_id, "list_item_id": item_id, "comment": "confirmed"}))
    steps["archive"] = attempt(lambda: c.archive_list_item({"list_id": list_id, "list_item_id": item_id}))
    steps["unarchive"] = attempt(lambda: c.unarchive_list_item({"list_id": list_id, "list_item_id": item_id}))
    steps["risk"] = attempt(lambda: client(IP).risk(risk_options()))
    return {"ok": _steps_ok(steps), "result": steps}


def s_bad_secret_risk():
    c = client(secret=ENV("RAMPART_BAD_SECRET", (ENV("RAMPART_SECRET") or "") + "-wrong"))
    return attempt(lambda: c.risk(risk_options()))


def s_invalid_ip_risk():
    c = client(ip="999.1.1.1")
    return attempt(lambda: c.risk(risk_options()))


def s_invalid_request_token_risk():
    c = client()
    return attempt(lambda: c.risk(risk_options(BAD_REQUEST_TOKEN)))


def s_webhook_verify():
    configure()
    from castle.webhooks.verify import WebhooksVerify
    from requests.structures import CaseInsensitiveDict

    if ENV("WEBHOOK_BODY_B64") is not None:
        body = base64.b64decode(ENV("WEBHOOK_BODY_B64"))
    elif ENV("WEBHOOK_BODY") is not None:
        body = ENV("WEBHOOK_BODY").encode("utf-8")
    else:
        raise Skip("WEBHOOK_BODY or WEBHOOK_BODY_B64 is required")

    class Webhook(object):  # what a framework request offers: raw body + case-insensitive headers
        data = body
        headers = CaseInsensitiveDict({"X-Castle-Signature": ENV("WEBHOOK_SIGNATURE", "")})

    out = attempt(lambda: WebhooksVerify.call(Webhook))
    out["verified"] = out["ok"]
    return out


SCENARIOS = {
    "authenticate_login": s_authenticate_login,
    "bad_secret_authenticate": s_bad_secret_authenticate,
    "invalid_ip_authenticate": s_invalid_ip_authenticate,
    "track_login_failed": s_track_login_failed,
    "track_challenge_succeeded": s_track_challenge_succeeded,
    "track_review_escalated": s_track_review_escalated,
    "risk_login": s_risk_login,
    "filter_registration": s_filter_registration,
    "log_event": s_log_event,
    "devices": s_devices,
    "privacy_purge": s_privacy_purge,
    "privacy_request": s_privacy_request,
    "lists": s_lists,
    "list_items": s_list_items,
    "bad_secret_risk": s_bad_secret_risk,
    "invalid_ip_risk": s_invalid_ip_risk,
    "invalid_request_token_risk": s_invalid_request_token_risk,
    "webhook_verify": s_webhook_verify,
}

SCENARIO = sys.argv[1] if len(sys.argv) > 1 else ""

if __name__ == "__main__":
    if SCENARIO == "list":
        emit({"ok": True, "result": sorted(SCENARIOS)})
    fn = SCENARIOS.get(SCENARIO)
    if fn is None:
        emit({"ok": False, "error": {"class": "UsageError", "message": "unknown scenario %r; known: %s" % (SCENARIO, ", ".join(sorted(SCENARIOS)))}}, 2)
    try:
        outcome = fn()
    except Skip as skip:
        emit({"skipped": str(skip)})
    except Exception as exc:  # driver-side failure outside an SDK call
        emit({"ok": False, "error": error_info(exc), "driver_error": True})
    emit(outcome)
