#!/usr/bin/python3
"""What a desktop does to the app, for its tests: a tiny StatusNotifierWatcher, a
tray client, a reader of notification calls, a window manager's close (python3-gi).

  desktop.py watch             own org.kde.StatusNotifierWatcher on the session bus and
                           print "registered <epoch_ms> <bus name> <object path>"
                           for every item that registers (the tray icon), and
                           "unregistered <epoch_ms> <bus name> <object path>"
                           when the bus name that registered it goes away (as
                           a panel's watcher drops an item)
  desktop.py icon NAME PATH    print the item's IconName (appindicator: a PNG's path)
  desktop.py menu NAME PATH    print the item's menu: "<id>\t<toggle-state>\t<label>"
  desktop.py menu-shot NAME PATH FILE
                           draw the item's menu as a GTK panel shows a tray
                           menu (a Gtk.Menu of its dbusmenu layout: labels,
                           check marks, separators, disabled items; the icon
                           beside it) and save it as the PNG FILE; for the
                           book's picture of the menu
  desktop.py click NAME PATH ID
                           click menu item ID, as a panel does (dbusmenu Event)
  desktop.py notices LOG       read dbus-monitor's text (Notify and CloseNotification
                           calls and the method returns) and print one JSON line
                           per call: {"notify": id, "app", "replaces", "summary",
                           "body", "actions"} or {"close": id}
  desktop.py close-window XID
                           ask window XID to close (WM_DELETE_WINDOW), as a
                           window manager's close button does
  desktop.py messages-api PORTFILE COMMAND
                           a scripted Anthropic Messages API on 127.0.0.1 (its
                           port written to PORTFILE) for the real Claude Code:
                           the main conversation's first turn is one Bash call
                           running COMMAND, every later one the text "Done."; a
                           side request (titles, quota) gets a short text. SSE
                           when asked to stream. Each tool_result it is sent is
                           printed to stderr ("tool_result: <text>"), and each
                           distinct text a user message carries too ("user:
                           <text>", its newlines as \\n). An empty COMMAND: no
                           tool call, every main turn is "Done.". With
                           MESSAGES_API_REPLY_TO_MESSAGE set, a later turn
                           whose newest user message is no tool result (a
                           message put into the turn, e.g. by a Stop hook)
                           says that text instead of "Done."; with
                           MESSAGES_API_HEADERS naming a file, each answer to
                           /v1/messages carries the headers the file holds then
                           ("name: value" a line; the rate-limit headers a
                           test sets, read again for every answer); with
                           MESSAGES_API_SLOW set, a main turn whose newest
                           user text contains it streams its answer a word
                           every 2 s for a minute (a turn to stop midway);
                           with MESSAGES_API_TOOLS (a JSON list of {"name",
                           "input"}), the main conversation's first turns call
                           those tools, one a turn (COMMAND is then unused);
                           a main conversation whose newest user text asks
                           "[[write NAME]]" writes NAME with the Write tool in
                           the folder its system prompt names
  desktop.py chat-api PORTFILE COMMAND
                           a scripted OpenAI chat-completions API on 127.0.0.1
                           (for OpenCode): a conversation offering tools runs
                           COMMAND with its `bash` tool on its first turn, then
                           says "Done."; a request with no tools gets "OK"

Only what libayatana-appindicator needs of a watcher is here: it registers, a
host is said to be present, and the item list is kept.
"""
import json
import os
import re
import signal
import sys
import time

try:
    from gi.repository import Gio, GLib
except ImportError:  # messages-api needs no D-Bus; the rest say so in main()
    Gio = GLib = None

WATCHER_XML = """
<node>
  <interface name="org.kde.StatusNotifierWatcher">
    <method name="RegisterStatusNotifierItem"><arg type="s" direction="in"/></method>
    <method name="RegisterStatusNotifierHost"><arg type="s" direction="in"/></method>
    <property name="RegisteredStatusNotifierItems" type="as" access="read"/>
    <property name="IsStatusNotifierHostRegistered" type="b" access="read"/>
    <property name="ProtocolVersion" type="i" access="read"/>
    <signal name="StatusNotifierItemRegistered"><arg type="s"/></signal>
    <signal name="StatusNotifierItemUnregistered"><arg type="s"/></signal>
    <signal name="StatusNotifierHostRegistered"/>
  </interface>
</node>
"""


def watch():
    items = []
    node = Gio.DBusNodeInfo.new_for_xml(WATCHER_XML)

    def on_call(conn, sender, path, iface, method, params, invocation):
        if method == "RegisterStatusNotifierItem":
            arg = params.unpack()[0]
            # appindicator passes its object path; others pass a bus name.
            name, obj = (sender, arg) if arg.startswith("/") else (arg, "/StatusNotifierItem")
            if f"{name}{obj}" not in items:
                items.append(f"{name}{obj}")
            print(f"registered {int(time.time() * 1000)} {name} {obj}", flush=True)
            conn.emit_signal(None, "/StatusNotifierWatcher", "org.kde.StatusNotifierWatcher",
                             "StatusNotifierItemRegistered", GLib.Variant("(s)", (items[-1],)))
        invocation.return_value(None)

    def on_get(conn, sender, path, iface, prop):
        return {
            "RegisteredStatusNotifierItems": GLib.Variant("as", items),
            "IsStatusNotifierHostRegistered": GLib.Variant("b", True),
            "ProtocolVersion": GLib.Variant("i", 0),
        }[prop]

    def on_owner_changed(conn, sender, path, iface, signal, params):
        name, _old, new = params.unpack()
        if new:
            return
        for item in [i for i in items if i.startswith(name + "/")]:
            items.remove(item)
            print(f"unregistered {int(time.time() * 1000)} {name} {item[len(name):]}", flush=True)
            conn.emit_signal(None, "/StatusNotifierWatcher", "org.kde.StatusNotifierWatcher",
                             "StatusNotifierItemUnregistered", GLib.Variant("(s)", (item,)))

    def on_bus(conn, name):
        conn.register_object("/StatusNotifierWatcher", node.interfaces[0], on_call, on_get, None)
        conn.signal_subscribe("org.freedesktop.DBus", "org.freedesktop.DBus", "NameOwnerChanged",
                              "/org/freedesktop/DBus", None, Gio.DBusSignalFlags.NONE,
                              on_owner_changed)

    def on_name(conn, name):
        print("watching", flush=True)

    def on_lost(conn, name):
        print("cannot own org.kde.StatusNotifierWatcher", file=sys.stderr, flush=True)
        sys.exit(1)

    Gio.bus_own_name(Gio.BusType.SESSION, "org.kde.StatusNotifierWatcher",
                     Gio.BusNameOwnerFlags.NONE, on_bus, on_name, on_lost)
    GLib.MainLoop().run()


def bus():
    return Gio.bus_get_sync(Gio.BusType.SESSION, None)


def prop(name, path, iface, key):
    reply = bus().call_sync(name, path, "org.freedesktop.DBus.Properties", "Get",
                            GLib.Variant("(ss)", (iface, key)), None,
                            Gio.DBusCallFlags.NONE, 5000, None)
    return reply.unpack()[0]


def menu_path(name, path):
    return prop(name, path, "org.kde.StatusNotifierItem", "Menu")


def menu(name, path):
    reply = bus().call_sync(name, menu_path(name, path), "com.canonical.dbusmenu", "GetLayout",
                            GLib.Variant("(iias)", (0, -1, [])), None,
                            Gio.DBusCallFlags.NONE, 5000, None)
    _, layout = reply.unpack()

    def walk(node):
        ident, props, children = node
        if ident != 0 and props.get("type") != "separator":
            state = props.get("toggle-state", "")
            enabled = "" if props.get("enabled", True) else " (disabled)"
            print(f"{ident}\t{state}\t{props.get('label', '')}{enabled}")
        for child in children:
            walk(child)

    walk(layout)


def menu_shot(name, path, out):
    """The menu as a panel draws it, from the same layout `menu` prints."""
    import gi
    gi.require_version("Gtk", "3.0")
    gi.require_version("Gdk", "3.0")
    from gi.repository import Gdk, Gtk
    reply = bus().call_sync(name, menu_path(name, path), "com.canonical.dbusmenu", "GetLayout",
                            GLib.Variant("(iias)", (0, -1, [])), None,
                            Gio.DBusCallFlags.NONE, 5000, None)
    _, layout = reply.unpack()
    settings = Gtk.Settings.get_default()
    settings.set_property("gtk-font-name", "DejaVu Sans 10")
    settings.set_property("gtk-theme-name", "Adwaita")

    def build(node):
        shell = Gtk.Menu()
        for ident, props, children in node[2]:
            if not props.get("visible", True):
                continue
            if props.get("type") == "separator":
                item = Gtk.SeparatorMenuItem()
            elif props.get("toggle-type") == "checkmark":
                item = Gtk.CheckMenuItem.new_with_mnemonic(props.get("label", ""))
                item.set_active(props.get("toggle-state", 0) == 1)
            else:
                item = Gtk.MenuItem.new_with_mnemonic(props.get("label", ""))
            item.set_sensitive(props.get("enabled", True))
            if children:
                item.set_submenu(build((ident, props, children)))
            shell.append(item)
        return shell

    root = build(layout)
    root.show_all()
    # A panel pops the menu up under its icon; here at a fixed place on an
    # empty screen, then the menu's own window is read back.
    root.popup_at_rect(Gdk.get_default_root_window(), Gdk.Rectangle(), Gdk.Gravity.NORTH_WEST,
                       Gdk.Gravity.NORTH_WEST, None)
    done = {}

    def grab():
        window = root.get_toplevel().get_window()
        if window is None or not window.is_viewable():
            return True
        w, h = window.get_width(), window.get_height()
        pixbuf = Gdk.pixbuf_get_from_window(window, 0, 0, w, h)
        if pixbuf is None:
            return True
        pixbuf.savev(out, "png", [], [])
        done["size"] = (w, h)
        Gtk.main_quit()
        return False

    # Two frames after it is mapped, so it has drawn.
    GLib.timeout_add(400, grab)
    GLib.timeout_add(10000, Gtk.main_quit)
    Gtk.main()
    if "size" not in done:
        print("desktop.py: the menu never showed", file=sys.stderr)
        return 1
    print(f"{out}: {done['size'][0]}x{done['size'][1]}")
    return 0


def click(name, path, ident):
    bus().call_sync(name, menu_path(name, path), "com.canonical.dbusmenu", "Event",
                    GLib.Variant("(isvu)", (int(ident), "clicked", GLib.Variant("s", ""), 0)),
                    None, Gio.DBusCallFlags.NONE, 5000, None)


NOTIFY_ARGS = re.compile(
    r'\A   string "(?P<app>.*?)"\n   uint32 (?P<replaces>\d+)\n   string "(?P<icon>.*?)"\n'
    r'   string "(?P<summary>.*?)"\n   string "(?P<body>.*?)"\n   array \[\n(?P<actions>.*?)\n   \]\n',
    re.S)


def notices(log):
    text = open(log, encoding="utf-8", errors="replace").read()
    # A message starts at a header line; a string argument may span lines.
    blocks = re.split(r"\n(?=(?:method call|method return|signal|error) time=)", text)
    returns = {}
    calls = []
    for block in blocks:
        head, _, body = block.partition("\n")
        if head.startswith("method return"):
            m = re.search(r"-> destination=(\S+) serial=\d+ reply_serial=(\d+)", head)
            u = re.match(r"   uint32 (\d+)", body)
            if m and u:
                returns[(m.group(1), m.group(2))] = int(u.group(1))
        elif head.startswith("method call") and "interface=org.freedesktop.Notifications;" in head:
            m = re.search(r"sender=(\S+) .* serial=(\d+) .*member=(\w+)", head)
            if m:
                calls.append(((m.group(1), m.group(2)), m.group(3), body + "\n"))
    for key, member, body in calls:
        if member == "Notify":
            m = NOTIFY_ARGS.match(body)
            if not m:
                continue
            actions = re.findall(r'string "(.*?)"', m.group("actions"))
            print(json.dumps({"notify": returns.get(key), "app": m.group("app"),
                              "replaces": int(m.group("replaces")), "summary": m.group("summary"),
                              "body": m.group("body"), "actions": actions}))
        elif member == "CloseNotification":
            u = re.match(r"   uint32 (\d+)", body)
            if u:
                print(json.dumps({"close": int(u.group(1))}))


def close_window(xid):
    import ctypes

    x11 = ctypes.CDLL("libX11.so.6")
    x11.XOpenDisplay.restype = ctypes.c_void_p
    x11.XOpenDisplay.argtypes = [ctypes.c_char_p]
    x11.XInternAtom.restype = ctypes.c_ulong
    x11.XInternAtom.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
    x11.XSendEvent.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_int, ctypes.c_long,
                               ctypes.c_void_p]
    x11.XFlush.argtypes = [ctypes.c_void_p]
    x11.XCloseDisplay.argtypes = [ctypes.c_void_p]

    class ClientMessage(ctypes.Structure):
        _fields_ = [("type", ctypes.c_int), ("serial", ctypes.c_ulong),
                    ("send_event", ctypes.c_int), ("display", ctypes.c_void_p),
                    ("window", ctypes.c_ulong), ("message_type", ctypes.c_ulong),
                    ("format", ctypes.c_int), ("data", ctypes.c_long * 5)]

    class XEvent(ctypes.Union):
        _fields_ = [("xclient", ClientMessage), ("pad", ctypes.c_long * 24)]

    dpy = x11.XOpenDisplay(None)
    if not dpy:
        raise SystemExit("cannot open the display")
    ev = XEvent()
    ev.xclient.type = 33  # ClientMessage
    ev.xclient.window = xid
    ev.xclient.message_type = x11.XInternAtom(dpy, b"WM_PROTOCOLS", 0)
    ev.xclient.format = 32
    ev.xclient.data[0] = x11.XInternAtom(dpy, b"WM_DELETE_WINDOW", 0)
    ev.xclient.data[1] = 0  # CurrentTime
    x11.XSendEvent(dpy, xid, 0, 0, ctypes.byref(ev))
    x11.XFlush(dpy)
    x11.XCloseDisplay(dpy)


def serve_on_loopback(portfile, handler):
    """Serves `handler` on 127.0.0.1, its port written to PORTFILE (renamed
    into place, so a reader never sees half of it), until killed."""
    import http.server

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    with open(portfile + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(portfile + ".tmp", portfile)
    server.serve_forever()


def messages_api(portfile, command):
    import http.server
    import random
    import string

    def ident(prefix):
        return prefix + "".join(random.choices(string.ascii_letters + string.digits, k=24))

    to_message = os.environ.get("MESSAGES_API_REPLY_TO_MESSAGE") or ""
    # The main conversation's first turns, one tool call each, in order: a
    # JSON list of {"name", "input"} (instead of the one Bash `command`).
    tools = json.loads(os.environ.get("MESSAGES_API_TOOLS") or "[]")
    slow_when = os.environ.get("MESSAGES_API_SLOW") or ""
    headers_file = os.environ.get("MESSAGES_API_HEADERS") or ""

    def extra_headers():
        if not headers_file or not os.path.exists(headers_file):
            return []
        with open(headers_file, encoding="utf-8") as f:
            pairs = [line.partition(":") for line in f]
        return [(name.strip(), value.strip()) for name, sep, value in pairs if sep and name.strip()]

    def strings_in(v):
        if isinstance(v, str):
            yield v
        elif isinstance(v, dict):
            for x in v.values():
                yield from strings_in(x)
        elif isinstance(v, list):
            for x in v:
                yield from strings_in(x)

    def blocks_of(body):
        # The main conversation offers tools and is not a subagent's.
        messages = body.get("messages") or []
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        # A main conversation asked to `[[write NAME]]` writes NAME in the
        # folder Claude Code says it works in (its system prompt's).
        asked = re.search(r"\[\[write ([\w.-]+)\]\]", newest_text(body))
        folder = next((m.group(1) for t in strings_in(body)
                       for m in [re.search(r"Primary working directory: (\S+)", t)] if m), None)
        if body.get("tools") and turn == 0 and asked and folder:
            path = os.path.join(folder, asked.group(1))
            return [{"type": "tool_use", "id": ident("toolu_"), "name": "Write",
                     "input": {"file_path": path, "content": "written by the model\n"}}]
        if body.get("tools") and turn < len(tools):
            call = tools[turn]
            return [{"type": "tool_use", "id": ident("toolu_"), "name": call["name"],
                     "input": call["input"]}]
        if body.get("tools") and turn == 0 and command:
            return [{"type": "tool_use", "id": ident("toolu_"), "name": "Bash",
                     "input": {"command": command, "description": f"Run {command}"}}]
        if body.get("tools"):
            newest = messages[-1].get("content") if messages else None
            answered_tool = isinstance(newest, list) and any(
                isinstance(b, dict) and b.get("type") == "tool_result" for b in newest)
            if to_message and not answered_tool:
                return [{"type": "text", "text": to_message}]
            return [{"type": "text", "text": "Done."}]
        system = json.dumps(body.get("system", ""))
        return [{"type": "text",
                 "text": json.dumps({"title": "Mock session"}) if "json" in system.lower() else "OK"}]

    def newest_text(body):
        # The newest user message (this build puts a system one after it).
        users = [m for m in body.get("messages") or [] if m.get("role") == "user"]
        content = users[-1].get("content") if users else None
        if isinstance(content, str):
            return content
        return " ".join(b.get("text", "") for b in content or [] if isinstance(b, dict))

    users_seen = set()

    def print_users(messages):
        for m in messages:
            if m.get("role") != "user":
                continue
            content = m.get("content")
            texts = [content] if isinstance(content, str) else [
                b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
            ] if isinstance(content, list) else []
            for text in texts:
                if text and text not in users_seen:
                    users_seen.add(text)
                    print("user: " + text.replace("\n", "\\n"), file=sys.stderr, flush=True)

    def usage(out):
        return {"input_tokens": 10, "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0, "output_tokens": out}

    def sse(blocks, model, mid):
        stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        events = [("message_start", {"type": "message_start", "message": {
            "id": mid, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": usage(1)}})]
        for i, b in enumerate(blocks):
            if b["type"] == "tool_use":
                start = {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(b["input"])}
            else:
                start = {"type": "text", "text": ""}
                delta = {"type": "text_delta", "text": b["text"]}
            events += [("content_block_start", {"type": "content_block_start", "index": i,
                                                "content_block": start}),
                       ("content_block_delta", {"type": "content_block_delta", "index": i,
                                                "delta": delta}),
                       ("content_block_stop", {"type": "content_block_stop", "index": i})]
        events += [("message_delta", {"type": "message_delta",
                                      "delta": {"stop_reason": stop, "stop_sequence": None},
                                      "usage": {"output_tokens": 5}}),
                   ("message_stop", {"type": "message_stop"})]
        return "".join(f"event: {n}\ndata: {json.dumps(d)}\n\n" for n, d in events).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def answer(self, status, ctype, data, headers=()):
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("request-id", ident("req_"))
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def slowly(self, model, mid):
            """A text answer streamed a word every 2 s; a client that goes
            (an interrupt) ends it."""
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.send_header("request-id", ident("req_"))
            self.end_headers()
            self.close_connection = True
            first = [("message_start", {"type": "message_start", "message": {
                "id": mid, "type": "message", "role": "assistant", "model": model, "content": [],
                "stop_reason": None, "stop_sequence": None, "usage": usage(1)}}),
                ("content_block_start", {"type": "content_block_start", "index": 0,
                                         "content_block": {"type": "text", "text": ""}})]
            words = [("content_block_delta", {"type": "content_block_delta", "index": 0,
                                              "delta": {"type": "text_delta", "text": f"step{i} "}})
                     for i in range(30)]
            last = [("content_block_stop", {"type": "content_block_stop", "index": 0}),
                    ("message_delta", {"type": "message_delta",
                                       "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                       "usage": {"output_tokens": 30}}),
                    ("message_stop", {"type": "message_stop"})]
            try:
                for i, (n, d) in enumerate(first + words + last):
                    self.wfile.write(f"event: {n}\ndata: {json.dumps(d)}\n\n".encode())
                    self.wfile.flush()
                    if n == "content_block_delta":
                        time.sleep(2)
            except OSError:
                print("slow answer: the client went", file=sys.stderr, flush=True)

        def do_GET(self):
            self.answer(404, "application/json", b'{"type":"error","error":{"type":"not_found_error","message":"no route"}}')

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            path = self.path.split("?")[0].rstrip("/")
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {}
            if path == "/v1/messages/count_tokens":
                return self.answer(200, "application/json", b'{"input_tokens": 10}')
            if path != "/v1/messages":
                return self.do_GET()
            for m in body.get("messages") or []:
                content = m.get("content")
                for b in content if isinstance(content, list) else []:
                    if isinstance(b, dict) and b.get("type") == "tool_result":
                        text = b.get("content")
                        if isinstance(text, list):
                            text = " ".join(str(x.get("text", "")) for x in text if isinstance(x, dict))
                        print(f"tool_result: {text}", file=sys.stderr, flush=True)
            if body.get("tools") and not self.headers.get("x-claude-code-agent-id"):
                print_users(body.get("messages") or [])
            if self.headers.get("x-claude-code-agent-id"):
                body = dict(body, tools=None)
            blocks = blocks_of(body)
            model = body.get("model") or "claude-mock"
            mid = ident("msg_")
            if body.get("stream") and body.get("tools") and slow_when and slow_when in newest_text(body):
                return self.slowly(model, mid)
            if body.get("stream"):
                return self.answer(200, "text/event-stream", sse(blocks, model, mid), extra_headers())
            stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
            whole = {"id": mid, "type": "message", "role": "assistant", "model": model,
                     "content": blocks, "stop_reason": stop, "stop_sequence": None,
                     "usage": usage(5)}
            self.answer(200, "application/json", json.dumps(whole).encode(), extra_headers())

    serve_on_loopback(portfile, Handler)


def chat_api(portfile, command):
    """A scripted OpenAI chat-completions API (for OpenCode): a conversation
    that offers tools runs COMMAND with its `bash` tool on its first turn and
    says "Done." after; a request with no tools (a title) gets "OK". SSE when
    asked to stream."""
    import http.server
    import random
    import string

    def ident(prefix):
        return prefix + "".join(random.choices(string.ascii_letters + string.digits, k=24))

    def chunk(cid, model, delta, finish=None):
        return {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()),
                "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def answer(self, status, ctype, data):
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path.rstrip("/").endswith("/models"):
                body = {"object": "list", "data": [{"id": "mock-model", "object": "model"}]}
                return self.answer(200, "application/json", json.dumps(body).encode())
            self.answer(404, "application/json", b'{"error": {"message": "no route"}}')

        def do_POST(self):
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if not self.path.rstrip("/").endswith("/chat/completions"):
                return self.do_GET()
            body = json.loads(raw or b"{}")
            messages = body.get("messages") or []
            turn = sum(1 for m in messages if m.get("role") == "assistant")
            model = body.get("model") or "mock-model"
            cid = ident("chatcmpl-")
            if body.get("tools") and turn == 0 and command:
                args = json.dumps({"command": command, "description": f"Run {command}"})
                call = {"index": 0, "id": ident("call_"), "type": "function",
                        "function": {"name": "bash", "arguments": args}}
                deltas, finish, message = [{"role": "assistant", "tool_calls": [call]}], "tool_calls", \
                    {"role": "assistant", "content": None, "tool_calls": [call]}
                print(f"tool call: {command}", file=sys.stderr, flush=True)
            else:
                text = "Done." if body.get("tools") else "OK"
                deltas, finish, message = [{"role": "assistant", "content": text}], "stop", \
                    {"role": "assistant", "content": text}
            usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
            if body.get("stream"):
                frames = [chunk(cid, model, d) for d in deltas] + [chunk(cid, model, {}, finish)]
                frames.append({"id": cid, "object": "chat.completion.chunk", "model": model,
                               "choices": [], "usage": usage})
                data = "".join(f"data: {json.dumps(f)}\n\n" for f in frames) + "data: [DONE]\n\n"
                return self.answer(200, "text/event-stream", data.encode())
            whole = {"id": cid, "object": "chat.completion", "created": int(time.time()), "model": model,
                     "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage}
            self.answer(200, "application/json", json.dumps(whole).encode())

    serve_on_loopback(portfile, Handler)


def main(argv):
    cmd = argv[1] if len(argv) > 1 else ""
    if cmd not in ("messages-api", "chat-api", "notices") and Gio is None:
        print("desktop.py: python3-gi is missing (apt: python3-gi)", file=sys.stderr)
        return 1
    if cmd == "watch":
        watch()
    elif cmd == "icon" and len(argv) == 4:
        print(prop(argv[2], argv[3], "org.kde.StatusNotifierItem", "IconName"))
    elif cmd == "menu" and len(argv) == 4:
        menu(argv[2], argv[3])
    elif cmd == "menu-shot" and len(argv) == 5:
        return menu_shot(argv[2], argv[3], argv[4])
    elif cmd == "click" and len(argv) == 5:
        click(argv[2], argv[3], argv[4])
    elif cmd == "notices" and len(argv) == 3:
        notices(argv[2])
    elif cmd == "close-window" and len(argv) == 3:
        close_window(int(argv[2], 0))
    elif cmd == "messages-api" and len(argv) == 4:
        messages_api(argv[2], argv[3])
    elif cmd == "chat-api" and len(argv) == 4:
        chat_api(argv[2], argv[3])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main(sys.argv))
