#!/usr/bin/env python3
"""A webhook endpoint on loopback for trying DBeacon's webhooks: prints each delivery it
receives (the event's type and data) and whether its Standard Webhooks signature is valid.

  python3 scripts/webhook-receiver.py --port 9999 --secret whsec_…   # secret: from POST /v1/webhooks

Without --secret it prints deliveries without checking them. Listens on 127.0.0.1 only (the
server must run with --allow-private-webhooks to deliver there, as ./scripts/run.sh does).
With --log FILE it also appends each delivery as one JSON line.
"""
import argparse
import base64
import hashlib
import hmac
import json
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--port", type=int, default=9999)
parser.add_argument("--secret", help="the webhook's signing secret (whsec_…)")
parser.add_argument("--log", help="append each delivery to this file as a JSON line")
args = parser.parse_args()


def signature_ok(headers, body):
    """Standard Webhooks: v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}"> with the secret's key."""
    if not args.secret:
        return None
    key = base64.b64decode(args.secret.removeprefix("whsec_"))
    signed = f"{headers.get('webhook-id')}.{headers.get('webhook-timestamp')}.".encode() + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    given = [s.split(",", 1)[1] for s in headers.get("webhook-signature", "").split() if s.startswith("v1,")]
    return any(hmac.compare_digest(expected, g) for g in given)


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        ok = signature_ok(self.headers, body)
        try:
            event = json.loads(body)
        except ValueError:
            event = {"type": "?", "data": body.decode(errors="replace")}
        check = "" if ok is None else ("  signature ok" if ok else "  SIGNATURE INVALID")
        print(f"{event.get('type')}  {json.dumps(event.get('data'))}{check}", flush=True)
        if args.log:
            with open(args.log, "a") as f:
                f.write(json.dumps({"event": event, "signature_ok": ok}) + "\n")
        self.send_response(204 if ok is not False else 401)
        self.end_headers()

    def log_message(self, *_):
        pass


print(f"listening on http://127.0.0.1:{args.port}/hooks", file=sys.stderr, flush=True)
HTTPServer(("127.0.0.1", args.port), Receiver).serve_forever()
