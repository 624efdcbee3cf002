// DBeacon map console: a page on the public API (schema/openapi.yaml), nothing more. The token
// stays in this tab (sessionStorage) and goes only to this server, in the Authorization header.
// Everything a beacon's owner wrote (names, tags, descriptions) is inserted as text, never as HTML.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const PAGE = 500;          // the API's largest page
  const MAX_IN_VIEW = 2000;  // beacons drawn at most (4 pages)
  const MAX_EVENTS = 100;    // events listed at most
  const MOVING_POLL_MS = 3000;
  const colors = { mine: "#15803d", moving: "#c2410c", other: "#2563eb", draft: "#9333ea", you: "#dc2626" };

  const state = {
    token: null, me: null, config: null, mode: "explore",
    beacons: new Map(),      // id -> feature drawn now
    trails: new Map(),       // id -> [[lat, lon]] of a moving beacon
    seenEvents: new Set(), lastEventId: null, stream: null, viewSeq: 0,
    draft: null,             // {kind: "polygon"|"circle", points: [L.LatLng], radius}
    walk: [],                // the caller's reported positions
    inside: new Set(),       // the beacons the caller is inside
  };

  class ApiError extends Error {
    constructor(status, code, message, path) {
      super(message);
      Object.assign(this, { status, code, path });
    }
    describe() { return `${this.status} ${this.code ?? ""}: ${this.message}${this.path ? ` (${this.path})` : ""}`; }
  }

  async function api(method, path, body) {
    const headers = { Authorization: `Bearer ${state.token}`, Accept: "application/json" };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await response.text();
    let json = null;
    try { json = text ? JSON.parse(text) : null; } catch { /* not JSON: reported below */ }
    if (!response.ok) {
      const error = (json && json.error) || {};
      throw new ApiError(response.status, error.code, error.message || text || response.statusText, error.path);
    }
    return json;
  }

  // --- status line ---------------------------------------------------------------------------
  let statusTimer = null;
  function say(message, isError = false) {
    const el = $("status");
    el.textContent = message;
    el.className = "shown" + (isError ? " error" : "");
    clearTimeout(statusTimer);
    statusTimer = setTimeout(() => { el.className = ""; }, isError ? 8000 : 3000);
  }
  const fail = (error) => say(error instanceof ApiError ? error.describe() : String(error.message || error), true);

  // --- small DOM helpers ---------------------------------------------------------------------
  function el(tag, attributes = {}, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attributes)) {
      if (key === "text") node.textContent = value; else node.setAttribute(key, value);
    }
    for (const child of children) node.append(child);
    return node;
  }
  const tagsText = (tags) => (tags && tags.length ? tags.join(", ") : "");

  function popup(feature) {
    const p = feature.properties;
    const box = el("div", { class: "beacon-popup" }, el("strong", { text: p.name }), el("br"),
                   el("code", { text: feature.id }));
    if (p.tags && p.tags.length) box.append(el("div", { class: "tags", text: tagsText(p.tags) }));
    if (p.description) box.append(el("div", { text: p.description }));
    if (p.owner) box.append(el("div", { class: "tags", text: `owner ${p.owner}${p.tracks_owner ? " · moves with its owner" : ""}` }));
    if (p.distance_m !== undefined) box.append(el("div", { text: `${Math.round(p.distance_m)} m away` }));
    return box;
  }

  // --- the map -------------------------------------------------------------------------------
  let map, beaconLayer, trailLayer, markLayer, draftLayer, walkLayer;

  function setUpMap() {
    map = L.map("map", { zoomControl: true, worldCopyJump: true }).setView([20, 0], 2);
    if (state.config.tiles) {
      L.tileLayer(state.config.tiles, { maxZoom: 19, attribution: state.config.attribution }).addTo(map);
    }
    beaconLayer = L.layerGroup().addTo(map);
    trailLayer = L.layerGroup().addTo(map);
    walkLayer = L.layerGroup().addTo(map);
    markLayer = L.layerGroup().addTo(map);
    draftLayer = L.layerGroup().addTo(map);
    map.on("moveend", () => scheduleView());
    map.on("click", onMapClick);
    map.on("mousemove", onMouseMove);
    window.dbeaconConsole = { map, state }; // for the browser test and for curious operators
  }

  function colorOf(feature) {
    if (feature.properties.tracks_owner) return colors.moving;
    if (state.me && feature.properties.owner === state.me.id) return colors.mine;
    return colors.other;
  }

  function shapeOf(feature, style) {
    const [lon, lat] = feature.geometry.coordinates;
    const perimeter = feature.properties.perimeter;
    if (!perimeter) return null;
    if (perimeter.type === "Circle") return L.circle([lat, lon], { radius: perimeter.radius_m, ...style });
    return L.geoJSON(perimeter, { style: () => style });
  }

  function draw(features) {
    beaconLayer.clearLayers();
    state.beacons.clear();
    for (const feature of features) {
      const [lon, lat] = feature.geometry.coordinates;
      const color = colorOf(feature);
      // Not interactive: every click goes to the map (nearby, walk or draw, even on a beacon).
      const shape = shapeOf(feature, { color, weight: 2, fillOpacity: 0.12, interactive: false });
      const dot = L.circleMarker([lat, lon], { radius: 4, color, fillColor: color, fillOpacity: 1, weight: 1, interactive: false });
      L.featureGroup(shape ? [shape, dot] : [dot]).addTo(beaconLayer);
      state.beacons.set(feature.id, { feature });
      if (feature.properties.tracks_owner) {
        const trail = state.trails.get(feature.id) || [];
        const last = trail[trail.length - 1];
        if (!last || last[0] !== lat || last[1] !== lon) trail.push([lat, lon]);
        state.trails.set(feature.id, trail.slice(-200));
      }
    }
    trailLayer.clearLayers();
    for (const [id, trail] of state.trails) {
      if (state.beacons.has(id) && trail.length > 1) L.polyline(trail, { color: colors.moving, weight: 2, dashArray: "4 4", interactive: false }).addTo(trailLayer);
    }
    listBeacons(features);
  }

  function listBeacons(features) {
    const list = $("beacons");
    list.replaceChildren(...features.map((feature) => {
      const [lon, lat] = feature.geometry.coordinates;
      const item = el("li", { "data-id": feature.id, "data-lat": String(lat), "data-lon": String(lon) },
                      el("span", { class: "name", text: feature.properties.name }), " ",
                      el("span", { class: "tags", text: tagsText(feature.properties.tags) }));
      item.addEventListener("click", () => {
        map.panTo([lat, lon]);
        L.popup().setLatLng([lat, lon]).setContent(popup(feature)).openOn(map);
      });
      return item;
    }));
    $("view-count").textContent = features.length >= MAX_IN_VIEW ? `${features.length} (zoom in for more)` : String(features.length);
  }

  // The viewport as the API's bbox (west,south,east,north), padded so that perimeters whose
  // location lies just outside still show; west > east when it crosses the antimeridian.
  function viewBox() {
    const bounds = map.getBounds().pad(0.25);
    const south = Math.max(-90, bounds.getSouth()), north = Math.min(90, bounds.getNorth());
    let west = bounds.getWest(), east = bounds.getEast();
    if (east - west >= 360) { west = -180; east = 180; } else {
      const wrap = (x) => ((((x + 180) % 360) + 360) % 360) - 180;
      west = wrap(west); east = wrap(east);
      if (east === -180 && bounds.getEast() > bounds.getWest()) east = 180;
    }
    return [west, south, east, north].map((x) => x.toFixed(6)).join(",");
  }

  let viewTimer = null;
  function scheduleView() {
    clearTimeout(viewTimer);
    viewTimer = setTimeout(loadView, 200);
  }

  async function loadView() {
    if (!state.token) return;
    const seq = ++state.viewSeq;
    const tag = $("tag").value.trim();
    let features = [], cursor = null;
    try {
      do {
        const query = new URLSearchParams({ bbox: viewBox(), limit: String(PAGE) });
        if (tag) query.set("tag", tag);
        if (cursor) query.set("cursor", cursor);
        const page = await api("GET", `/v1/beacons?${query}`);
        features = features.concat(page.features);
        cursor = page.next_cursor;
      } while (cursor && features.length < MAX_IN_VIEW);
    } catch (error) {
      if (seq === state.viewSeq) fail(error);
      return;
    }
    if (seq === state.viewSeq) draw(features);
  }

  // Moving beacons (those that track their owner) are re-read every few seconds while in view.
  setInterval(() => {
    if (state.token && document.visibilityState === "visible" &&
        [...state.beacons.values()].some((b) => b.feature.properties.tracks_owner)) loadView();
  }, MOVING_POLL_MS);

  // --- clicks: nearby, walk, draw ------------------------------------------------------------
  const hints = {
    explore: "Click the map to see which beacons cover that point.",
    walk: "Click the map to report your location there; entering or leaving a beacon shows up as live events.",
    polygon: "Click the corners of the new beacon's perimeter, then Finish (or click the first corner again).",
    circle: "Click the centre of the new beacon, then a point on its edge.",
  };

  function setMode(mode) {
    if (state.me && state.me.admin && (mode === "walk" || mode === "polygon" || mode === "circle")) {
      say("The admin token has no location and cannot own beacons: sign in as a user for this.", true);
      return;
    }
    state.mode = mode;
    for (const button of document.querySelectorAll(".modes button")) {
      button.setAttribute("aria-pressed", String(button.dataset.mode === mode));
    }
    $("hint").textContent = hints[mode];
    map.closePopup();
    clearDraft();
    const drawing = mode === "polygon" || mode === "circle";
    map.getContainer().classList.toggle("drawing", drawing);
    if (drawing) map.doubleClickZoom.disable(); else map.doubleClickZoom.enable();
    $("drawing").hidden = mode !== "polygon";
  }

  function onMapClick(event) {
    if (!state.token) return;
    const { lat, lng } = event.latlng.wrap();
    if (state.mode === "explore") nearby(lat, lng);
    else if (state.mode === "walk") walk(lat, lng);
    else if (state.mode === "polygon") addCorner(event.latlng);
    else if (state.mode === "circle") circlePoint(event.latlng);
  }

  async function nearby(lat, lon) {
    markLayer.clearLayers();
    L.circleMarker([lat, lon], { radius: 6, color: colors.you, weight: 2, interactive: false }).addTo(markLayer);
    const query = new URLSearchParams({ lat: lat.toFixed(7), lon: lon.toFixed(7), limit: "20", perimeter: "none" });
    const tag = $("tag").value.trim();
    if (tag) query.set("tag", tag);
    try {
      const answer = await api("GET", `/v1/nearby?${query}`);
      $("nearby-section").hidden = false;
      $("nearby-where").textContent = `${lat.toFixed(5)}, ${lon.toFixed(5)}`;
      const items = answer.features.map((f) => el("li", { "data-id": f.id },
        el("span", { class: "name", text: f.properties.name }), " ",
        el("span", { class: "tags", text: `${Math.round(f.properties.distance_m)} m ${tagsText(f.properties.tags)}` })));
      $("nearby").replaceChildren(...(items.length ? items : [el("li", { class: "none", text: "No beacon covers this point." })]));
      // The answer at the point too: the nearest beacon in full, and how many others cover it.
      const content = answer.features.length ? popup(answer.features[0]) : el("div", { text: "No beacon covers this point." });
      if (answer.features.length > 1) content.append(el("div", { class: "tags", text: `and ${answer.features.length - 1} more (see Nearby here)` }));
      L.popup({ autoPan: false }).setLatLng([lat, lon]).setContent(content).openOn(map);
    } catch (error) { fail(error); }
  }

  async function walk(lat, lon) {
    try {
      const answer = await api("POST", "/v1/me/location",
                               { lat: Number(lat.toFixed(7)), lon: Number(lon.toFixed(7)), accuracy_m: 5, timestamp: new Date().toISOString() });
      state.walk.push([lat, lon]);
      walkLayer.clearLayers();
      if (state.walk.length > 1) L.polyline(state.walk, { color: colors.you, weight: 3, interactive: false }).addTo(walkLayer);
      L.circleMarker([lat, lon], { radius: 7, color: colors.you, fillColor: colors.you, fillOpacity: 0.8, interactive: false }).addTo(walkLayer);
      $("walk-section").hidden = false;
      $("walk-where").textContent = `${lat.toFixed(5)}, ${lon.toFixed(5)}`;
      state.inside = new Set(answer.inside);
      showInside();
      for (const event of answer.events) showEvent(event);
    } catch (error) { fail(error); }
  }

  // Where the caller is, as this page's reports and the enter/exit events (from any device) say.
  function showInside() {
    const ids = [...state.inside];
    const names = ids.map((id) => state.beacons.get(id)?.feature.properties.name || id);
    $("inside").textContent = names.length ? names.join(", ") : "none";
    $("inside").dataset.ids = ids.join(",");
  }

  function clearDraft() {
    state.draft = null;
    draftLayer.clearLayers();
    $("finish").disabled = true;
    $("create").hidden = true;
  }

  function addCorner(latlng) {
    if (!state.draft) state.draft = { kind: "polygon", points: [] };
    const points = state.draft.points;
    if (points.length >= 3 && map.latLngToContainerPoint(latlng).distanceTo(map.latLngToContainerPoint(points[0])) < 10) {
      finishPolygon();
      return;
    }
    points.push(latlng);
    redrawDraft();
    $("finish").disabled = points.length < 3;
  }

  function redrawDraft(cursor) {
    draftLayer.clearLayers();
    const draft = state.draft;
    if (!draft) return;
    // Not interactive: the preview under the cursor must not swallow the next click.
    const style = { color: colors.draft, weight: 2, dashArray: "6 4", interactive: false };
    if (draft.kind === "polygon") {
      const line = cursor ? [...draft.points, cursor] : draft.points;
      if (draft.closed) L.polygon(draft.points, style).addTo(draftLayer);
      else if (line.length > 1) L.polyline(line, style).addTo(draftLayer);
      for (const p of draft.points) L.circleMarker(p, { radius: 4, color: colors.draft, interactive: false }).addTo(draftLayer);
    } else {
      const radius = draft.radius ?? (cursor ? map.distance(draft.points[0], cursor) : 0);
      L.circleMarker(draft.points[0], { radius: 4, color: colors.draft, interactive: false }).addTo(draftLayer);
      if (radius > 0) L.circle(draft.points[0], { radius, ...style }).addTo(draftLayer);
    }
  }

  function onMouseMove(event) {
    const draft = state.draft;
    if (draft && !draft.closed && draft.radius === undefined) redrawDraft(event.latlng);
  }

  function circlePoint(latlng) {
    if (!state.draft) {
      state.draft = { kind: "circle", points: [latlng] };
      redrawDraft();
      return;
    }
    if (state.draft.radius !== undefined) return;
    state.draft.radius = Math.max(1, Math.round(map.distance(state.draft.points[0], latlng)));
    state.draft.closed = true;
    redrawDraft();
    openForm(`A circle of ${state.draft.radius} m.`);
  }

  function finishPolygon() {
    const draft = state.draft;
    if (!draft || draft.points.length < 3) return;
    draft.closed = true;
    redrawDraft();
    $("finish").disabled = true;
    openForm(`A polygon with ${draft.points.length} corners.`);
  }

  function openForm(description) {
    $("create-shape").textContent = description;
    $("create").hidden = false;
    $("create-name").focus();
  }

  // RFC 7946: a polygon's exterior ring is counterclockwise, first point repeated last.
  function ring(points) {
    const coordinates = points.map((p) => { const w = p.wrap(); return [Number(w.lng.toFixed(7)), Number(w.lat.toFixed(7))]; });
    let area = 0;
    for (let i = 0; i < coordinates.length; i++) {
      const [x1, y1] = coordinates[i], [x2, y2] = coordinates[(i + 1) % coordinates.length];
      area += x1 * y2 - x2 * y1;
    }
    if (area < 0) coordinates.reverse();
    return [...coordinates, coordinates[0]];
  }

  async function createBeacon(event) {
    event.preventDefault();
    const draft = state.draft;
    if (!draft || !draft.closed) return;
    const tags = $("create-tags").value.split(",").map((t) => t.trim()).filter((t) => t);
    const properties = { name: $("create-name").value.trim(), tags };
    const description = $("create-description").value.trim();
    if (description) properties.description = description;
    let feature;
    if (draft.kind === "polygon") {
      feature = { type: "Feature", geometry: { type: "Polygon", coordinates: [ring(draft.points)] }, properties };
    } else {
      const center = draft.points[0].wrap();
      properties.perimeter = { type: "Circle", radius_m: draft.radius };
      feature = { type: "Feature", geometry: { type: "Point", coordinates: [Number(center.lng.toFixed(7)), Number(center.lat.toFixed(7))] }, properties };
    }
    $("create-submit").disabled = true;
    try {
      const created = await api("POST", "/v1/beacons", feature);
      say(`Created ${created.properties.name} (${created.id})`);
      $("create").reset();
      clearDraft();
      await loadView();
    } catch (error) {
      fail(error);
    } finally {
      $("create-submit").disabled = false;
    }
  }

  // --- live events (GET /v1/events/stream, read with fetch so the token goes in a header) -----
  function showEvent(event) {
    if (state.seenEvents.has(event.id)) return;
    state.seenEvents.add(event.id);
    const data = event.data || {};
    const time = new Date(event.created_at).toLocaleTimeString();
    const what = data.name || data.beacon || data.group || data.meeting || "";
    const item = el("li", { "data-id": event.id, "data-type": event.type },
                    el("span", { class: "time", text: time }), " ", el("span", { class: "type", text: event.type }), " ",
                    el("span", { class: "what", text: what }));
    const list = $("events");
    list.prepend(item);
    while (list.children.length > MAX_EVENTS) list.lastElementChild.remove();
    if (state.me && event.recipient === state.me.id && data.beacon && !data.group) {
      if (event.type === "beacon.entered") state.inside.add(data.beacon);
      if (event.type === "beacon.exited") state.inside.delete(data.beacon);
      if (event.type === "beacon.entered" || event.type === "beacon.exited") showInside();
    }
    const where = data.location || data; // where it happened, when the event says
    if (typeof where.lat === "number" && typeof where.lon === "number") {
      const flash = L.circleMarker([where.lat, where.lon], { radius: 12, color: colors.draft, weight: 3, fill: false, interactive: false }).addTo(markLayer);
      setTimeout(() => markLayer.removeLayer(flash), 5000);
    }
    if (event.type.startsWith("beacon.") && !["beacon.entered", "beacon.exited", "beacon.dwelled"].includes(event.type)) scheduleView();
  }

  function setStreamState(text) { $("stream-state").textContent = text; }

  async function runStream() {
    const token = state.token;
    while (state.token === token) {
      const controller = new AbortController();
      state.stream = controller;
      try {
        const headers = { Authorization: `Bearer ${token}`, Accept: "text/event-stream" };
        if (state.lastEventId) headers["Last-Event-ID"] = state.lastEventId;
        const response = await fetch("/v1/events/stream", { headers, signal: controller.signal });
        if (response.status === 404 && state.lastEventId) { state.lastEventId = null; continue; } // resume point gone
        if (!response.ok) throw new Error(`events stream: ${response.status}`);
        setStreamState("live");
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += value.replace(/\r\n?/g, "\n");
          let end;
          while ((end = buffer.indexOf("\n\n")) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            onStreamBlock(block);
          }
        }
      } catch (error) {
        if (controller.signal.aborted) return;
      }
      if (state.token !== token) return;
      setStreamState("reconnecting…");
      await new Promise((resolve) => setTimeout(resolve, 2000));
    }
  }

  function onStreamBlock(block) {
    let id = null, data = [];
    for (const line of block.split("\n")) {
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (field === "id") id = value; else if (field === "data") data.push(value);
    }
    if (id) state.lastEventId = id;
    if (!data.length) return;
    try { showEvent(JSON.parse(data.join("\n"))); } catch { /* a malformed event is skipped */ }
  }

  // --- signing in and out --------------------------------------------------------------------
  async function signIn(token) {
    state.token = token;
    try {
      state.me = await api("GET", "/v1/me");
    } catch (error) {
      state.token = null;
      sessionStorage.removeItem("dbeacon.token");
      fail(error.status === 401 ? new Error("This token is not valid.") : error);
      return;
    }
    sessionStorage.setItem("dbeacon.token", token);
    $("login").hidden = true;
    $("who").hidden = false;
    $("who").textContent = state.me.admin ? "admin" : state.me.id;
    $("signout").hidden = false;
    $("intro").hidden = true;
    for (const id of ["tools", "view-section", "events-section"]) $(id).hidden = false;
    setMode("explore");
    await fitToBeacons();
    runStream();
  }

  // The first view shows the beacons the caller may see (the first page of them).
  async function fitToBeacons() {
    try {
      const page = await api("GET", `/v1/beacons?limit=${PAGE}`);
      // Where most of them are: outliers (the 10% furthest out on each axis) are left out of the fit.
      const lats = page.features.map((f) => f.geometry.coordinates[1]).sort((a, b) => a - b);
      const lons = page.features.map((f) => f.geometry.coordinates[0]).sort((a, b) => a - b);
      const cut = lats.length >= 10 ? Math.floor(lats.length * 0.1) : 0;
      if (lats.length) {
        const last = lats.length - 1 - cut;
        map.fitBounds(L.latLngBounds([lats[cut], lons[cut]], [lats[last], lons[last]]).pad(0.15), { maxZoom: 16 });
      }
    } catch (error) { fail(error); }
    await loadView();
  }

  function signOut() {
    state.token = null;
    state.me = null;
    if (state.stream) state.stream.abort();
    sessionStorage.removeItem("dbeacon.token");
    Object.assign(state, { lastEventId: null, walk: [], inside: new Set() });
    state.seenEvents.clear();
    state.trails.clear();
    for (const layer of [beaconLayer, trailLayer, markLayer, draftLayer, walkLayer]) layer.clearLayers();
    for (const id of ["beacons", "nearby", "events"]) $(id).replaceChildren();
    for (const id of ["tools", "create", "nearby-section", "walk-section", "view-section", "events-section", "who", "signout"]) $(id).hidden = true;
    $("login").hidden = false;
    $("intro").hidden = false;
  }

  async function start() {
    if (typeof L === "undefined") {
      $("intro").replaceChildren(el("p", { class: "error", text:
        "Leaflet is not installed on the server: install Debian's libjs-leaflet (apt-get install libjs-leaflet) and restart dbeacon serve." }));
      return;
    }
    try {
      state.config = await (await fetch("/console/config.json")).json();
    } catch {
      state.config = { tiles: null, attribution: "" };
    }
    setUpMap();
    $("login").addEventListener("submit", (event) => { event.preventDefault(); signIn($("token").value.trim()); });
    $("signout").addEventListener("click", signOut);
    for (const button of document.querySelectorAll(".modes button")) button.addEventListener("click", () => setMode(button.dataset.mode));
    $("finish").addEventListener("click", finishPolygon);
    $("cancel").addEventListener("click", clearDraft);
    $("create-cancel").addEventListener("click", clearDraft);
    $("create").addEventListener("submit", createBeacon);
    $("tag").addEventListener("change", () => loadView());
    const saved = sessionStorage.getItem("dbeacon.token");
    if (saved) await signIn(saved);
  }

  start();
})();
