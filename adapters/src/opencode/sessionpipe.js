// sessionpipe's plugin for OpenCode. `sessionpipe install` writes this file and
// `sessionpipe uninstall` removes it; edits to it are not kept.
//
// What it owns: handing the OpenCode bus events sessionpipe maps (a session
// created or deleted, a user message, a tool's start and end, a permission asked,
// a session gone idle or failed) to the local sessionpipe daemon, each with the folder and
// the address of OpenCode's own server it was given, and nothing else. Every
// other event is passed over by a lookup of its type, before anything else runs.
//
// How, and why this way. Each event becomes one job file in sessionpipe's spool,
// in the format `sessionpipe-hook` writes (the payload, a newline, one JSON line
// naming the harness, the event and the call, a newline), written to a hidden
// temp file, 0600, and renamed into place, synchronously, before the handler
// returns: an OpenCode that exits the moment its turn ends (`opencode run`) has
// its last event on disk, whether or not a daemon runs. Only then is the daemon
// told, by connecting to its stream wake socket (a Unix stream socket, 0600; Bun
// and Node cannot send the datagram the hook sends): a connection the daemon
// accepts is a wake. The connection carries no event, so a daemon that dies
// before reading it loses nothing: the job is in the spool for the next one. When
// no daemon answers, a drain worker (`sessionpipe daemon --drain`) is started,
// detached, as the hook does, so nothing waits while the app is closed. One
// connection at a time: a job written while one is on its way asks for one more
// after it, so every job has a connection made after it was written, and a
// daemon that stops accepting (it removes its socket before its last drain) has
// either taken the job or left it to the worker started instead.
//
// What it must not do: throw into OpenCode, wait for anything, print, or change
// what OpenCode does (every path is caught; the handlers return at once and
// resolve to nothing). It never reads the network, sends nothing anywhere but
// the state directory, and reads no credential.

import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { spawn } from "node:child_process";

// The `sessionpipe` program that drains the spool when no daemon runs; the
// installer writes its absolute path here.
const SESSIONPIPE = null;

const HARNESS = "opencode";
// The job format's version (the spool's).
const FORMAT = 1;
// The environment the daemon reads; the rest of OpenCode's never leaves.
// `SESSIONPIPE_CONTROL_SESSION` is set on an `opencode acp` the daemon started
// for a control `start`: its events go under the start's name.
const ENV_KEPT = ["HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "SESSIONPIPE_CONTROL_SESSION"];
// The bus events mapped; `message.updated` only for a user message, once.
const BUS = new Set([
  "session.created",
  "session.idle",
  "session.deleted",
  "session.error",
  "permission.asked",
]);
// A drain worker started this recently is still on its way: no second one.
const WORKER_GAP_MS = 250;
// User messages already handed over (OpenCode updates one several times).
const SEEN_MAX = 4096;

// The state directory, by sessionpipe's own rule: `$SESSIONPIPE_STATE_DIR`,
// else the platform's state dir.
function stateDir() {
  const v = (k) => (process.env[k] ? process.env[k] : null);
  if (v("SESSIONPIPE_STATE_DIR")) return v("SESSIONPIPE_STATE_DIR");
  if (process.platform === "win32") {
    return v("LOCALAPPDATA") && path.join(v("LOCALAPPDATA"), "sessionpipe");
  }
  const home = v("HOME");
  if (process.platform === "darwin") {
    return home && path.join(home, "Library", "Application Support", "sessionpipe");
  }
  const xdg = v("XDG_STATE_HOME");
  if (xdg && path.isAbsolute(xdg)) return path.join(xdg, "sessionpipe");
  return home && path.join(home, ".local", "state", "sessionpipe");
}

function plugin(directory, server) {
  const state = stateDir();
  const spool = state && path.join(state, "spool");
  const wakeSocket = state && path.join(state, "wake-stream.sock");
  const seen = new Set();
  const env = {};
  for (const k of ENV_KEPT) if (process.env[k]) env[k] = process.env[k];
  const envJson = JSON.stringify(env);
  let lastNs = 0n;
  let waking = false;
  let again = false;
  let workerAt = 0;

  // Epoch nanoseconds, strictly increasing in this process: file names sort
  // in the order the events came.
  function nowNs() {
    let ns = BigInt(Math.round((performance.timeOrigin + performance.now()) * 1e6));
    if (ns <= lastNs) ns = lastNs + 1n;
    lastNs = ns;
    return ns;
  }

  function write(event, payload) {
    const ns = nowNs();
    const name = `${ns.toString().padStart(20, "0")}-${String(process.pid).padStart(10, "0")}.job`;
    const body = Buffer.from(JSON.stringify(payload), "utf8");
    const trailer =
      `\n{"v":${FORMAT},"harness":"${HARNESS}","event":${JSON.stringify(event)}` +
      `,"argv":${JSON.stringify([HARNESS, event])},"cwd":${JSON.stringify(process.cwd())}` +
      `,"pid":${process.pid},"ppid":${process.ppid},"at_ns":${ns},"len":${body.length}` +
      `,"dropped":0,"env":${envJson}}\n`;
    const bytes = Buffer.concat([body, Buffer.from(trailer, "utf8")]);
    const tmp = path.join(spool, `.tmp-${name}`);
    try {
      fs.writeFileSync(tmp, bytes, { mode: 0o600, flag: "wx" });
    } catch (e) {
      if (!e || e.code !== "ENOENT") throw e;
      fs.mkdirSync(spool, { recursive: true, mode: 0o700 });
      fs.writeFileSync(tmp, bytes, { mode: 0o600, flag: "wx" });
    }
    try {
      fs.renameSync(tmp, path.join(spool, name));
    } catch (e) {
      try {
        fs.unlinkSync(tmp);
      } catch {}
      throw e;
    }
  }

  // Says when the call was lost (a full disk, an unwritable state dir), the
  // way the hook does: the two markers' times, which need no free space.
  function lost() {
    try {
      const now = new Date();
      const first = path.join(state, "lost-first");
      const last = path.join(state, "lost-last");
      let firstSet = false;
      try {
        firstSet = fs.statSync(first).mtimeMs > 0;
      } catch {}
      for (const p of firstSet ? [last] : [first, last]) {
        fs.closeSync(fs.openSync(p, "a", 0o600));
        fs.utimesSync(p, now, now);
      }
    } catch {}
  }

  function startWorker() {
    const now = Date.now();
    if (now - workerAt < WORKER_GAP_MS) return;
    workerAt = now;
    const bin = process.env.SESSIONPIPE_BIN || SESSIONPIPE;
    if (!bin) return;
    try {
      const child = spawn(bin, ["daemon", "--drain"], {
        detached: true,
        stdio: "ignore",
        env: { ...process.env, SESSIONPIPE_STATE_DIR: state },
      });
      child.on("error", () => {});
      child.unref();
    } catch {}
  }

  // One connection to the daemon's wake socket; another after it when a job
  // came in meanwhile.
  function wake() {
    if (process.platform === "win32") return; // the daemon lists the spool on a timer there
    if (waking) {
      again = true;
      return;
    }
    if (!fs.existsSync(wakeSocket)) {
      startWorker();
      return;
    }
    waking = true;
    again = false;
    let done = false;
    let sock;
    const finish = (answered) => {
      if (done) return;
      done = true;
      try {
        sock.destroy();
      } catch {}
      if (!answered) startWorker();
      waking = false;
      if (again) wake();
    };
    try {
      sock = net.createConnection(wakeSocket);
      sock.on("connect", () => finish(true));
      sock.on("error", () => finish(false));
      sock.unref();
    } catch {
      finish(false);
    }
  }

  function hand(event, payload) {
    if (!spool) return;
    try {
      write(event, payload);
    } catch {
      lost();
      return;
    }
    try {
      wake();
    } catch {}
  }

  return {
    event: async ({ event }) => {
      try {
        const type = event && event.type;
        if (BUS.has(type)) {
          hand(type, { type, directory, server, properties: event.properties });
        } else if (type === "message.updated") {
          const info = event.properties && event.properties.info;
          if (!info || info.role !== "user" || seen.has(info.id)) return;
          if (seen.size >= SEEN_MAX) seen.clear();
          seen.add(info.id);
          hand(type, { type, directory, server, properties: event.properties });
        }
      } catch {}
    },
    "tool.execute.before": async (input, output) => {
      try {
        const type = "tool.execute.before";
        hand(type, { type, directory, server, input, args: output && output.args });
      } catch {}
    },
    "tool.execute.after": async (input, output) => {
      try {
        const type = "tool.execute.after";
        const o = output || {};
        const meta = o.metadata || {};
        hand(type, {
          type,
          directory,
          server,
          input,
          title: o.title,
          exit: meta.exit,
          truncated: meta.truncated,
          output: o.output,
        });
      } catch {}
    },
  };
}

export const SessionpipePlugin = async (ctx) => {
  try {
    // Where OpenCode's own server is (control's `api` rung): a placeholder
    // where it listens nowhere, which the adapter knows.
    const server = ctx && ctx.serverUrl ? String(ctx.serverUrl) : undefined;
    return plugin(ctx && ctx.directory, server);
  } catch {
    return {};
  }
};
