// sessionpipe's service worker: shows the receiver's pushes as notifications,
// and on a tap opens the page at the session. It never signs anything: an
// Allow or Deny tapped on a notification opens the page, which asks the person
// to confirm it there with one more tap (and their passkey, when needed).

self.addEventListener("install", () => {
  self.skipWaiting();
});

self.addEventListener("activate", (event) => {
  event.waitUntil(self.clients.claim());
});

self.addEventListener("push", (event) => {
  let payload = {};
  try {
    payload = event.data ? event.data.json() : {};
  } catch {
    payload = { title: "sessionpipe", body: event.data ? event.data.text() : "" };
  }
  if (typeof payload !== "object" || payload === null) payload = {};
  const title = typeof payload.title === "string" && payload.title !== "" ? payload.title : "An agent needs you";
  const options = {
    body: typeof payload.body === "string" ? payload.body : "",
    data: payload,
  };
  if (typeof payload.attention === "string" && payload.attention !== "") options.tag = payload.attention;
  if (Array.isArray(payload.actions)) {
    const actions = payload.actions
      .filter((a) => a === "allow" || a === "deny")
      .map((a) => ({ action: a, title: a === "allow" ? "Allow" : "Deny" }));
    if (actions.length > 0) options.actions = actions;
  }
  event.waitUntil(self.registration.showNotification(title, options));
});

// The browser replaced the push subscription (its keys expired or were
// rotated): subscribe again with the same server key and tell the receiver,
// which moves the old one's tier to the new one. Signed-out or offline, the
// page subscribes again the next time the person opens its settings.
self.addEventListener("pushsubscriptionchange", (event) => {
  event.waitUntil(
    (async () => {
      const old = event.oldSubscription ?? null;
      let fresh = event.newSubscription ?? null;
      const key = old?.options?.applicationServerKey ?? null;
      if (fresh === null && key !== null) {
        fresh = await self.registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key });
      }
      if (fresh === null) return;
      await fetch("/app/api/push", {
        method: "POST",
        credentials: "same-origin",
        headers: { "content-type": "application/json", "x-sessionpipe-page": "1" },
        body: JSON.stringify({ subscription: fresh.toJSON(), replaces: old?.endpoint ?? null }),
      });
    })().catch(() => {}),
  );
});

/** The page's address for a notification (and the action tapped, if any). */
function target(payload, action) {
  if (!payload || typeof payload.session !== "string" || payload.session === "") return "/";
  let url = "/#session=" + encodeURIComponent(payload.session).replace(/%3A/gi, ":");
  if ((action === "allow" || action === "deny") && typeof payload.attention === "string" && payload.attention !== "") {
    url += "&answer=" + action + "&attention=" + encodeURIComponent(payload.attention);
  }
  return url;
}

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  const url = target(event.notification.data, event.action);
  event.waitUntil(
    (async () => {
      const windows = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
      for (const client of windows) {
        if (new URL(client.url).origin !== self.location.origin) continue;
        // An open page goes to the session itself (main.ts listens).
        client.postMessage({ type: "sessionpipe.open", url });
        if ("focus" in client) await client.focus();
        return;
      }
      await self.clients.openWindow(url);
    })(),
  );
});
