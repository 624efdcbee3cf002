#!/usr/bin/env python3
"""The map console (`/`) in a real headless browser (Debian's chromium), driven over the Chrome
DevTools Protocol with real mouse clicks and typing.

Starts `dbeacon serve` on a temporary database with the samples (no tile background: the test is
offline), signs in as Anna and checks, against the API itself:
  * the beacons Anna may see in the viewport are listed and drawn (SVG paths; the screenshot has
    the perimeters' colour), and the private beacons she may not see are not;
  * a click on a beacon answers "nearby here" exactly as GET /v1/nearby does at that point;
  * a polygon and a circle drawn with the mouse become beacons (POST /v1/beacons) with the
    clicked corners / radius, and appear on the map;
  * walking into the new polygon reports a fix and shows the beacon.entered event; an event
    produced outside the page (a fix posted through the API) arrives through the live stream;
  * a beacon that moves with its owner moves on the map without any action in the page;
  * signing out forgets the token; no script error, and no request leaves this server.
Screenshots go to $DBEACON_CONSOLE_SHOTS (default: a temporary folder, removed).

    scripts/console-test.py [--keep-shots DIR] [-v]
"""
import argparse
import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import zlib

import websocket  # websocket-client, from Tests/Reference/requirements.txt

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--keep-shots", help="write the screenshots to this folder")
parser.add_argument("-v", "--verbose", action="store_true")
args = parser.parse_args()


def log(message):
    if args.verbose:
        print(message, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)
    log(f"ok: {message}")


class API:
    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}"

    def call(self, method, path, token, body=None):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base + path, data=data, method=method,
                                         headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            raise Failure(f"{method} {path} answered {error.code}: {error.read().decode()}")

    def all_beacons(self, token):
        features, cursor = [], None
        while True:
            page = self.call("GET", "/v1/beacons?limit=500" + (f"&cursor={cursor}" if cursor else ""), token)
            features += page["features"]
            cursor = page["next_cursor"]
            if not cursor:
                return features


class Browser:
    """One page of a headless chromium, over the DevTools protocol."""

    def __init__(self, work):
        self.profile = os.path.join(work, "chrome")
        chromium = shutil.which("chromium") or shutil.which("chromium-browser")
        if not chromium:
            raise Failure("chromium is not installed (scripts/test.sh installs Debian's chromium)")
        self.process = subprocess.Popen(
            [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
             "--no-default-browser-check", "--disable-extensions", "--disable-background-networking", "--disable-sync",
             "--disable-component-update", "--remote-debugging-port=0", f"--user-data-dir={self.profile}",
             "--window-size=1280,800", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "chromium.log"), "w"))
        port_file = os.path.join(self.profile, "DevToolsActivePort")
        for _ in range(300):
            if os.path.exists(port_file) and open(port_file).read().strip():
                break
            if self.process.poll() is not None:
                raise Failure("chromium exited:\n" + open(os.path.join(work, "chromium.log")).read()[-3000:])
            time.sleep(0.1)
        else:
            raise Failure("chromium did not open its DevTools port")
        port = int(open(port_file).read().split()[0])
        targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10))
        page = next(t for t in targets if t["type"] == "page")
        self.ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=30, suppress_origin=True)
        self.next_id = 0
        self.events = []
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable")

    def send(self, method, **params):
        self.next_id += 1
        my_id = self.next_id
        self.ws.send(json.dumps({"id": my_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == my_id:
                if "error" in message:
                    raise Failure(f"{method}: {message['error']}")
                return message.get("result", {})
            if "method" in message:
                self.events.append(message)

    def evaluate(self, expression):
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise Failure(f"page script failed: {expression}\n{result['exceptionDetails']}")
        return result["result"].get("value")

    def wait(self, expression, what, timeout=15):
        deadline = time.time() + timeout
        while time.time() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.1)
        raise Failure(f"timed out waiting for {what}")

    def click_at(self, x, y):
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)
        time.sleep(0.05)

    def click(self, selector):
        box = self.evaluate(f"(() => {{ const r = document.querySelector({json.dumps(selector)}).getBoundingClientRect();"
                            " return [r.left + r.width / 2, r.top + r.height / 2]; })()")
        self.click_at(*box)

    def type_into(self, selector, text):
        self.click(selector)
        self.evaluate(f"document.querySelector({json.dumps(selector)}).value = ''")
        self.send("Input.insertText", text=text)

    def map_point(self, lat, lon):
        """The page coordinates of a position on the map."""
        return self.evaluate(f"(() => {{ const m = dbeaconConsole.map; const p = m.latLngToContainerPoint([{lat}, {lon}]);"
                             " const r = m.getContainer().getBoundingClientRect(); return [r.left + p.x, r.top + p.y]; })()")

    def map_latlng(self, x, y):
        """The position on the map under page coordinates (x, y)."""
        return self.evaluate(f"(() => {{ const m = dbeaconConsole.map; const r = m.getContainer().getBoundingClientRect();"
                             f" const l = m.containerPointToLatLng([{x} - r.left, {y} - r.top]); return [l.lat, l.lng]; }})()")

    def screenshot(self, path):
        data = base64.b64decode(self.send("Page.captureScreenshot", format="png")["data"])
        with open(path, "wb") as f:
            f.write(data)
        return data

    def close(self):
        try:
            self.ws.close()
        except Exception:
            pass
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()


def png_pixels(data):
    """(width, height, rows of RGB tuples) of an 8-bit RGB/RGBA, non-interlaced PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks, width = 8, [], 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and color in (2, 6) and interlace == 0, "unexpected PNG format"
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            chunks.append(body)
        pos += 12 + length
    raw = zlib.decompress(b"".join(chunks))
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        line = raw[y * (stride + 1):(y + 1) * (stride + 1)]
        kind, scan = line[0], bytearray(line[1:])
        for i in range(stride):
            left = scan[i - channels] if i >= channels else 0
            up, upper_left = previous[i], previous[i - channels] if i >= channels else 0
            if kind == 1:
                scan[i] = (scan[i] + left) & 255
            elif kind == 2:
                scan[i] = (scan[i] + up) & 255
            elif kind == 3:
                scan[i] = (scan[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - upper_left
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - upper_left)
                scan[i] = (scan[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else upper_left)) & 255
        rows.append([tuple(scan[x * channels:x * channels + 3]) for x in range(width)])
        previous = scan
    return width, height, rows


def set_mode(browser, mode):
    """Clicks a mode button; waits for an open popup to fade out (it would catch the next click)."""
    browser.click(f"button[data-mode='{mode}']")
    browser.wait("document.querySelector('.leaflet-popup') === null", "the popup to close")


def listed(browser, list_id="beacons"):
    return browser.evaluate(f"[...document.querySelectorAll('#{list_id} li[data-id]')].map(li => li.dataset.id)")


def main():
    binary = os.path.abspath(os.environ.get("DBEACON_BIN", os.path.join(ROOT, ".build", "debug", "dbeacon")))
    if not os.access(binary, os.X_OK):
        sys.exit(f"console-test.py: {binary} is not built (swift build first)")
    work = tempfile.mkdtemp(prefix="dbeacon-console-")
    shots = args.keep_shots or os.environ.get("DBEACON_CONSOLE_SHOTS") or os.path.join(work, "shots")
    os.makedirs(shots, exist_ok=True)
    port = free_port()
    server = subprocess.Popen([binary, "serve", "--db", os.path.join(work, "db.sqlite"), "--samples", "samples", "--port", str(port),
                               "--admin-token", "console-admin", "--map-tiles", "none", "--log-level", "warning"],
                              cwd=ROOT, stdout=open(os.path.join(work, "serve.log"), "w"), stderr=subprocess.STDOUT)
    browser = None
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1)
                break
            except OSError:
                if server.poll() is not None:
                    raise Failure("the server did not start:\n" + open(os.path.join(work, "serve.log")).read())
                time.sleep(0.1)
        browser = Browser(work)
        run(browser, API(port), port, shots)
        print(f"console-test.py: the map console works in headless chromium (screenshots in {shots})"
              if args.keep_shots or os.environ.get("DBEACON_CONSOLE_SHOTS") else
              "console-test.py: the map console works in headless chromium")
        return 0
    except Failure as failure:
        print(f"console-test.py: FAILED: {failure}", file=sys.stderr)
        if browser:
            try:
                browser.screenshot(os.path.join(shots, "failure.png"))
                print(f"  screenshot: {os.path.join(shots, 'failure.png')}", file=sys.stderr)
            except Exception:
                pass
        print("  server log:\n" + open(os.path.join(work, "serve.log")).read()[-3000:], file=sys.stderr)
        if not (args.keep_shots or os.environ.get("DBEACON_CONSOLE_SHOTS")):
            shutil.copytree(shots, os.path.join(tempfile.gettempdir(), "dbeacon-console-failure"), dirs_exist_ok=True)
        return 1
    finally:
        if browser:
            browser.close()
        server.terminate()
        server.wait()
        shutil.rmtree(work, ignore_errors=True)


def run(browser, api, port, shots):
    anna, ben = "demo-token-anna", "demo-token-ben"
    origin = f"http://127.0.0.1:{port}"
    browser.send("Page.navigate", url=origin + "/")
    browser.wait("document.readyState === 'complete' && typeof dbeaconConsole === 'object'", "the console to load")

    # Signing in with a wrong token says so and stays signed out.
    browser.type_into("#token", "not-a-token")
    browser.click("#signin")
    browser.wait("document.getElementById('status').textContent.includes('not valid')", "the bad-token message")
    check(browser.evaluate("document.getElementById('login').hidden === false"), "a bad token is refused")

    # Sign in as Anna: the view fits her beacons and lists those in view.
    browser.type_into("#token", anna)
    browser.click("#signin")
    browser.wait("document.getElementById('who').textContent === 'usr_anna'", "Anna to be signed in")
    browser.wait("document.querySelectorAll('#beacons li[data-id]').length > 0", "the beacons in view")
    check(browser.evaluate("getComputedStyle(document.getElementById('login')).display === 'none'"),
          "the sign-in form is gone once signed in")
    time.sleep(0.5)  # let a refresh triggered by the first fit settle
    bounds = browser.evaluate("(() => { const b = dbeaconConsole.map.getBounds();"
                              " return [b.getWest(), b.getSouth(), b.getEast(), b.getNorth()]; })()")
    visible = api.all_beacons(anna)
    everything = api.all_beacons("console-admin")

    def in_view(f):
        lon, lat = f["geometry"]["coordinates"]
        return bounds[0] <= lon <= bounds[2] and bounds[1] <= lat <= bounds[3]

    expected = {f["id"] for f in visible if in_view(f)}
    shown = set(listed(browser))
    check(len(expected) >= 10, f"the first view holds Anna's sample beacons ({len(expected)} in view)")
    check(expected <= shown, f"every beacon Anna may see in view is listed (missing: {sorted(expected - shown)})")
    visible_ids = {f["id"] for f in visible}
    check(shown <= visible_ids, "nothing is listed that the API does not show Anna")
    hidden = {f["id"] for f in everything if in_view(f)} - visible_ids
    check(len(hidden) > 0 and not (hidden & shown), f"the {len(hidden)} private beacons of others in view are not listed")
    names = browser.evaluate("document.body.innerText")
    hidden_names = [f["properties"]["name"] for f in everything if f["id"] in hidden]
    check(not any(n in names for n in hidden_names if n not in {f["properties"]["name"] for f in visible}),
          "no private beacon's name appears on the page")
    paths = browser.evaluate("document.querySelectorAll('.leaflet-overlay-pane path').length")
    check(paths >= len(shown), f"the beacons are drawn ({paths} SVG paths for {len(shown)} beacons)")

    png = browser.screenshot(os.path.join(shots, "1-signed-in.png"))
    width, height, rows = png_pixels(png)
    blue = sum(1 for row in rows for (r, g, b) in row if b > 170 and r < 110 and g < 150 and b - r > 90)
    check(blue > 500, f"the screenshot shows the perimeters ({blue} pixels of the beacons' colour, {width}×{height})")

    # Nearby here: click a listed public beacon's location; the list is the API's answer there.
    target = next(f for f in visible if f["id"] in shown and f["properties"]["perimeter"]
                  and f["properties"]["perimeter"]["type"] == "Circle" and f["properties"]["visibility"] is None)
    lon, lat = target["geometry"]["coordinates"]
    x, y = browser.map_point(lat, lon)
    browser.click_at(x, y)
    browser.wait("document.querySelectorAll('#nearby li').length > 0", "the nearby answer")
    clat, clon = browser.map_latlng(x, y)
    answer = api.call("GET", f"/v1/nearby?lat={clat:.7f}&lon={clon:.7f}&limit=20&perimeter=none", anna)
    near = listed(browser, "nearby")
    check(near == [f["id"] for f in answer["features"]], f"nearby here lists what GET /v1/nearby answers ({len(near)} beacons)")
    check(target["id"] in near, f"the clicked beacon ({target['properties']['name']}) is nearby")

    # Draw a polygon with the mouse: four corners, Finish, name it, create.
    before = {f["id"] for f in api.all_beacons(anna)}
    set_mode(browser, "polygon")
    map_box = browser.evaluate("(() => { const r = dbeaconConsole.map.getContainer().getBoundingClientRect();"
                               " return [r.left, r.top, r.width, r.height]; })()")
    # Whole pixels: the browser delivers clicks at integer coordinates.
    cx, cy = round(map_box[0] + map_box[2] * 0.3), round(map_box[1] + map_box[3] * 0.3)
    corners = [(cx - 50, cy - 40), (cx + 50, cy - 40), (cx + 50, cy + 40), (cx - 50, cy + 40)]
    for corner in corners:
        browser.click_at(*corner)
    corner_positions = [browser.map_latlng(*c) for c in corners]
    browser.click("#finish")
    browser.wait("!document.getElementById('create').hidden", "the new beacon form")
    browser.type_into("#create-name", "Console square")
    browser.type_into("#create-tags", "console, test")
    browser.click("#create-submit")
    browser.wait("[...document.querySelectorAll('#beacons li .name')].some(n => n.textContent === 'Console square')",
                 "the drawn polygon to appear")
    created = [f for f in api.all_beacons(anna) if f["id"] not in before]
    check(len(created) == 1, "one beacon was created")
    square = created[0]
    props = square["properties"]
    check(props["name"] == "Console square" and props["tags"] == ["console", "test"] and props["owner"] == "usr_anna",
          "the polygon beacon has the name, tags and owner given")
    ring = props["perimeter"]["coordinates"][0]
    check(props["perimeter"]["type"] == "Polygon" and len(ring) == 5 and ring[0] == ring[-1], f"its perimeter is the clicked ring ({props['perimeter']})")
    # Within one pixel (the page and the test place the map's fractional offset slightly differently).
    a, b = browser.map_latlng(cx, cy), browser.map_latlng(cx + 1, cy + 1)
    pixel = max(abs(a[0] - b[0]), abs(a[1] - b[1]))
    for plat, plon in corner_positions:
        check(any(abs(v[0] - plon) < pixel and abs(v[1] - plat) < pixel for v in ring), f"corner {plat:.6f},{plon:.6f} is a vertex")

    # Draw a circle: centre, then a point on the edge 80 px to the right.
    set_mode(browser, "circle")
    ccx, ccy = round(map_box[0] + map_box[2] * 0.7), round(map_box[1] + map_box[3] * 0.7)
    browser.click_at(ccx, ccy)
    browser.click_at(ccx + 80, ccy)
    centre, edge = browser.map_latlng(ccx, ccy), browser.map_latlng(ccx + 80, ccy)
    radius = browser.evaluate(f"dbeaconConsole.map.distance({json.dumps(centre)}, {json.dumps(edge)})")
    browser.wait("!document.getElementById('create').hidden", "the new beacon form")
    browser.type_into("#create-name", "Console circle")
    browser.click("#create-submit")
    browser.wait("[...document.querySelectorAll('#beacons li .name')].some(n => n.textContent === 'Console circle')",
                 "the drawn circle to appear")
    circle = next(f for f in api.all_beacons(anna) if f["properties"]["name"] == "Console circle")
    perimeter = circle["properties"]["perimeter"]
    check(perimeter["type"] == "Circle" and abs(perimeter["radius_m"] - radius) <= 2,
          f"the circle has the drawn radius ({perimeter['radius_m']} m, drawn {radius:.1f} m)")
    check(abs(circle["geometry"]["coordinates"][0] - centre[1]) < pixel and abs(circle["geometry"]["coordinates"][1] - centre[0]) < pixel,
          "the circle is at the clicked centre")
    browser.screenshot(os.path.join(shots, "2-drawn.png"))

    # Walk into the square: the fix is reported and beacon.entered is shown.
    browser.wait("document.getElementById('stream-state').textContent === 'live'", "the live event stream")
    set_mode(browser, "walk")
    browser.click_at(cx, cy)
    browser.wait(f"(document.getElementById('inside').dataset.ids || '').split(',').includes('{square['id']}')",
                 "Anna to be inside the square")
    browser.wait("document.querySelector('#events li[data-type=\"beacon.entered\"]') !== null", "beacon.entered in the events")
    check(browser.evaluate("document.querySelectorAll('.leaflet-overlay-pane path').length") > paths, "Anna's position is drawn")

    # An event made outside the page (Anna's phone reports a fix far away) arrives through the stream.
    api.call("POST", "/v1/me/location", anna, {"lat": 48.70, "lon": 9.05, "accuracy_m": 5})
    browser.wait("document.querySelector('#events li[data-type=\"beacon.exited\"]') !== null", "beacon.exited from the stream")
    check(True, "an event from outside the page arrived through the live stream")
    browser.wait(f"!(document.getElementById('inside').dataset.ids || '').split(',').includes('{square['id']}')",
                 "the page to know that Anna left the square")

    # A beacon that moves with its owner: Ben's, in view; it moves when Ben's phone reports fixes.
    set_mode(browser, "explore")
    mlat, mlon = browser.map_latlng(map_box[0] + map_box[2] * 0.5, map_box[1] + map_box[3] * 0.2)
    api.call("POST", "/v1/me/location", ben, {"lat": mlat, "lon": mlon, "accuracy_m": 5})
    moving = api.call("POST", "/v1/beacons", ben, {"type": "Feature", "geometry": {"type": "Point", "coordinates": [mlon, mlat]},
                                                    "properties": {"name": "Ben's bike", "tracks_owner": True}})
    browser.evaluate("dbeaconConsole.map.panBy([1, 0]), null")  # any move of the view reads it again
    browser.wait(f"document.querySelector('#beacons li[data-id=\"{moving['id']}\"]') !== null", "Ben's moving beacon")
    nlat, nlon = browser.map_latlng(map_box[0] + map_box[2] * 0.6, map_box[1] + map_box[3] * 0.25)
    api.call("POST", "/v1/me/location", ben, {"lat": nlat, "lon": nlon, "accuracy_m": 5})
    browser.wait(f"Math.abs(Number(document.querySelector('#beacons li[data-id=\"{moving['id']}\"]').dataset.lat) - {nlat}) < 1e-6",
                 "the moving beacon to follow its owner", timeout=10)
    check(True, "the moving beacon follows its owner's fixes without any action in the page")
    browser.wait(f"(dbeaconConsole.state.trails.get('{moving['id']}') || []).length >= 2", "the moving beacon's trail")
    browser.screenshot(os.path.join(shots, "3-live.png"))

    # Sign out: the token is forgotten and nothing stays on the page.
    browser.click("#signout")
    check(browser.evaluate("sessionStorage.getItem('dbeacon.token') === null && "
                           "document.querySelectorAll('#beacons li').length === 0 && !document.getElementById('login').hidden"),
          "signing out forgets the token and clears the page")

    # No script errors, and every request went to this server.
    errors = [e for e in browser.events if e["method"] == "Runtime.exceptionThrown"
              or (e["method"] == "Runtime.consoleAPICalled" and e["params"]["type"] == "error")
              or (e["method"] == "Log.entryAdded" and e["params"]["entry"]["level"] == "error")]
    # (The one expected failure: the bad token's 401 at the start.)
    errors = [e for e in errors if not (e["method"] == "Log.entryAdded" and e["params"]["entry"].get("url", "").endswith("/v1/me")
                                        and "401" in e["params"]["entry"]["text"])]
    check(not errors, f"no script errors ({errors[:3]})")
    urls = {e["params"]["request"]["url"] for e in browser.events if e["method"] == "Network.requestWillBeSent"}
    outside = sorted(u for u in urls if not (u.startswith(origin + "/") or u.startswith("data:")))
    check(not outside, f"every request went to this server ({len(urls)} URLs; outside: {outside})")


if __name__ == "__main__":
    sys.exit(main())
