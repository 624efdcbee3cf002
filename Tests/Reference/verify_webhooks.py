"""Verifies webhook deliveries with the reference Standard Webhooks library from PyPI.

stdin:  {"deliveries": [{"secret": "whsec_…", "headers": {name: value}, "body": "…"}]}
stdout: {"results": [true | "error message", ...]}
"""
import json
import sys

from standardwebhooks.webhooks import Webhook

request = json.load(sys.stdin)
results = []
for d in request["deliveries"]:
    try:
        Webhook(d["secret"]).verify(d["body"], d["headers"])
        results.append(True)
    except Exception as e:  # the library raises WebhookVerificationError
        results.append(f"{type(e).__name__}: {e}")
json.dump({"results": results}, sys.stdout)
